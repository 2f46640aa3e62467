"""Carrag: a self-hosted retrieval-augmented generation service.

`carrag.services` does the work (no HTTP in it), `carrag.api` is the HTTP surface and web UI,
`carrag.cli` the `carrag` command line, `carrag.bench` the evaluation and benchmark tools.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("carrag")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
