"""The Elasticsearch store adapter, one idea per module:

- `store.py`: the `Store` port (lifecycle, writes handed to the batcher), delegating to
  `reads.py` (the plumbing of every read), `document_reads.py` (documents and their chunks),
  `search_legs.py` (the BM25 and kNN legs, neighbour windows), `collections.py`, `originals.py`;
- `versions.py`: the visibility protocol, writer's side (a version becomes visible, is replaced, is
  deleted); `live_filter.py`: its reader's side (which search hits are live); `sweep.py`: abandoned
  versions removed;
- `served_identity.py`: the searches' model check, kept per concrete index;
- `batching.py`: concurrent writes gathered into bulk requests;
- `layout.py`: the alias and its concrete index generations, the embedding identity;
- `reindex.py`: re-embedding into a new generation and swapping the alias;
- `mapping.py`: the index mapping and the JSON of each kind of document;
- `queries.py`: filters, glob translation, the search legs' requests;
- `metadata.py`: tags, title and user metadata changed in place; `integrity.py`: the integrity check;
- `connection.py`: the client, error mapping and bulk requests; `jobs.py`: the ingest jobs' records.
"""

from carrag.services.stores.elasticsearch.layout import SUPPORTED_MAJOR
from carrag.services.stores.elasticsearch.queries import glob_to_regexp
from carrag.services.stores.elasticsearch.store import ElasticsearchStore

__all__ = ["SUPPORTED_MAJOR", "ElasticsearchStore", "glob_to_regexp"]
