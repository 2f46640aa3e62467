"""Identifiers. Document ids are random (UUID v4, seed 001 step 3); chunk ids are derived from them
so that writing the same chunk twice can never create a duplicate."""

from __future__ import annotations

import hashlib
import unicodedata
import uuid


def new_document_id() -> str:
    return str(uuid.uuid4())


def chunk_id(document_id: str, chunk_index: int) -> str:
    return hashlib.sha256(f"{document_id}:{chunk_index}".encode()).hexdigest()[:32]


def normalised_text(text: str) -> str:
    """Text as compared for sameness: Unicode NFKC, every run of whitespace one space, trimmed.
    Line endings, indentation and trailing blanks that differ between two exports of the same
    document do not make them different."""
    # str.split() splits on exactly what \s matches and drops it at both ends: re.sub and strip in one pass.
    return " ".join(unicodedata.normalize("NFKC", text).split())


def content_hash(text: str) -> str:
    """SHA-256 of the normalised text: equal for the same content under any source id."""
    return hashlib.sha256(normalised_text(text).encode("utf-8", errors="surrogatepass")).hexdigest()
