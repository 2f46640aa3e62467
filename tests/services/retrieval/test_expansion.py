from __future__ import annotations

from carrag.services.models import ScoredChunk, StoredChunk
from carrag.services.retrieval.expansion import build_passages, stitch, windows_in_hand

TEXT = "".join(f"Sentence number {i:02d} of the document. " for i in range(40))


def chunk(index: int, start: int, end: int, document_id: str = "d") -> StoredChunk:
    return StoredChunk(document_id, index, TEXT[start:end], start, end, "f.txt", "f.txt", [])


# chunks of 200 characters overlapping by 50, like CHUNK_SIZE=200, CHUNK_OVERLAP=50
CHUNKS = [chunk(i, i * 150, i * 150 + 200) for i in range(8)]


def test_stitch_drops_shared_overlap() -> None:
    merged = stitch(CHUNKS[2:5])
    assert merged == TEXT[300:800], "the merged text is the original span, overlap once"


def test_stitch_handles_gaps_and_contained_chunks() -> None:
    assert stitch([chunk(0, 0, 100), chunk(1, 102, 200)]) == TEXT[0:100] + "\n" + TEXT[102:200]
    assert stitch([chunk(0, 0, 200), chunk(1, 50, 150)]) == TEXT[0:200]


def test_adjacent_winners_share_one_passage() -> None:
    winners = [CHUNKS[2], CHUNKS[7], CHUNKS[3]]  # windows 1–3, 6–8 and 2–4
    passages = build_passages(winners, CHUNKS, radius=1)
    assert len(passages) == 2
    first, second = passages
    assert first.winners == [0, 2] and (first.first_index, first.last_index) == (1, 4)
    assert first.text == TEXT[150:800]
    assert second.winners == [1] and [c.chunk_index for c in second.chunks] == [6, 7]


def test_touching_windows_merge_too() -> None:
    passages = build_passages([CHUNKS[1], CHUNKS[4]], CHUNKS, radius=1)  # windows 0–2 and 3–5
    assert len(passages) == 1 and passages[0].text == TEXT[0:950]


def test_windows_clip_at_document_edges() -> None:
    passages = build_passages([CHUNKS[0]], CHUNKS[:2], radius=1)
    assert [c.chunk_index for c in passages[0].chunks] == [0, 1]


def test_other_documents_are_not_merged() -> None:
    other = chunk(3, 450, 650, document_id="e")
    passages = build_passages([CHUNKS[3], other], [*CHUNKS, other], radius=1)
    assert len(passages) == 2


def test_transitive_merges() -> None:
    # 1 and 5 are far apart; 3 joins both windows together
    passages = build_passages([CHUNKS[1], CHUNKS[5], CHUNKS[3]], CHUNKS, radius=1)
    assert len(passages) == 1 and passages[0].winners == [0, 1, 2]
    assert passages[0].text == TEXT[0:1100]


def test_no_chunk_lands_in_two_passages_when_merges_chain() -> None:
    """Winners 10, 20, 15, 13, 17 with radius 1: 13 joins 10's window, 17 joins 20's, and the
    single folding pass used to leave chunk 16 in both 9–16 and 16–21."""
    chunks = [chunk(i, i * 150, i * 150 + 200) for i in range(24)]
    by_index = {c.chunk_index: c for c in chunks}
    winners = [by_index[i] for i in (10, 20, 15, 13, 17)]
    passages = build_passages(winners, chunks, radius=1)
    indexes = [c.chunk_index for p in passages for c in p.chunks]
    assert len(indexes) == len(set(indexes)), f"a chunk repeats across passages: {sorted(indexes)}"
    assert [(p.first_index, p.last_index) for p in passages] == [(9, 21)]
    assert passages[0].winners == [0, 1, 2, 3, 4]


def test_windows_read_with_the_hits_are_used_and_the_rest_asked_for() -> None:
    found = {
        CHUNKS[2].key: ScoredChunk(
            CHUNKS[2], 1.0, neighbour_radius=2, neighbours=tuple(CHUNKS[i] for i in (0, 1, 3, 4))
        ),
        CHUNKS[5].key: ScoredChunk(CHUNKS[5], 0.9),  # read without neighbours
        CHUNKS[7].key: ScoredChunk(CHUNKS[7], 0.8, neighbour_radius=0),  # a window too narrow
    }
    winners = [CHUNKS[2], CHUNKS[5], CHUNKS[7], chunk(0, 0, 10, document_id="elsewhere")]
    neighbours, missing = windows_in_hand(winners, found, radius=1)
    assert [c.key for c in neighbours] == [CHUNKS[1].key, CHUNKS[3].key], "only the chunks within the radius asked"
    assert missing == [CHUNKS[5].key, CHUNKS[7].key, ("elsewhere", 0)]
