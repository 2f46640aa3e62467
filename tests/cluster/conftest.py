"""A 3-node Elasticsearch cluster on loopback (tests/es_harness `start_cluster`), one per session of
the cluster tests. They are marked `elasticsearch` and `slow`, so `make test-fast` skips them."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def es_cluster():
    from tests.es_harness import node as es_node

    try:
        cluster = es_node.start_cluster(3)
    except es_node.HarnessError as exc:
        if os.environ.get("CARRAG_REQUIRE_ES") == "1":
            pytest.fail(f"CARRAG_REQUIRE_ES=1 but the Elasticsearch cluster could not start: {exc}", pytrace=False)
        pytest.skip(f"Elasticsearch cluster unavailable: {exc}")
    yield cluster
    cluster.stop()
