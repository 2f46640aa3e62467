"""The answer model's refusal: answered when the best unit is as likely to be right as a refusal is."""

from __future__ import annotations

import numpy as np

from carrag.services.answers.features import Candidate, Passage, Reading
from carrag.services.answers.model import AnswerModel, Logistic
from carrag.services.answers.units import Unit


def constant(probability: float) -> Logistic:
    """A logistic model that gives ``probability`` whatever it reads."""
    return Logistic((), np.zeros(0), np.ones(0), np.zeros(0), float(np.log(probability / (1 - probability))))


def model(right: float, answerable: float) -> AnswerModel:
    return AnswerModel(constant(0.5), constant(right), constant(answerable), companion=0.5)


def reading() -> tuple[Reading, list[Candidate]]:
    candidate = Candidate(0, Unit("sentence", 0, 10, "Port 8080."), {})
    found = Reading("Which port?", [Passage("Port 8080.")], [candidate])
    return found, [candidate]


def test_a_probably_answerable_question_is_answered_though_the_best_unit_is_unsure() -> None:
    """P(right) 0.3 against P(unanswerable) 0.1: answering is right more often than refusing."""
    found, ranked = reading()
    confidence = model(right=0.3, answerable=0.9).confidence(found, ranked)
    assert abs(confidence - 0.6) < 1e-9 and confidence >= AnswerModel.threshold


def test_a_probably_unanswerable_question_is_refused_though_the_best_unit_looks_likely() -> None:
    """P(right) 0.4 against P(unanswerable) 0.7: refusing is right more often."""
    found, ranked = reading()
    assert model(right=0.4, answerable=0.3).confidence(found, ranked) < AnswerModel.threshold


def test_no_unit_no_confidence() -> None:
    found, _ = reading()
    assert model(right=0.9, answerable=0.9).confidence(found, []) == 0.0
