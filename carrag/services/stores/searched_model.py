"""Which embedding model's vectors a kNN search just searched, for stores that can tell.

The query path checks the store's model beside the search legs (`model_change.py`); on Elasticsearch
that check is answered from memory (`elasticsearch/served_identity.py`), so it can be out of date
right after another process moved the alias to an index of another model. The kNN leg then says
which model its hits' vectors are of (the concrete index they came from): `ElasticsearchStore`
sets it here, in the calling task's context, and `ModelChange.vector_search` runs the leg again
with the right model when it is not the one the query was embedded for.

None: not known (a store that cannot tell, or no hits).
"""

from __future__ import annotations

from contextvars import ContextVar

from carrag.services.models import EmbeddingIdentity

searched_model: ContextVar[EmbeddingIdentity | None] = ContextVar("searched_model", default=None)
