"""Identifiers. Document ids are random (UUID v4, seed 001 step 3); chunk ids are derived from them
so that writing the same chunk twice can never create a duplicate."""

from __future__ import annotations

import hashlib
import uuid


def new_document_id() -> str:
    return str(uuid.uuid4())


def chunk_id(document_id: str, chunk_index: int) -> str:
    return hashlib.sha256(f"{document_id}:{chunk_index}".encode()).hexdigest()[:32]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
