"""The grounding check of a generated answer (any LLM): is each sentence supported by the sources
the model was given, and do its citations point at them?

1. Citations are normalised to ``[Source n]`` (``[Source 2: name]``, ``[Sources 1, 3]`` and ``[2]``
   are read too); a citation to a source that does not exist is removed and reported.
2. The answer is split into sentences. Each sentence's support against each source mixes the best
   cosine similarity to the source's sentences (the embedder) with the share of the sentence's
   content terms found in one window of ``WINDOW_SENTENCES`` neighbouring sentences of that source
   (or in the question): a claim must be stated in one place, not assembled from words scattered
   over a passage. A sentence that adds more than ``MAX_UNCOVERED_TERMS`` content terms found in no
   such window (and more than ``MAX_UNCOVERED_SHARE`` of its terms) is unsupported however similar
   it reads: "the FL-500S, a motor car fuel filter modified to fit the engine" embeds close to "the
   oil filter is the FL-500S", and only its words show the invention. A value found in no source
   (nor the question) with the same sign, magnitude and unit makes the sentence unsupported
   (``values``: "1 to 32768" is not in "-32768 to +32767", "512 KB" not in "512 MB"); names found
   in none lower its support.
3. A supported sentence without a citation gets the citation of its best source; a sentence whose
   citations point only at sources that do not support it, while another source does, has them
   replaced (reported as removed and added).

The result carries per-sentence support, the offsets of each sentence in the final answer, and the
source sentences that support it (the highlights).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from carrag.services.answers.context import FittedSource
from carrag.services.answers.evidence import names, numbers, terms
from carrag.services.answers.features import Candidate
from carrag.services.answers.units import read_units
from carrag.services.answers.values import Value, unsupported_values
from carrag.services.embedders.service import EmbeddingService

COSINE_WEIGHT = 0.5
LEXICAL_WEIGHT = 0.5
NAME_PENALTY = 0.8  # support multiplier per name found in no source
MIN_CHECKED_TERMS = 2  # shorter sentences ("Yes.", "Sure!") are not checked
WINDOW_SENTENCES = 3  # a claim's terms must be found within this many neighbouring source sentences
MAX_UNCOVERED_TERMS = 2  # content terms a supported sentence may add beyond its window and the question
MAX_UNCOVERED_SHARE = 0.2  # ... unless they are this small a share of its terms (a long paraphrase)

_CITATION = re.compile(
    r"\[\s*(?:sources?\s*)?(\d+(?:\s*(?:,|;|&|and)\s*(?:source\s*)?\d+)*)(?:\s*[:|-][^\]\n]{0,120})?\s*\]", re.I
)
_LEADING_CITATIONS = re.compile(r"^(?:\s*\[Source \d+\])+")


@dataclass(slots=True)
class CheckedSentence:
    text: str
    start: int
    end: int
    support: float
    source: int | None  # 1-based
    supported: bool
    checked: bool = True
    evidence: list[Candidate] = field(default_factory=list)
    per_source: list[float] = field(default_factory=list)  # support from each source, in source order
    unfound_terms: list[str] = field(default_factory=list)  # terms of it the best source's windows lack
    unfound_values: list[Value] = field(default_factory=list)  # values (sign, number, unit) no source holds

    def as_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "support": round(self.support, 4),
            "source": self.source,
            "supported": self.supported,
        }


@dataclass(slots=True)
class Grounding:
    answer: str  # the answer with its citations fixed
    sentences: list[CheckedSentence]
    citations_removed: list[int]
    citations_added: list[int]
    min_support: float

    @property
    def unsupported(self) -> list[int]:
        return [i for i, s in enumerate(self.sentences) if not s.supported]

    @property
    def grounded(self) -> bool:
        checked = [s for s in self.sentences if s.checked]
        return bool(checked) and all(s.supported for s in checked)

    @property
    def support(self) -> float:
        checked = [s.support for s in self.sentences if s.checked]
        return round(min(checked), 4) if checked else 0.0

    def highlights(self) -> dict[int, list[tuple[int, int]]]:
        """0-based source → offsets (in the source's passage) of the sentences that support the answer."""
        found: dict[int, list[tuple[int, int]]] = {}
        for sentence in self.sentences:
            if sentence.supported:
                for evidence in sentence.evidence:
                    spans = found.setdefault(evidence.source, [])
                    span = (evidence.unit.start, evidence.unit.end)
                    if span not in spans:
                        spans.append(span)
        return {source: sorted(spans) for source, spans in found.items()}

    def as_dict(self) -> dict[str, object]:
        return {
            "grounded": self.grounded,
            "support": self.support,
            "sentences": [s.as_dict() for s in self.sentences],
            "citations_removed": self.citations_removed,
            "citations_added": self.citations_added,
            "unsupported": self.unsupported,
        }


def normalise_citations(answer: str, source_count: int) -> tuple[str, list[int]]:
    """``[Source n]`` for every valid citation; invalid ones removed. Returns the text and the removed numbers."""
    removed: list[int] = []

    def rewrite(match: re.Match[str]) -> str:
        cited = [int(n) for n in re.findall(r"\d+", match.group(1))]
        valid = [n for n in dict.fromkeys(cited) if 1 <= n <= source_count]
        removed.extend(n for n in cited if not 1 <= n <= source_count)
        return " ".join(f"[Source {n}]" for n in valid)

    text = _CITATION.sub(rewrite, answer)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text))
    return text, sorted(set(removed))


def cited_sources(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[Source (\d+)\]", text)]


def without_citations(text: str) -> str:
    return " ".join(re.sub(r"\[Source \d+\]", " ", text).split())


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans of the answer; citations that open a sentence belong to the one before."""
    spans = sorted({(unit.start, unit.end) for unit in read_units(text) if unit.kind != "list"})
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        leading = _LEADING_CITATIONS.match(text[start:end])
        if leading and merged:
            merged[-1] = (merged[-1][0], start + leading.end())
            start += leading.end()
            while start < end and text[start].isspace():
                start += 1
        if end - start > 0 and any(ch.isalnum() for ch in without_citations(text[start:end])):
            merged.append((start, end))
        elif merged:
            merged[-1] = (merged[-1][0], end)
    return merged


async def check_grounding(
    answer: str,
    sources: Sequence[FittedSource],
    embedder: EmbeddingService,
    *,
    question: str = "",
    min_support: float,
) -> Grounding:
    text, removed = normalise_citations(answer, len(sources))
    spans = _sentence_spans(text)
    contents = [without_citations(text[start:end]) for start, end in spans]
    vectors = await _embed(embedder, contents)
    windows = [_windows(source) for source in sources]
    question_terms = set(terms(question)) | numbers(question, spelled=True)
    source_text = " \n ".join(source.text for source in sources)
    (source_text + " " + question).lower()

    pieces: list[str] = []
    checked: list[CheckedSentence] = []
    added: list[int] = []
    cursor = 0
    for (start, end), content, vector in zip(spans, contents, vectors, strict=True):
        pieces.append(text[cursor:start])
        sentence_text = text[start:end]
        sentence_terms = terms(content)
        if len(sentence_terms) < MIN_CHECKED_TERMS:
            result = CheckedSentence(sentence_text, 0, 0, 1.0, None, True, checked=False)
        else:
            cited = [n for n in dict.fromkeys(cited_sources(sentence_text)) if 1 <= n <= len(sources)]
            result = _check(
                content, sentence_terms, vector, sources, windows, question_terms, source_text + "\n" + question, cited
            )
            result.supported = result.supported and result.support >= min_support
            sentence_text, swapped_out, swapped_in = _fix_citations(sentence_text, result, sources, vector, min_support)
            removed.extend(swapped_out)
            added.extend(swapped_in)
        offset = sum(len(p) for p in pieces)
        result.text, result.start, result.end = sentence_text, offset, offset + len(sentence_text)
        pieces.append(sentence_text)
        checked.append(result)
        cursor = end
    pieces.append(text[cursor:])
    return Grounding("".join(pieces), checked, sorted(set(removed)), sorted(set(added)), min_support)


async def _embed(embedder: EmbeddingService, texts: list[str]) -> list[np.ndarray | None]:
    if not texts:
        return []
    vectors = np.asarray(await embedder.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return list(vectors / norms)


def _windows(source: FittedSource) -> list[set[str]]:
    """The term sets of each run of ``WINDOW_SENTENCES`` neighbouring sentences of what the model saw
    of ``source`` (numbers also as their spelled-out forms: "thirty" supports "30")."""
    per_sentence = [set(terms(c.unit.readable)) | numbers(c.unit.readable, spelled=True) for c in source.units]
    if not per_sentence:
        return [set(terms(source.text)) | numbers(source.text, spelled=True)]
    count = max(len(per_sentence) - WINDOW_SENTENCES + 1, 1)
    return [set().union(*per_sentence[i : i + WINDOW_SENTENCES]) for i in range(count)]


def uncovered_terms(sentence_terms: Sequence[str], windows: Sequence[set[str]], question_terms: set[str]) -> set[str]:
    """The sentence's content terms that the best-covering window of a source (with the question) lacks."""
    unique = set(sentence_terms) - question_terms
    if not unique:
        return set()
    return min((unique - window for window in windows), key=len, default=unique)


def _source_support(
    sentence_terms: list[str],
    vector: np.ndarray | None,
    source: FittedSource,
    windows: list[set[str]],
    question_terms: set[str],
) -> tuple[float, Candidate | None, set[str]]:
    unique = set(sentence_terms)
    uncovered = uncovered_terms(sentence_terms, windows, question_terms)
    lexical = 1 - len(uncovered) / len(unique) if unique else 0.0
    best_cosine, best_sentence = 0.0, None
    if vector is not None:
        for candidate in source.units:
            if candidate.vector is None:
                continue
            cosine = float(candidate.vector @ vector)
            if cosine > best_cosine:
                best_cosine, best_sentence = cosine, candidate
    return COSINE_WEIGHT * best_cosine + LEXICAL_WEIGHT * lexical, best_sentence, uncovered


def adds_unfound_terms(uncovered: set[str], sentence_terms: Sequence[str]) -> bool:
    """Too many of the sentence's terms are in no window of the source: whatever it embeds like, it says more."""
    unique = set(sentence_terms)
    return len(uncovered) > MAX_UNCOVERED_TERMS and len(uncovered) > MAX_UNCOVERED_SHARE * len(unique)


def _check(
    content: str,
    sentence_terms: list[str],
    vector: np.ndarray | None,
    sources: Sequence[FittedSource],
    windows: list[list[set[str]]],
    question_terms: set[str],
    known_text: str,
    cited: Sequence[int] = (),
) -> CheckedSentence:
    supports = [
        _source_support(sentence_terms, vector, source, source_windows, question_terms)
        for source, source_windows in zip(sources, windows, strict=True)
    ]
    invented_values = unsupported_values(content, known_text)
    invented_names = [name for name in names(content) if name not in known_text.lower()]
    penalty = NAME_PENALTY ** len(invented_names)
    if not supports:
        return CheckedSentence(content, 0, 0, 0.0, None, False)
    best = max(range(len(supports)), key=lambda i: supports[i][0])
    support, best_sentence, uncovered = supports[best]
    per_source = [value if not adds_unfound_terms(found, sentence_terms) else 0.0 for value, _, found in supports]
    if len(cited) > 1:  # a sentence joining cited sources: each one's best window covers its part
        joined = set(sentence_terms) - question_terms
        for number in cited:
            joined = min((joined - window for window in windows[number - 1]), key=len, default=joined)
        if len(joined) < len(uncovered):
            uncovered = joined
            for number in cited:
                per_source[number - 1] = max(per_source[number - 1], supports[number - 1][0])
    support *= penalty
    unfound = adds_unfound_terms(uncovered, sentence_terms)
    if invented_values or unfound:
        support *= 0.5
    evidence = [best_sentence] if best_sentence is not None else []
    return CheckedSentence(
        content,
        0,
        0,
        min(max(support, 0.0), 1.0),
        best + 1,
        not invented_values and not unfound,
        True,
        evidence,
        per_source,
        sorted(uncovered),
        invented_values,
    )


def _fix_citations(
    sentence_text: str,
    result: CheckedSentence,
    sources: Sequence[FittedSource],
    vector: np.ndarray | None,
    floor: float,
) -> tuple[str, list[int], list[int]]:
    if not result.supported or result.source is None:
        return sentence_text, [], []
    cited = cited_sources(sentence_text)
    if cited and any(result.per_source[n - 1] >= floor for n in cited):
        return sentence_text, [], []
    citation = f"[Source {result.source}]"
    if cited:  # every citation points at a source that does not support the sentence
        stripped = re.sub(r"\s*\[Source \d+\]", "", sentence_text)
        return _append_citation(stripped, citation), cited, [result.source]
    return _append_citation(sentence_text, citation), [], [result.source]


def _append_citation(sentence: str, citation: str) -> str:
    body = sentence.rstrip()
    trailing = sentence[len(body) :]
    if body and body[-1] in ".!?":
        return f"{body[:-1]} {citation}{body[-1]}{trailing}"
    return f"{body} {citation}{trailing}"
