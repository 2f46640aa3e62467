"""Does a sentence answer *this* question, or only share its topic?

A passage can be about the right thing and still not hold the answer: the steel datasheet names
"density" in a list of properties but gives no value; the receipt has a date but no total. Two
checks on a candidate answer sentence (with its table title and header, for a table row):

- **Focus**: the question's own content terms, each weighted by its rarity among the candidate
  sentences (a term no candidate has weighs the most), must be covered by the sentence itself, not
  merely by its passage: ``focus_coverage`` ≥ ``min_focus``. A sentence that says the same thing in
  other words ("how long are snapshots kept?" — "the snapshot retention is thirty days") shares few
  terms with the question, so a sentence the embedder finds very close to the question
  (cosine ≥ ``PARAPHRASE_COSINE``) covers the focus too; the answer-type and named-number checks
  still apply to it.
- **Answer type**: a question asking for a quantity (how many, what year, what score ...) needs a
  number the question does not already contain; a question asking "who" needs a capitalised name
  the question does not already contain (a capitalised first word alone is not a name).
- **Asked noun** (``asked``): "what is Jim's email", "his mother's name", "how many records" — the
  sentence must name the email, the mother, the records: naming the person or the year is not enough.
- **Its own subject**: each name the question asks about is named (at least in part) in the sentence's
  own passage, not only in another one; a "what/which" answer says something the question
  does not; an index row (a Page column) answers only questions about its own columns; a follow-up's
  paraphrase is judged by the follow-up as asked, not by the previous turn joined with it.

``answering`` picks, among the few strongest sentences, the first that passes both: the extractive
answer quotes it, and when none passes the documents don't say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from carrag.services.answers.asked import PARAPHRASE_WORD_COSINE, asked_nouns
from carrag.services.answers.evidence import (
    STOP_WORDS,
    missing_key_terms,
    numbers,
    stem,
    terms,
    weighted_coverage,
)
from carrag.services.answers.question_types import expects_number, expects_person
from carrag.services.answers.scoring import ScoredPassages, ScoredSentence
from carrag.services.answers.sentences import table_lines

CANDIDATES = 5  # how far down the strength ranking an answering sentence is looked for
# all-MiniLM-L6-v2 cosines, measured: paraphrased question/answer pairs 0.70-0.80; a sentence on the
# same topic that does not answer ("density of steel?" / "yield strength of 250 MPa") about 0.6
PARAPHRASE_COSINE = 0.7
_CAPITALISED = re.compile(r"\b[A-Z][A-Za-z]+")
_QUESTION_WORDS = frozenset(["what", "which", "who", "whom", "whose", "when", "where", "why", "how"])
# Verbs that say only that something happened, not what: "when did it come out?", "when did it take place?"
# ask for a date; the answer ("WordStar (1978)") need not repeat them.
_EVENT_VERBS = frozenset(["come", "came", "go", "went", "gone", "happen", "occur", "occurr", "take", "took"])


def focus_terms(question: str) -> list[str]:
    return [term for term in terms(question) if term not in _QUESTION_WORDS and term not in _EVENT_VERBS]


def sentence_text(sentence: ScoredSentence) -> str:
    """What a sentence says, as the checks read it: a table row with its title and header names
    (``Month: May; Revenue: $280``; an empty cell says nothing, so its header is not in it)."""
    return sentence.readable


def _covered(wanted: Sequence[str], found: set[str]) -> set[str]:
    """``found`` plus the wanted terms it holds in another form: the crude stemmer leaves
    ``nicknamed`` as ``nicknam`` and ``nickname`` whole, so words sharing all but their last two
    letters (and at least five) meet."""
    extra = set()
    for term in set(wanted) - found:
        if len(term) >= 5 and term.isalpha():
            stem = term[: max(5, len(term) - 2)]
            if any(other.startswith(stem) and abs(len(other) - len(term)) <= 2 for other in found):
                extra.add(term)
    return found | extra


def focus_coverage(question: str, sentence: ScoredSentence, weights: dict[str, float]) -> float:
    wanted = focus_terms(question)
    if not wanted:
        return 1.0
    return weighted_coverage(wanted, _covered(wanted, set(terms(said_text(question, sentence)))), weights)


def asks_empty_column(question: str, sentence: ScoredSentence) -> bool:
    """A table row whose cell is empty under the column the question asks about ("the habitat of the
    Wood Duck", the Habitat cell blank) does not answer it."""
    reading = sentence.reading
    if reading is None or not reading.names:
        return False
    wanted = set(focus_terms(question))
    for name, cell in zip(reading.names, reading.cells, strict=False):
        if not cell.strip() and wanted & set(terms(name)):
            return True
    return False


def mentions_asked_noun(question: str, sentence: ScoredSentence) -> bool:
    """Whether the sentence names what the question asks about (``asked``: "Jim Bainbridge's email" needs
    an email, not only Jim Bainbridge): one of the asked words, in the same or a near form (nickname /
    nicknamed), or in other words the embedder finds close ("how tall" for the height). A sentence that
    names the asked noun only as another kind of it ("the fuel tank capacity" answered by "the towing
    capacity") does not."""
    asked = asked_nouns(question)
    wanted = terms(" ".join(asked))
    if not wanted:
        return True
    whole, text = sentence_text(sentence), said_text(question, sentence)
    if set(wanted) & _covered(wanted, set(terms(text))):
        return not names_another_kind(question, asked, text)
    if set(wanted) & _covered(wanted, set(terms(whole))):
        return False  # named only where the sentence quotes the question itself
    return sentence.asked_similarity >= PARAPHRASE_WORD_COSINE


def said_text(question: str, sentence: ScoredSentence) -> str:
    """What the sentence says for the focus and asked-noun checks: its text, without the quotations of
    the question's own words in prose (`without_quoted_question`; a table row is read whole)."""
    text = sentence_text(sentence)
    return text if sentence.reading is not None else without_quoted_question(question, text)


_QUOTED = re.compile(r'"([^"\n]{1,160})"|“([^”\n]{1,160})”')


def without_quoted_question(question: str, text: str) -> str:
    """Prose ``text`` without the quotations made only of the question's own words: a sentence that
    quotes the question ("an off-topic question such as "What is the capital of Mongolia?" scores 0.40")
    mentions it, it does not answer it. (Not for table rows: csv cells are quoted as a matter of form.)"""
    asked = set(terms(question))

    def drop(match: re.Match[str]) -> str:
        quoted = terms(match.group(1) or match.group(2) or "")
        return " " if quoted and set(quoted) <= asked else match.group(0)

    return _QUOTED.sub(drop, text)


_WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*")
# Words that say how much of a thing, not which kind of it.
_DEGREE_WORDS = frozenset(
    [
        "maximum",
        "minimum",
        "max",
        "min",
        "total",
        "overall",
        "full",
        "rated",
        "nominal",
        "approximate",
        "average",
        "typical",
        "usable",
        "effective",
        "estimated",
        "actual",
        "current",
        "standard",
        "recommended",
    ]
)


def names_another_kind(question: str, asked: Sequence[str], text: str) -> bool:
    """Whether ``text`` says the asked head noun (``asked[0]``) only with a modifier the question does not
    have, while the question qualifies it with one the text lacks (``asked[1]``): "fuel tank capacity" vs.
    "towing capacity". A bare or matching occurrence ("Capacity: 26 gallons") answers."""
    if len(asked) < 2:
        return False
    head, modifier = terms(asked[0]), terms(asked[1])
    found = set(terms(text))
    if not head or not modifier or _covered(modifier, found) & set(modifier):
        return False
    question_terms = set(terms(question))
    words = _WORDS.findall(text)
    occurrences = [index for index, word in enumerate(words) if terms(word) == head]
    if not occurrences:
        return False  # said in another form (plural, paraphrase): nothing to compare
    for index in occurrences:
        before = words[index - 1] if index > 0 else ""
        if before.lower() in _DEGREE_WORDS:  # "maximum capacity" is still the capacity asked about
            before = words[index - 2] if index > 1 else ""
        before_terms = terms(before) if before[:1].islower() else []
        if not before_terms or set(before_terms) <= question_terms:
            return False
    return True


def has_answer_type(question: str, sentence: ScoredSentence) -> bool:
    text = sentence_text(sentence)
    if expects_number(question) and not numbers(text, spelled=True) - numbers(question, spelled=True):
        return False
    if expects_person(question) and not new_names(question, sentence.sentence.text):
        return names_by_antecedent(question, sentence)
    return True


def names_by_antecedent(question: str, sentence: ScoredSentence) -> bool:
    """Whether a sentence that says "he"/"she" ("With these words she greeted Prince Vasili") names the person
    a who-question asks for in the sentence before it ("the speaker was Anna Pavlovna Scherer"), which the
    answer then quotes with it (``extractive``)."""
    return sentence.antecedent is not None and bool(new_names(question, sentence.antecedent.text))


def new_names(question: str, text: str) -> set[str]:
    asked = {word.lower() for word in _CAPITALISED.findall(question)}
    return {word for word in _names_in(text) - asked if word not in STOP_WORDS}


def _names_in(text: str) -> set[str]:
    """Capitalised words that may be names (lower-cased). The first word of a sentence or of a table
    cell only when a capitalised word follows it ("Quack Quackling served"): alone it is a capitalised
    common word ("Address of principal executive offices")."""
    found = set()
    for part in re.split(r"[|;]", text):
        tokens = re.findall(r"[A-Za-z][\w'’-]*", part)
        for position, word in enumerate(tokens):
            if not _CAPITALISED.fullmatch(word):
                continue
            if position > 0 or (len(tokens) > 1 and tokens[1][:1].isupper()):
                found.add(word.lower())
    return found


def ranked_candidates(scored: ScoredPassages) -> list[ScoredSentence]:
    """Every candidate answer, strongest first. Code is left out: a fenced example may merely repeat
    the question word for word (it is quoted only as what a sentence announces)."""
    return sorted((s for s in scored.sentences if not s.in_code), key=scored.strength, reverse=True)


def answers_question(
    question: str,
    sentence: ScoredSentence,
    weights: dict[str, float],
    min_focus: float,
    source: tuple[str, str] = ("", ""),
) -> bool:
    """Whether ``sentence`` of ``source`` (its document's title, its passage) can be the answer: not
    a header row or table-of-contents entry, the kind of answer asked for, no empty cell under the column asked about, enough of
    the question's focus, and what the question names in the sentence itself (or its table's title and
    column names, or the document title): every number, year or code ("in 2013" is not answered by a
    sentence about 2005) and, for a row of a table with column names, every name too. A sentence in prose
    may say "it", but its own passage (or document title) must name what the question names, each name at
    least in part ("Roberts" for "Iwan Roberts"): a sentence of another document ("the typewriter was patented
    in 1868" for the date of the essay "How to Get New Ideas") does not answer."""
    if (
        sentence.is_header_row
        or sentence.is_contents
        or is_contents_row(question, sentence)
        or not has_answer_type(question, sentence)
        or asks_empty_column(question, sentence)
    ):
        return False
    if not mentions_asked_noun(question, sentence):
        return False
    title, passage = source
    own = [title, sentence_text(sentence)]
    # A row of a table names its own subject (the June row, the Wood Duck row): a name the question asks
    # about must be in the row unless the passage names it outside its table lines (a company's cover-page
    # table is about the company its prose names). A sentence may say "it", but its own passage names what
    # "it" is: a name only another passage mentions ("February" in a book retrieved with a memo about
    # January 23) is not what the sentence is about.
    is_row = sentence.reading is not None and bool(sentence.reading.names)
    prose = set(terms(_prose_text(passage))) if is_row else set()
    if [term for term in missing_key_terms(question, own) if _has_digit(term) or (is_row and term not in prose)]:
        return False
    if passage and _unnamed(question, f"{title}\n{passage}"):
        return False  # a name the question asks about is in another passage: this one is about something else
    if not adds_to_question(question, sentence):
        return False
    # A follow-up's paraphrase is judged by the follow-up alone: the sentence that answered the previous
    # question is close to the previous turn joined with it ("When did he die?" after "Who patented ...?").
    return sentence.asked_cosine >= PARAPHRASE_COSINE or focus_coverage(question, sentence, weights) >= min_focus


_PAGE_COLUMN = frozenset(["page", "pages", "p", "pp", "slide", "slides", "sheet"])


def is_contents_row(question: str, sentence: ScoredSentence) -> bool:
    """A row of a table with a Page column ("Topic: Mobile churn; Period: ...; Page: 11") says where a
    topic is, not its value ("the churn rate"): it answers only a question about the table's own columns
    ("on which page does ... start?", "what period does the ... topic cover?")."""
    reading = sentence.reading
    if reading is None or not any(name.strip(" .").lower() in _PAGE_COLUMN for name in reading.names):
        return False
    columns = set(terms(" ".join(reading.names))) | {stem(word) for word in _PAGE_COLUMN}
    return not set(terms(question)) & columns


_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|should|will|would|has|have|had|must|may|might)\b", re.I
)


def adds_to_question(question: str, sentence: ScoredSentence) -> bool:
    """Whether the sentence says something the question does not: an answer to "which regions are listed
    under Germany?" that is only "Germany" repeats the question. (A yes/no question may be answered by a
    sentence in its own words: "Is X supported?" — "X is supported".)"""
    if _YES_NO.match(question):
        return True
    asked = _covered(terms(sentence_text(sentence)), set(terms(question)))
    return bool(set(terms(sentence_text(sentence))) - asked)


_NAME_WORD = re.compile(r"[A-Za-z][\w'’-]*")


def _unnamed(question: str, text: str) -> list[str]:
    """The names of ``question`` (runs of capitalised words after its first word: "Iwan Roberts", "Wales")
    of which ``text`` mentions no word."""
    runs: list[list[str]] = []
    previous_end = -1
    for position, match in enumerate(_NAME_WORD.finditer(question)):
        word = match.group(0)
        if position == 0 or not word[:1].isupper() or word.lower() in STOP_WORDS:
            previous_end = -1
            continue
        if runs and previous_end >= 0 and question[previous_end : match.start()].strip() == "":
            runs[-1].append(word)
        else:
            runs.append([word])
        previous_end = match.end()
    mentioned = set(terms(text.replace("-", " "))) | set(terms(text)) | set(text.lower().split())
    named = [(" ".join(run), set(terms(" ".join(run).replace("-", " ")))) for run in runs]
    return [name for name, words in named if words and not words & mentioned]  # "C" (one letter) names nothing


def _prose_text(passage: str) -> str:
    """The passage without its table lines."""
    lines = passage.split("\n")
    return "\n".join(line for line, row in zip(lines, table_lines(lines), strict=True) if not row)


def _has_digit(term: str) -> bool:
    return any(char.isdigit() for char in term)


def answering_sentence(
    question: str,
    scored: ScoredPassages,
    ranked: Sequence[ScoredSentence],
    min_focus: float,
    sources: Sequence[tuple[str, str]] = (),
) -> ScoredSentence | None:
    """Among the ``CANDIDATES`` strongest sentences (``ranked``, best first), those that cover the
    question's focus and have the kind of answer it asks for; of these the one whose strength,
    weighed by how much of the focus it covers, is highest. None when no sentence answers.
    ``sources``: (document title, passage text) per source."""

    def answers(sentence: ScoredSentence) -> bool:
        source = sources[sentence.source] if sentence.source < len(sources) else ("", "")
        return answers_question(question, sentence, scored.weights, min_focus, source)

    answering = [s for s in ranked[:CANDIDATES] if answers(s)]
    return max(
        answering,
        key=lambda s: scored.strength(s) * (0.5 + 0.5 * focus_coverage(question, s, scored.weights)),
        default=None,
    )
