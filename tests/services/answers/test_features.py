"""Unit features that must not depend on the process: the same request gives the same features."""

from __future__ import annotations

import os
import subprocess
import sys

from carrag.services.answers.features import _rare_coverage

QUESTION_TERMS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
EQUAL_WEIGHTS = dict.fromkeys(QUESTION_TERMS, 1.0)


def test_among_equally_rare_terms_the_rarer_half_is_the_questions_first_terms() -> None:
    """It was the first half of a set, whose order changes with the hash seed: the same question over the
    same units scored 0, 1/3 or 1 from one process to the next (and the fit's cross-validation moved with it)."""
    assert _rare_coverage(QUESTION_TERMS, {"alpha", "beta", "gamma"}, EQUAL_WEIGHTS) == 1.0
    assert _rare_coverage(QUESTION_TERMS, {"delta", "epsilon", "zeta"}, EQUAL_WEIGHTS) == 0.0


def test_the_feature_is_the_same_under_every_hash_seed() -> None:
    code = (
        "from carrag.services.answers.features import _rare_coverage;"
        f"print(_rare_coverage({QUESTION_TERMS!r}, {{'alpha', 'beta'}}, {EQUAL_WEIGHTS!r}))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in range(6)
    }
    assert len(seen) == 1, seen


async def test_a_units_standing_among_the_requests_units_shares_its_rank_with_equals(read) -> None:
    found = await read(
        "What is the default listen backlog of the rsync daemon?",
        ["The listen backlog of the daemon defaults to 5. The port defaults to 873. Logs go to syslog."],
    )
    by_text = {candidate.unit.text: candidate.features for candidate in found.candidates}
    assert by_text["The listen backlog of the daemon defaults to 5."]["coverage_top"] == 1.0
    lowest = min(features["coverage"] for features in by_text.values())
    tied = [features["coverage_top"] for features in by_text.values() if features["coverage"] == lowest]
    assert len(set(tied)) == 1 and tied[0] < 1.0
