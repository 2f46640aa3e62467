"""Fit the answer model (`carrag/services/answers/model.py`) on the development questions, cross-validated
by document, and write its weights.

    python -m carrag.bench.answer_fitting [--questions carrag/bench/questions/answers_dev.jsonl]
        [--root ../shared/data] [--out carrag/services/answers/answer_model.json] [--cache DIR]

1. The questions' documents are ingested into one fresh store (each question meets the others'
   documents as distractors, as in `carrag eval-answers`) and every question is searched as
   `POST /query` searches it (a follow-up with the turn before it).
2. Every unit of the retrieved passages gets its features (`features.read_passages`, the code the
   service runs) and a label: it holds an accepted answer, in a passage holding the evidence.
3. Folds by document (a question's first document; every question of a document in the same fold):
   the unit model's L2 strength, then the two request models (targets: the extractive answer is right;
   the question is answerable) on the out-of-fold unit probabilities, each strength chosen by
   out-of-fold log loss. A question is answered when P(right) ≥ 1 − P(answerable) (a refusal costs as
   much as a wrong answer; no threshold is chosen). The printed scores are those out-of-fold figures;
   the written model is then fitted on every question.

Logistic regression is fitted here by Newton's method in numpy (a few lines; no new dependency).
``--cache`` keeps the retrieved passages, so a second fit skips ingestion and search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from carrag.bench.answer_questions import Question, documents_of, load_questions
from carrag.bench.answer_scoring import contains_phrase, is_correct
from carrag.services.answers.features import Candidate, Passage, Reading, read_passages
from carrag.services.answers.model import MODEL_FILE, AnswerModel, Logistic, ranked_request_features
from carrag.services.embedders.service import EmbeddingService

QUESTIONS = Path(__file__).resolve().parent / "questions" / "answers_dev.jsonl"
ROOT = Path("../shared/data")  # beside the checkout, as `carrag eval-answers` reads it
FOLDS = 5
STRENGTHS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
EMPTY = Logistic((), np.zeros(0), np.ones(0), np.zeros(0), 0.0)
# A unit of the best unit's passage joins it in the answer when the model finds it at least half as
# likely to be the answer (a fixed reading of the probabilities, not a tuned value).
COMPANION = 0.5


# --- retrieval -------------------------------------------------------------------------------------


async def retrieve(questions: Sequence[Question], root: Path) -> dict[str, tuple[str, list[Passage]]]:
    """For each question id: the retrieval query and the passages `POST /query` would answer from."""
    from carrag.bench.answer_runner import answer_eval_settings, ingest_documents
    from carrag.services.answering import passages_of
    from carrag.services.answers.conversation import retrieval_query
    from carrag.services.container import build_container
    from carrag.services.models import ChatMessage
    from carrag.services.settings import Settings

    with tempfile.TemporaryDirectory(prefix="carrag-fit-answers-") as directory:
        container = await build_container(answer_eval_settings(Settings(), Path(directory) / "fit.db"))
        try:
            await ingest_documents(container, root, documents_of(list(questions)))
            found = {}
            for question in questions:
                history = [ChatMessage(turn["role"], turn["content"]) for turn in question.history]  # type: ignore[arg-type]
                query = retrieval_query(question.question, history)
                outcome = await container.search.search(container.requests.search(query))
                found[question.id] = (query, passages_of(outcome.hits))
            return found
        finally:
            await container.aclose()


def load_or_retrieve(
    questions: Sequence[Question], root: Path, cache: Path | None
) -> dict[str, tuple[str, list[Passage]]]:
    if cache is not None and cache.is_file():
        stored = json.loads(cache.read_text())
        if all(question.id in stored for question in questions):
            return {
                qid: (query, [Passage(**_passage(p)) for p in passages]) for qid, (query, passages) in stored.items()
            }
    found = asyncio.run(retrieve(questions, root))
    if cache is not None:
        cache.write_text(
            json.dumps({qid: (query, [asdict(p) for p in passages]) for qid, (query, passages) in found.items()})
        )
    return found


def _passage(data: dict[str, Any]) -> dict[str, Any]:
    matched = data.get("matched")
    known = {key: value for key, value in data.items() if key in Passage.__dataclass_fields__}  # older caches held more
    return known | {"matched": tuple(matched) if matched else None}


# --- the data set ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Example:
    question: Question
    reading: Reading
    labels: np.ndarray  # per candidate: holds an accepted answer (in a passage with the evidence)
    group: int


def label(question: Question, reading: Reading) -> np.ndarray:
    if not question.answerable:
        return np.zeros(len(reading.candidates), dtype=bool)
    evidenced = [any(contains_phrase(p.text, e) for e in question.evidence) for p in reading.passages]
    return np.array(
        [evidenced[c.source] and is_correct(c.unit.display, question.accepted) for c in reading.candidates], dtype=bool
    )


async def build_examples(
    questions: Sequence[Question], found: dict[str, tuple[str, list[Passage]]], embedder: EmbeddingService
) -> list[Example]:
    groups: dict[str, int] = {}
    examples = []
    for question in questions:
        query, passages = found[question.id]
        reading = await read_passages(question.question, passages, embedder, query=query)
        group = groups.setdefault(question.documents[0], len(groups))
        examples.append(Example(question, reading, label(question, reading), group))
    return examples


# --- fitting ---------------------------------------------------------------------------------------


def fit_logistic(rows: Sequence[dict[str, float]], y: np.ndarray, names: Sequence[str], strength: float) -> Logistic:
    """L2-regularised logistic regression on standardised features, by Newton's method."""
    x = np.asarray([[row.get(name, 0.0) for name in names] for row in rows], dtype=np.float64)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], 1.0 / strength)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    return Logistic(tuple(names), mean, scale, w[:-1], float(w[-1]))


def fit_choice(
    requests: Sequence[tuple[Sequence[dict[str, float]], np.ndarray]], names: Sequence[str], strength: float
) -> Logistic:
    """L2-regularised conditional logit ("which of these units answers"): per request, the softmax of the
    units' scores is fitted to put its mass on the units that hold an answer. Requests without such a
    unit teach nothing about the choice and are left out. Newton's method on the standardised features,
    with a halving line search (the Hessian of several answering units per request is not convex)."""
    kept = [(rows, y) for rows, y in requests if y.any()]
    x_all = np.asarray([[row.get(name, 0.0) for name in names] for rows, _ in kept for row in rows], dtype=np.float64)
    mean = x_all.mean(axis=0)
    scale = x_all.std(axis=0)
    scale[scale == 0] = 1.0
    groups, start = [], 0
    for rows, y in kept:
        groups.append(((x_all[start : start + len(rows)] - mean) / scale, y.astype(bool)))
        start += len(rows)
    penalty = 1.0 / strength
    w = np.zeros(len(names))

    def loss(weights: np.ndarray) -> float:
        total = 0.5 * penalty * float(weights @ weights)
        for z, y in groups:
            scores = z @ weights
            total += _log_sum_exp(scores) - _log_sum_exp(scores[y])
        return total

    current = loss(w)
    for _ in range(50):
        gradient = penalty * w
        hessian = penalty * np.eye(len(names))
        for z, y in groups:
            scores = z @ w
            p = np.exp(scores - scores.max())
            p /= p.sum()
            chosen = np.exp(scores[y] - scores[y].max())
            chosen /= chosen.sum()
            mean_z = z.T @ p
            gradient += mean_z - z[y].T @ chosen
            hessian += (z * p[:, None]).T @ z - np.outer(mean_z, mean_z)
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-4 and loss(w - size * step) > current:
            size /= 2
        w = w - size * step
        previous, current = current, loss(w)
        if previous - current < 1e-8:
            break
    return Logistic(tuple(names), mean, scale, w, 0.0)


def _log_sum_exp(values: np.ndarray) -> float:
    """log(sum(exp(values))) without underflow (a far-behind answering unit's exp is 0.0)."""
    top = float(values.max())
    return top + math.log(float(np.exp(values - top).sum()))


def folds(examples: Sequence[Example], count: int = FOLDS) -> list[int]:
    """A fold per example, by document group, groups spread so the folds hold about as many questions."""
    sizes: dict[int, int] = {}
    for example in examples:
        sizes[example.group] = sizes.get(example.group, 0) + 1
    load = [0] * count
    assigned = {}
    for group, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        target = load.index(min(load))
        assigned[group] = target
        load[target] += size
    return [assigned[example.group] for example in examples]


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def out_of_fold_units(
    examples: Sequence[Example], fold_of: Sequence[int], names: Sequence[str], strength: float
) -> list[np.ndarray]:
    """Each question's unit probabilities from the unit model fitted on the other folds."""
    predictions: list[np.ndarray] = [np.zeros(len(e.reading.candidates)) for e in examples]
    for fold in sorted(set(fold_of)):
        train = [
            ([c.features for c in e.reading.candidates], e.labels)
            for e, f in zip(examples, fold_of, strict=True)
            if f != fold
        ]
        model = AnswerModel(fit_choice(train, names, strength), EMPTY, EMPTY, COMPANION)
        for index, (example, f) in enumerate(zip(examples, fold_of, strict=True)):
            if f == fold:
                model.rank(example.reading)
                predictions[index] = np.asarray([c.probability for c in example.reading.candidates])
    return predictions


def choice_loss(examples: Sequence[Example], predictions: Sequence[np.ndarray]) -> float:
    """Mean -log of the probability mass put on the answering units, over questions that have one."""
    losses = [
        -math.log(max(float(p[e.labels].sum()), 1e-9))
        for e, p in zip(examples, predictions, strict=True)
        if e.labels.any()
    ]
    return sum(losses) / len(losses)


def ranked_with(example: Example, probabilities: np.ndarray) -> list[Candidate]:
    for candidate, probability in zip(example.reading.candidates, probabilities, strict=True):
        candidate.probability = float(probability)
    return sorted(example.reading.candidates, key=lambda c: -c.probability)


def request_rows(
    examples: Sequence[Example], unit_probabilities: Sequence[np.ndarray]
) -> tuple[list[dict[str, float]], np.ndarray]:
    """Per question, the request model's features and its target: the extractive answer is right."""
    rows, targets = [], []
    for example, probabilities in zip(examples, unit_probabilities, strict=True):
        ranked = ranked_with(example, probabilities)
        rows.append(ranked_request_features(example.reading, ranked))
        targets.append(float(answer_outcome(example, ranked, True).correct))
    return rows, np.asarray(targets)


def out_of_fold_requests(
    rows: Sequence[dict[str, float]], y: np.ndarray, fold_of: Sequence[int], names: Sequence[str], strength: float
) -> np.ndarray:
    predictions = np.zeros(len(rows))
    for fold in sorted(set(fold_of)):
        train = [i for i, f in enumerate(fold_of) if f != fold]
        test = [i for i, f in enumerate(fold_of) if f == fold]
        model = fit_logistic([rows[i] for i in train], y[train], names, strength)
        predictions[test] = model.probabilities([rows[i] for i in test])
    return predictions


# --- the answer a choice gives ---------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    answered: bool
    correct: bool
    citations: int
    valid_citations: int


def answer_outcome(
    example: Example, ranked: Sequence[Candidate], answered: bool, companion: float = COMPANION
) -> Outcome:
    """What answering with the best unit (and its companions) scores, as `carrag eval-answers` scores it."""
    from carrag.services.answers.extractive import chosen_units

    if not answered or not ranked:
        return Outcome(False, False, 0, 0)
    chosen = chosen_units(ranked, companion)
    text = " ".join(candidate.unit.display for candidate in chosen)
    question = example.question
    cited = {candidate.source for candidate in chosen}
    valid = sum(
        any(contains_phrase(example.reading.passages[source].text, e) for e in question.evidence) for source in cited
    )
    return Outcome(
        True,
        question.answerable and is_correct(text, question.accepted),
        len(cited) if question.answerable else 0,
        valid if question.answerable else 0,
    )


@dataclass(slots=True)
class Scores:
    answerable: int
    correct: int
    refused_answerable: int
    unanswerable: int
    refused_unanswerable: int
    citations: int
    valid_citations: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.answerable if self.answerable else 0.0

    @property
    def utility(self) -> int:
        return self.correct + self.refused_unanswerable

    def line(self) -> str:
        validity = self.valid_citations / self.citations if self.citations else 0.0
        refused = self.refused_unanswerable / self.unanswerable if self.unanswerable else 0.0
        false_refusals = self.refused_answerable / self.answerable if self.answerable else 0.0
        return (
            f"answerable accuracy {self.accuracy:.2f} ({self.correct}/{self.answerable}), citation validity "
            f"{validity:.2f} ({self.valid_citations}/{self.citations}), unanswerable refused {refused:.2f} "
            f"({self.refused_unanswerable}/{self.unanswerable}), answerable refused {false_refusals:.2f} "
            f"({self.refused_answerable}/{self.answerable})"
        )


def score(
    examples: Sequence[Example],
    ranked: Sequence[list[Candidate]],
    confidence: np.ndarray,
    threshold: float,
    companion: float,
) -> Scores:
    scores = Scores(0, 0, 0, 0, 0, 0, 0)
    for example, candidates, p in zip(examples, ranked, confidence, strict=True):
        outcome = answer_outcome(example, candidates, bool(p >= threshold), companion)
        if example.question.answerable:
            scores.answerable += 1
            scores.correct += outcome.correct
            scores.refused_answerable += not outcome.answered
            scores.citations += outcome.citations
            scores.valid_citations += outcome.valid_citations
        else:
            scores.unanswerable += 1
            scores.refused_unanswerable += not outcome.answered
    return scores


# --- the command -----------------------------------------------------------------------------------


def unit_names(examples: Sequence[Example]) -> list[str]:
    return sorted({name for e in examples for c in e.reading.candidates for name in c.features})


def fit(examples: list[Example], out: Path | None) -> dict[str, Any]:
    fold_of = folds(examples)
    names = unit_names(examples)
    labels = np.concatenate([e.labels for e in examples]).astype(np.float64)
    reachable = sum(bool(e.labels.any()) for e in examples)
    answerable = sum(e.question.answerable for e in examples)
    print(
        f"{len(examples)} questions ({answerable} answerable, {len(examples) - answerable} not) over "
        f"{len({e.group for e in examples})} documents; {len(labels)} units, {int(labels.sum())} holding an answer; "
        f"a unit holds the answer for {reachable}/{answerable} answerable questions"
    )
    best = None
    for strength in STRENGTHS:
        oof = out_of_fold_units(examples, fold_of, names, strength)
        loss = choice_loss(examples, oof)
        top1 = sum(bool(e.labels[int(np.argmax(p))]) for e, p in zip(examples, oof, strict=True) if len(p))
        print(
            f"  unit model C={strength}: out-of-fold log loss {loss:.4f}, best unit holds the answer {top1}/{reachable}"
        )
        if best is None or loss < best[0]:
            best = (loss, strength)
    assert best is not None
    _, unit_strength = best
    # Again at the chosen strength: each pass leaves its scores on the candidates, and the request
    # models read the best unit's score (``best_score``) as the service will compute it.
    oof = out_of_fold_units(examples, fold_of, names, unit_strength)
    ranked = [ranked_with(e, p) for e, p in zip(examples, oof, strict=True)]
    rows, targets = request_rows(examples, oof)
    answerable_targets = np.asarray([float(e.question.answerable) for e in examples])
    request_names = sorted({name for row in rows for name in row})
    fitted = {}
    for name, y in (("request", targets), ("answerable", answerable_targets)):
        losses = {
            strength: (log_loss(p, y), p)
            for strength in STRENGTHS
            for p in [out_of_fold_requests(rows, y, fold_of, request_names, strength)]
        }
        strength = min(losses, key=lambda s: losses[s][0])
        print(f"{name} model C={strength}: out-of-fold log loss {losses[strength][0]:.4f}")
        fitted[name] = (strength, losses[strength][1])
    confidence = (fitted["request"][1] + fitted["answerable"][1]) / 2
    threshold = AnswerModel.threshold
    cross_validated = score(examples, ranked, confidence, threshold, COMPANION)
    print(f"answered when P(right) >= 1 - P(answerable); companions at p >= {COMPANION}")
    print(f"cross-validated by document: {cross_validated.line()}")
    by_kind: dict[str, list[int]] = {}
    for example, candidates, p in zip(examples, ranked, confidence, strict=True):
        if example.question.answerable:
            outcome = answer_outcome(example, candidates, bool(p >= threshold))
            tally = by_kind.setdefault(example.question.kind, [0, 0])
            tally[0] += outcome.correct
            tally[1] += 1
    print("  by kind: " + ", ".join(f"{kind} {c}/{n}" for kind, (c, n) in sorted(by_kind.items())))

    # The written unit model is the conditional logit the folds measured (fitted on every question).
    unit_model = fit_choice(
        [([c.features for c in e.reading.candidates], e.labels) for e in examples], names, unit_strength
    )
    # The request model is fitted on out-of-fold unit probabilities: at query time the unit model meets
    # questions it was not fitted on, and its probabilities on its own training questions are too sure.
    request_model = fit_logistic(rows, targets, request_names, fitted["request"][0])
    answerable_model = fit_logistic(rows, answerable_targets, request_names, fitted["answerable"][0])
    document = {
        "unit": _logistic_json(unit_model),
        "request": _logistic_json(request_model),
        "answerable": _logistic_json(answerable_model),
        "companion": COMPANION,
        "fitted_on": {
            "questions": len(examples),
            "answerable": answerable,
            "documents": len({e.group for e in examples}),
            "unit_strength": unit_strength,
            "request_strength": fitted["request"][0],
            "answerable_strength": fitted["answerable"][0],
            "cross_validated": asdict(cross_validated),
        },
    }
    if out is not None:
        out.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {out}")
    return document


def _logistic_json(model: Logistic) -> dict[str, Any]:
    return {
        "names": list(model.names),
        "mean": [round(float(v), 6) for v in model.mean],
        "scale": [round(float(v), 6) for v in model.scale],
        "weights": [round(float(v), 6) for v in model.weights],
        "bias": round(model.bias, 6),
    }


class StoredEmbeddings(EmbeddingService):
    """The embedding service with its vectors kept in a file between fits (``--cache``)."""

    def __init__(self, backend: Any, path: Path | None) -> None:
        super().__init__(backend)
        self.path = path
        self.stored: dict[str, np.ndarray] = {}
        if path is not None and path.is_file():
            with np.load(path) as data:
                self.stored = dict(zip(json.loads(str(data["texts"])), data["vectors"], strict=True))

    async def embed_documents(self, texts: Sequence[str], progress: Any = None) -> Any:
        missing = [text for text in dict.fromkeys(texts) if text not in self.stored]
        if missing:
            self.stored.update(zip(missing, np.asarray(await super().embed_documents(missing, progress)), strict=True))
        return np.stack([self.stored[text] for text in texts])

    async def embed_query(self, text: str) -> Any:
        key = "query: " + text
        if key not in self.stored:
            self.stored[key] = np.asarray(await super().embed_query(text))
        return self.stored[key]

    def save(self) -> None:
        if self.path is not None:
            texts = list(self.stored)
            np.savez(self.path, texts=json.dumps(texts), vectors=np.stack([self.stored[t] for t in texts]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, nargs="+", default=[QUESTIONS])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    parser.add_argument("--cache", type=Path, default=None, help="directory keeping the passages and embeddings")
    args = parser.parse_args(argv)
    questions = [q for path in args.questions for q in load_questions(path)]
    if args.cache is not None:
        args.cache.mkdir(parents=True, exist_ok=True)
    found = load_or_retrieve(questions, args.root, args.cache / "passages.json" if args.cache else None)

    async def readings() -> list[Example]:
        from carrag.services.container import build_embedding_backend
        from carrag.services.settings import Settings

        backend = build_embedding_backend(Settings())  # the configured embedder, as the service uses it
        embedder = StoredEmbeddings(backend, args.cache / "embeddings.npz" if args.cache else None)
        examples = await build_examples(questions, found, embedder)
        embedder.save()
        return examples

    examples = asyncio.run(readings())
    fit(examples, args.out)


if __name__ == "__main__":
    main()
