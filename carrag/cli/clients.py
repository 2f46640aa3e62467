"""The client a command is given: the local store in this process or a server's HTTP API, with the same
methods over the API's wire types (mypy checks every call against both)."""

from __future__ import annotations

from typing import TypeAlias

from carrag.cli.http_client import HttpClient
from carrag.cli.local_client import LocalClient

CarragClient: TypeAlias = HttpClient | LocalClient
