"""The fitting of the answer model: logistic regression, folds by document, the committed weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

from carrag.bench.answer_fitting import (
    STRENGTHS,
    Example,
    _log_sum_exp,
    fit,
    fit_choice,
    fit_logistic,
    folds,
    out_of_fold_units,
)
from carrag.bench.answer_questions import Question
from carrag.services.answers.features import Candidate, Passage, Reading, read_passages
from carrag.services.answers.model import MODEL_FILE, AnswerModel, load_model, ranked_request_features
from carrag.services.answers.units import Unit
from carrag.services.embedders.service import EmbeddingService


def test_logistic_regression_finds_the_separating_feature() -> None:
    rng = np.random.default_rng(7)
    signal, noise = rng.normal(size=400), rng.normal(size=400)
    rows = [{"signal": float(s), "noise": float(n)} for s, n in zip(signal, noise, strict=True)]
    y = (signal + 0.3 * rng.normal(size=400) > 0).astype(float)
    model = fit_logistic(rows, y, ["signal", "noise"], strength=1.0)
    assert abs(model.weights[0]) > 5 * abs(model.weights[1])
    predicted = model.probabilities(rows) > 0.5
    assert (predicted == y.astype(bool)).mean() > 0.85


def test_the_ranker_loss_stays_finite_when_the_answering_units_lie_far_behind_the_best() -> None:
    """The answering units' log-sum-exp is taken about their own maximum: shifted by the request's best
    score instead, exp() of units 800 behind is 0.0 and the fit died with "math domain error"."""
    scores = np.array([0.0, -800.0, -801.0])
    assert _log_sum_exp(scores[1:]) == pytest.approx(-800.0 + math.log(1 + math.exp(-1)))
    assert _log_sum_exp(scores) == pytest.approx(0.0)


def example(document: str, index: int) -> Example:
    question = Question(f"q{index}", (document,), "Q?", False, "unanswerable")
    return Example(question, Reading("Q?", [], []), np.zeros(0, dtype=bool), group=hash(document) % 1000)


def test_every_question_of_a_document_is_in_one_fold() -> None:
    examples = [example(f"doc{i % 7}", i) for i in range(40)]
    fold_of = folds(examples, count=5)
    by_document: dict[int, set[int]] = {}
    for item, fold in zip(examples, fold_of, strict=True):
        by_document.setdefault(item.group, set()).add(fold)
    assert all(len(found) == 1 for found in by_document.values())
    assert len(set(fold_of)) == 5


async def test_the_committed_model_reads_the_features_the_service_computes(embedding_backend) -> None:
    """The weights name exactly the features `read_passages` produces: a feature renamed or added without a
    refit (`python -m carrag.bench.answer_fitting`) fails here."""
    model = load_model()
    assert MODEL_FILE.is_file() and 0 < model.threshold < 1
    passage = "# Ports\n\nThe server listens on port 8080.\n\n| Name | Port |\n|---|---|\n| admin | 9090 |"
    reading = await read_passages(
        "Which port does the server listen on?", [Passage(passage)], EmbeddingService(embedding_backend)
    )
    assert set(model.unit.names) == set(reading.candidates[0].features)
    ranked = model.rank(reading)
    assert set(model.request.names) == set(ranked_request_features(reading, ranked))
    assert abs(sum(candidate.probability for candidate in ranked) - 1) < 1e-6


def ranked_example(index: int, rng: np.random.Generator) -> Example:
    """Six units of one passage; the one with the highest ``signal`` answers. ``crowd`` is the same for every
    unit of a request and higher where a request has more answering-looking units (a per-request constant)."""
    signal = rng.normal(size=6)
    best = int(np.argmax(signal + 0.5 * rng.normal(size=6)))
    values = [f"value{index}x{unit}" for unit in range(6)]
    text = " ".join(f"{value}." for value in values)
    crowd = float(rng.normal())
    candidates = [
        Candidate(0, Unit("sentence", 0, len(text), f"{value}."), {"signal": float(s), "crowd": crowd})
        for value, s in zip(values, signal, strict=True)
    ]
    question = Question(f"q{index}", (f"doc{index % 10}",), "Which?", True, "factoid", (values[best],), (values[best],))
    labels = np.arange(6) == best
    return Example(question, Reading("Which?", [Passage(text)], candidates), labels, group=index % 10)


def test_the_written_unit_model_is_the_conditional_logit_the_folds_measured() -> None:
    """The folds measured a conditional logit; the written model was a per-unit logistic regression, whose
    scores (and the probabilities the request model and threshold read) were not the ones cross-validated."""
    rng = np.random.default_rng(3)
    examples = [ranked_example(index, rng) for index in range(60)]
    document = fit(examples, out=None)
    written = AnswerModel.from_json(document)
    measured = fit_choice(
        [([c.features for c in e.reading.candidates], e.labels) for e in examples],
        ["crowd", "signal"],
        document["fitted_on"]["unit_strength"],
    )
    assert list(written.unit.names) == ["crowd", "signal"]
    assert np.allclose(written.unit.weights, measured.weights, atol=1e-4)
    assert written.unit.weights[1] > 0 and abs(written.unit.weights[0]) < 1e-6


def test_the_request_models_read_the_unit_scores_of_the_chosen_strength() -> None:
    """Each strength tried left its scores on the candidates, and the request models were fitted on the
    last one tried (the strongest) while the service computes ``best_score`` with the chosen one."""
    rng = np.random.default_rng(5)
    examples = [ranked_example(index, rng) for index in range(60)]
    document = fit(examples, out=None)
    chosen = document["fitted_on"]["unit_strength"]
    assert chosen != STRENGTHS[-1], "the data must choose another strength than the last one tried"
    fold_of = folds(examples)
    left = [[c.score for c in e.reading.candidates] for e in examples]
    out_of_fold_units(examples, fold_of, ["crowd", "signal"], chosen)
    assert left == [[c.score for c in e.reading.candidates] for e in examples]
