"""The collection API on an Elasticsearch-backed container (the session's real node): the same
scenarios as on SQLite (tests/api/test_collections.py)."""

# ruff: noqa: F811  (fixtures imported from the end-to-end suite are parameters here)
from __future__ import annotations

import pytest

from tests.api.test_collections import (
    chat_completions_take_a_collection,
    create_list_rename_delete,
    documents_live_in_their_collection,
)
from tests.api.test_elasticsearch_end_to_end import api, es_settings  # noqa: F401

pytestmark = pytest.mark.elasticsearch


async def test_create_list_rename_delete_on_elasticsearch(es_settings, embedding_backend) -> None:
    async with api(es_settings(), embedding_backend) as (client, _):
        await create_list_rename_delete(client)


async def test_documents_live_in_their_collection_on_elasticsearch(es_settings, embedding_backend) -> None:
    async with api(es_settings(), embedding_backend) as (client, container):
        await documents_live_in_their_collection(client, container)


async def test_chat_completions_take_a_collection_on_elasticsearch(es_settings, embedding_backend) -> None:
    async with api(es_settings(), embedding_backend) as (client, _):
        await chat_completions_take_a_collection(client)
