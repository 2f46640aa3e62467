"""The Elasticsearch store adapter, one idea per module:

- `store.py`: the `Store` port (lifecycle, writes handed to the batcher, originals, collections), built on
  `reads.py` (the plumbing of every read, the embedding model), `document_reads.py` (documents and
  their chunks) and `search_legs.py` (the BM25 and kNN legs);
- `versions.py`: the visibility protocol (how a version becomes visible, is replaced, is deleted),
  reading the live state through `live_state.py` and removing abandoned versions with `sweep.py`;
- `live_filter.py`: its reader side (which search hits may be returned);
- `served_identity.py`: the searches' model check, kept per concrete index;
- `windows.py`: the neighbours of the hits, read in the live check's multi-get (for expansion);
- `batching.py`: concurrent writes gathered into bulk requests;
- `layout.py`: the alias and its concrete index generations, the embedding identity;
- `reindex.py`: re-embedding into a new generation and swapping the alias;
- `mapping.py`: the index mapping and the JSON of each kind of document;
- `queries.py`: filters, glob translation, the search legs' requests;
- `integrity.py`: the integrity check;
- `connection.py`: the client, error mapping and bulk requests.
"""

from carrag.services.stores.elasticsearch.layout import SUPPORTED_MAJOR
from carrag.services.stores.elasticsearch.queries import glob_to_regexp
from carrag.services.stores.elasticsearch.store import ElasticsearchStore

__all__ = ["SUPPORTED_MAJOR", "ElasticsearchStore", "glob_to_regexp"]
