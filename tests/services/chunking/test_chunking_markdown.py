from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from carrag.services.chunking.markdown import chunk_markdown, find_headers, section_spans
from tests.services.chunking.chunk_checks import assert_chunk_invariants

HANDBOOK = """Welcome text before any header.

# Install

## Linux

Run the installer.

```bash
# a comment in a fence, not a header
~~~
```

## Windows ##

Use the MSI package.

#hashtag is not a header, ####### neither.

# Usage
Start it.
"""


def test_header_paths_and_fences() -> None:
    assert [(h.level, h.title) for h in find_headers(HANDBOOK)] == [
        (1, "Install"),
        (2, "Linux"),
        (2, "Windows"),
        (1, "Usage"),
    ]
    chunks = chunk_markdown(HANDBOOK, 500, 50)
    assert_chunk_invariants(HANDBOOK, chunks, 500)
    assert [(c.section, c.text.splitlines()[0]) for c in chunks] == [
        (None, "Welcome text before any header."),
        ("Install > Linux", "# Install"),  # the header-only parent travels with its first child
        ("Install > Windows", "## Windows ##"),
        ("Usage", "# Usage"),
    ]
    assert "# a comment in a fence" in chunks[1].text


def test_header_only_section_followed_by_a_sibling_stays_alone() -> None:
    text = "## Empty\n\n## Full\nBody text."
    assert [(span, path) for span, path in section_spans(text)] == [((0, 10), "Empty"), ((10, 28), "Full")]


def test_unclosed_and_tilde_fences_hide_headers() -> None:
    text = "~~~~\n# not\n~~~\n# still not\n~~~~\n# yes\n```\n# never closed\n"
    assert [h.title for h in find_headers(text)] == ["yes"]


def test_pieces_holding_only_parent_headers_keep_the_parent_path() -> None:
    text = "# Install\n\n## Linux\n\n" + "Run the installer and follow it. " * 5
    chunks = chunk_markdown(text, 40, 0)
    assert_chunk_invariants(text, chunks, 40)
    assert (chunks[0].text, chunks[0].section) == ("# Install\n\n## Linux", "Install > Linux")
    assert {c.section for c in chunks} == {"Install > Linux"}
    tiny = chunk_markdown("# A\n\n## B\n\n### C\n\nbody", 8, 0)
    assert [(c.text, c.section) for c in tiny] == [
        ("# A", "A"),
        ("## B", "A > B"),
        ("### C", "A > B > C"),
        ("body", "A > B > C"),
    ]


def test_long_section_is_split_and_every_piece_keeps_the_path() -> None:
    body = "The range in eco mode is about one hundred and twenty kilometres. " * 20
    text = f"# Riding\n\n## Assistance levels\n\n{body}\n# Storage\nIndoors."
    chunks = chunk_markdown(text, 300, 60)
    assert_chunk_invariants(text, chunks, 300)
    riding = [c for c in chunks if c.section == "Riding > Assistance levels"]
    assert len(riding) >= 5 and chunks[-1].section == "Storage"
    for previous, current in zip(riding, riding[1:]):
        assert current.char_start < previous.char_end, "overlap inside a section"
    assert chunks[-1].char_start == text.index("# Storage"), "no overlap across sections"


def test_closing_hashes_and_empty_titles() -> None:
    headers = find_headers("# Title #\n##\n### C# tips\n   #### Indented ####   \n    # code block\n")
    assert [(h.level, h.title) for h in headers] == [(1, "Title"), (2, ""), (3, "C# tips"), (4, "Indented")]


# --- property: sections follow the document structure -------------------------------------------
words = st.sampled_from(["brake", "pad", "chain", "oil", "tyre", "wheel.", "Check it!", "ok?"])
bodies = st.lists(
    st.one_of(
        st.lists(words, min_size=1, max_size=30).map(" ".join),
        st.just("```\n# fenced, not a header\n```"),
        st.just(""),
    ),
    max_size=3,
).map("\n\n".join)
sections = st.lists(
    st.tuples(st.integers(min_value=1, max_value=6), st.sampled_from(["Intro", "Setup", "Brakes", "Chain"]), bodies),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(sections=sections, size=st.integers(min_value=30, max_value=300), overlap_ratio=st.floats(0, 0.5))
def test_chunks_never_straddle_sections_and_carry_their_path(sections, size: int, overlap_ratio: float) -> None:
    text, starts, paths, has_body = "", [], [], []
    stack: list[tuple[int, str]] = []
    for level, title, body in sections:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append(len(text))
        paths.append(" > ".join(t for _, t in stack))
        has_body.append(bool(body.strip()))
        text += "#" * level + " " + title + "\n\n" + body + "\n\n"

    chunks = chunk_markdown(text, size, int(size * overlap_ratio))
    assert_chunk_invariants(text, chunks, size)

    def section_at(offset: int) -> int:
        return max(i for i, start in enumerate(starts) if start <= offset)

    for chunk in chunks:
        last = section_at(chunk.char_end - 1)
        assert chunk.section == paths[last]
        for index in range(section_at(chunk.char_start), last):
            # a chunk only reaches past a section that has no body of its own (a parent header)
            assert not has_body[index] and sections[index + 1][0] > sections[index][0]


def test_section_paths_are_the_headings_words_without_inline_markup() -> None:
    text = "# The _Black_ code style\n\nIntro.\n\n## `--line-length` and **more**\n\nBody text."
    assert [c.section for c in chunk_markdown(text, 500, 0)] == [
        "The Black code style",
        "The Black code style > --line-length and more",
    ]
