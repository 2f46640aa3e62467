"""The Elasticsearch store adapter; docs/architecture.md ("Elasticsearch: many writers") maps its
modules."""

from carrag.services.stores.elasticsearch.layout import SUPPORTED_MAJOR
from carrag.services.stores.elasticsearch.queries import glob_to_regexp
from carrag.services.stores.elasticsearch.store import ElasticsearchStore

__all__ = ["SUPPORTED_MAJOR", "ElasticsearchStore", "glob_to_regexp"]
