"""Domain errors. `carrag/api/errors.py` maps each family onto one HTTP status; services never import HTTP."""

from __future__ import annotations


class CarragError(Exception):
    """Base class. ``message`` is safe to show to API clients."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- the caller's fault (4xx) ---------------------------------------------------------------------
class InvalidInput(CarragError):
    """Input that can never succeed as given (400)."""


class UnsupportedFormat(InvalidInput):
    pass


class EmptyDocument(InvalidInput):
    pass


class NoExtractableText(InvalidInput):
    pass


class MissingDependency(InvalidInput):
    """A format whose optional parser library is not installed."""


class PayloadTooLarge(CarragError):
    """413."""


class NotFound(CarragError):
    """404."""


class FetchRefused(InvalidInput):
    """A URL the fetcher will not contact (scheme, private address, ...)."""


class Conflict(CarragError):
    """409: the request clashes with the store's state."""


class EmbeddingModelMismatch(Conflict):
    def __init__(self, stored: str, current: str) -> None:
        super().__init__(
            f"The store was built with embedding model {stored}, but the configured embedder is "
            f"{current}. Vectors from different models cannot be compared. Either configure the "
            "original model again, or empty the store and re-ingest with the new one: `carrag reset` "
            "(CLI) or POST /admin/reset (API), then ingest again; or keep the documents and re-embed "
            "them: `carrag reindex` or POST /admin/reindex."
        )
        self.stored = stored
        self.current = current


class Overloaded(CarragError):
    """429: too much work queued; retry later."""


# --- someone else's fault (5xx) -------------------------------------------------------------------
class UpstreamError(CarragError):
    """An outside service answered badly (502)."""


class FetchFailed(UpstreamError):
    """The remote web server could not be reached or answered with an error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status the server answered with, when it answered

    @property
    def gone(self) -> bool:
        """The page is not there (404, 410): a crawl deletes what it held of it."""
        return self.status in (404, 410)


class DependencyUnavailable(CarragError):
    """A component we need (store, embedder, LLM) is down or timed out (503)."""

    def __init__(self, component: str, message: str) -> None:
        super().__init__(f"{component} unavailable: {message}")
        self.component = component


class NotRetryable(DependencyUnavailable):
    """The component failed in a way the same request will meet again (a refused key, an unknown
    model, a rejected request, or the adapter has already retried): callers that retry give up (503)."""


class Forbidden(CarragError):
    """403: the API key may not do this (API_KEY_SCOPES: another collection, or read-only)."""
