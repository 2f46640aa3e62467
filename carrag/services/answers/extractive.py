"""The extractive answer: the best one to three sentences (or table rows) of the retrieved
passages, each followed by its ``[Source n]`` citation, and the offsets of what was quoted.

The best sentence by ``ScoredPassages.strength`` wins (its score, discounted for sentences that
only echo the question: headings, header rows, title lines); up to two more join it when they are
close to it (``COMPANION_RATIO``). A sentence ending in a colon brings the one it announces; one answering "who" with "she" the
sentence before it, which names her. Sentences from one passage keep their document order; from several passages
they are grouped by source, best source first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from carrag.services.answers.context import clean_for_model
from carrag.services.answers.focus import answering_sentence, names_by_antecedent, new_names, ranked_candidates
from carrag.services.answers.question_types import expects_person
from carrag.services.answers.scoring import ScoredPassages, ScoredSentence

MAX_SENTENCES = 3
COMPANION_RATIO = 0.85


@dataclass(slots=True)
class ExtractiveAnswer:
    text: str
    chosen: list[ScoredSentence]
    highlights: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # 0-based source → offsets


def extract_answer(
    scored: ScoredPassages,
    max_sentences: int = MAX_SENTENCES,
    *,
    question: str | None = None,
    min_focus: float = 0.0,
    sources: Sequence[tuple[str, str]] = (),
) -> ExtractiveAnswer:
    """With ``question`` (as asked), the answer leads with the sentence that answers it (``focus``),
    and a sentence of another passage joins only when it answers it too."""
    strength = scored.strength
    ranked = ranked_candidates(scored)
    if not ranked:
        return ExtractiveAnswer("", [])
    best = ranked[0]
    if question is not None:
        best = answering_sentence(question, scored, ranked, min_focus, sources) or best
    chosen = [best]
    seen_texts = {best.sentence.text.lower()}
    for candidate in ranked:
        if len(chosen) >= max_sentences or strength(candidate) < COMPANION_RATIO * strength(best):
            break
        if candidate.sentence.text.lower() in seen_texts:
            continue  # the same sentence in two passages (or the best itself)
        if (
            question is not None
            and candidate.source != best.source
            and not answering_sentence(question, scored, [candidate], min_focus, sources)
        ):
            continue  # another passage's sentence that does not answer would cite a source without the answer
        chosen.append(candidate)
        seen_texts.add(candidate.sentence.text.lower())
    chosen = _with_continuations(scored, chosen)
    if question is not None and _names_by_antecedent_only(question, best):
        # "she greeted ...": the sentence before says who she is
        before = next((s for s in scored.of_source(best.source) if s.sentence == best.antecedent), None)
        if before is not None and all(before is not s for s in chosen):
            chosen.append(before)
    source_order = list(dict.fromkeys(s.source for s in chosen))
    ordered = sorted(chosen, key=lambda s: (source_order.index(s.source), s.sentence.start))
    separator = "\n" if any(s.sentence.is_table_row for s in ordered) else " "
    text = separator.join(f"{clean_for_model(s.display)} [Source {s.source + 1}]" for s in ordered)
    highlights: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for sentence in ordered:
        highlights[sentence.source].append((sentence.sentence.start, sentence.sentence.end))
    return ExtractiveAnswer(text, ordered, dict(highlights))


def _names_by_antecedent_only(question: str, sentence: ScoredSentence) -> bool:
    return (
        expects_person(question)
        and not new_names(question, sentence.sentence.text)
        and names_by_antecedent(question, sentence)
    )


def _with_continuations(scored: ScoredPassages, chosen: list[ScoredSentence]) -> list[ScoredSentence]:
    """A sentence that ends with a colon announces the next one (a command, a list): take it too."""
    extended = list(chosen)
    for sentence in chosen:
        if not sentence.sentence.text.endswith(":"):
            continue
        following = [s for s in scored.of_source(sentence.source) if s.sentence.start >= sentence.sentence.end]
        if following:
            nearest = min(following, key=lambda s: s.sentence.start)
            if all(nearest is not s for s in extended):
                extended.append(nearest)
    return extended
