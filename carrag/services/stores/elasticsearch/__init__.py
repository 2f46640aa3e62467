"""The Elasticsearch store adapter; docs/architecture.md ("Elasticsearch: many writers") maps its
modules."""

from carrag.services.stores.elasticsearch.store import ElasticsearchStore

__all__ = ["ElasticsearchStore"]
