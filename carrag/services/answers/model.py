"""The answer model: which unit answers, and whether any does.

Three models over the features of ``features``, fitted on the development questions and
cross-validated by document (`python -m carrag.bench.answer_fitting`, which writes
``answer_model.json`` beside this module and prints the cross-validated scores):

- the **unit model** (a conditional logit) scores each candidate unit; the softmax of the scores over the
  request's units is the probability that each is the one that answers;
- the **request models** read the best units' probabilities and the request's own features (a key term
  no passage mentions ...): one gives the probability that the best unit answers the question, the
  other that the documents answer it at all. A refusal costs as much as a wrong answer, so answering
  pays when P(right) ≥ P(unanswerable) = 1 − P(answerable): the ``confidence`` is the mean of the two
  probabilities, answered from 0.5 (that cost, not a tuned value). A unit of the best unit's passage
  joins it in the answer when its probability is at least ``companion`` (0.5) times the best one's.

Plain numpy, at query time and when fitting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from carrag.services.answers.features import Candidate, Reading

MODEL_FILE = Path(__file__).with_name("answer_model.json")


@dataclass(frozen=True, slots=True)
class Logistic:
    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Logistic:
        return Logistic(
            tuple(data["names"]),
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            np.asarray(data["weights"], dtype=np.float64),
            float(data["bias"]),
        )

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        return np.asarray([[row.get(name, 0.0) for name in self.names] for row in rows], dtype=np.float64)

    def logits(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        if not rows:
            return np.zeros(0)
        return ((self.matrix(rows) - self.mean) / self.scale) @ self.weights + self.bias

    def probabilities(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.logits(rows)))


def logit(probability: float) -> float:
    clipped = min(max(probability, 1e-6), 1 - 1e-6)
    return math.log(clipped / (1 - clipped))


# What the request model reads of the best unit besides its probability (more overfit the ~300 questions:
# adding its answer-type features raised the out-of-fold log loss from 0.54 to 0.56).
BEST_UNIT_FEATURES = frozenset(["cosine", "coverage", "rare_coverage", "key_terms_missing", "in_match", "rank"])


def ranked_request_features(reading: Reading, ranked: Sequence[Candidate]) -> dict[str, float]:
    """The request model's input: the best units' probabilities (as logits) and the request's features."""
    first = ranked[0].probability if ranked else 0.0
    second = ranked[1].probability if len(ranked) > 1 else 0.0
    same_source = sum(c.probability for c in ranked[:5] if ranked and c.source == ranked[0].source)
    return {
        "best": logit(first),
        "best_score": ranked[0].score if ranked else 0.0,
        "second": logit(second),
        "margin": first - second,
        "best_source_mass": same_source,
        **{
            f"best_{name}": value
            for name, value in (ranked[0].features.items() if ranked else ())
            if name in BEST_UNIT_FEATURES
        },
        **reading.request,
    }


@dataclass(frozen=True, slots=True)
class AnswerModel:
    unit: Logistic
    request: Logistic  # the best unit answers the question
    answerable: Logistic  # the documents answer it
    companion: float  # a unit quoted beside the best one has at least this share of the best one's probability
    threshold = 0.5  # the least confidence answered: P(right) ≥ 1 − P(answerable), a refusal costing a wrong answer

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> AnswerModel:
        return AnswerModel(
            Logistic.from_json(data["unit"]),
            Logistic.from_json(data["request"]),
            Logistic.from_json(data["answerable"]),
            float(data["companion"]),
        )

    def rank(self, reading: Reading) -> list[Candidate]:
        """The candidates with their scores and probabilities (the softmax of the scores over the request's
        units: the chance that each is the one that answers), most probable first."""
        scores = self.unit.logits([candidate.features for candidate in reading.candidates])
        if len(scores):
            probabilities = np.exp(scores - scores.max())
            probabilities /= probabilities.sum()
            for candidate, score, probability in zip(reading.candidates, scores, probabilities, strict=True):
                candidate.score, candidate.probability = float(score), float(probability)
        return sorted(reading.candidates, key=lambda candidate: -candidate.probability)

    def confidence(self, reading: Reading, ranked: Sequence[Candidate]) -> float:
        """The mean of the probabilities that the best unit answers the question and that the documents do."""
        if not ranked:
            return 0.0
        features = [ranked_request_features(reading, ranked)]
        return float(self.request.probabilities(features)[0] + self.answerable.probabilities(features)[0]) / 2


@cache
def load_model(path: Path = MODEL_FILE) -> AnswerModel:
    return AnswerModel.from_json(json.loads(path.read_text(encoding="utf-8")))
