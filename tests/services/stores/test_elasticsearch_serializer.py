"""The Elasticsearch client's JSON goes through orjson (`connection.py`, OrjsonFirstSerializer): the same
bodies and the same decoded responses as the standard library's serializer, only cheaper; what
orjson refuses to encode goes to the standard library as before. No node needed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from elasticsearch.serializer import JsonSerializer

from carrag.services.stores.elasticsearch.connection import Connection, OrjsonFirstSerializer, client_options

JSON_TYPES = ("application/json", "application/vnd.elasticsearch+json")


def test_the_store_client_and_the_bench_raw_client_decode_and_encode_with_orjson() -> None:
    client = Connection("http://127.0.0.1:9200").client
    for mimetype in JSON_TYPES:  # responses come as the compatibility type: both must be orjson's
        assert isinstance(client.transport.serializers.get_serializer(mimetype), OrjsonFirstSerializer)
    assert isinstance(client_options()["serializer"], OrjsonFirstSerializer)  # carrag/bench/es_store.py's raw client


def test_a_knn_request_round_trips_to_the_same_floats() -> None:
    vector = np.random.default_rng(3).normal(size=384).astype(np.float32)
    body = {"knn": {"field": "embedding", "query_vector": vector.tolist(), "k": 15, "filter": []}, "size": 15}
    ours, theirs = OrjsonFirstSerializer().dumps(body), JsonSerializer().dumps(body)
    assert json.loads(ours) == json.loads(theirs) == body
    assert np.array_equal(np.asarray(json.loads(ours)["knn"]["query_vector"], dtype=np.float32), vector)


def test_a_response_decodes_as_the_standard_library_does() -> None:
    response = json.dumps(
        {
            "took": 3,
            "hits": {
                "total": {"value": 2, "relation": "eq"},
                "max_score": 1.2345678901234567,
                "hits": [
                    {"_id": "a", "_score": 1.2345678901234567, "_source": {"text": "Ölwechsel — 5 l ✓", "pages": [1]}},
                    {"_id": "b", "_score": 0.1, "_seq_no": 2**40, "_source": {"text": "", "title": None}},
                ],
            },
        },
        ensure_ascii=False,
    ).encode()
    assert OrjsonFirstSerializer().loads(response) == JsonSerializer().loads(response)
    assert OrjsonFirstSerializer().loads(b"") is None  # an empty body, as the client's own serializer


@pytest.mark.parametrize(
    "body",
    [
        {"source_id": "bad-\udcff-name.txt"},  # a lone surrogate (a file name decoded with surrogateescape)
        {1: "a non-string key"},
        {"big": 2**70},
    ],
)
def test_what_orjson_refuses_is_encoded_by_the_standard_library(body: dict[object, object]) -> None:
    assert OrjsonFirstSerializer().dumps(body) == JsonSerializer().dumps(body)
