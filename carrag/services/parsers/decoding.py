"""Bytes → text when the declared charset may be wrong, unknown (``utf8mb4``, typos) or missing: the
declared one if Python knows it and it decodes cleanly, else a BOM, strict UTF-8, charset-normalizer,
and last UTF-8 with replacement characters. It never raises on bad input.
"""

from __future__ import annotations

import codecs

# Names that are not Python codec names but whose meaning is certain.
CHARSET_ALIASES = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf-8mb4": "utf-8",
    "unicode-1-1-utf-8": "utf-8",
    "x-sjis": "shift_jis",
    "x-euc-jp": "euc_jp",
    "iso-8859-8-i": "iso-8859-8",
}
# Single-byte code pages for Latin scripts (Python's canonical names).
LATIN_CODE_PAGES = {
    "cp1250",
    "cp1252",
    "cp1254",
    "cp1257",
    "latin-1",
    "iso8859-1",
    "iso8859-2",
    "iso8859-3",
    "iso8859-4",
    "iso8859-9",
    "iso8859-10",
    "iso8859-13",
    "iso8859-14",
    "iso8859-15",
    "iso8859-16",
    "mac-roman",
    "mac-latin2",
    "cp850",
    "cp437",
}
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"))
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def known_codec(charset: str | None) -> str | None:
    """The Python codec for a declared charset, or None when Python does not know it."""
    if not charset:
        return None
    name = charset.strip().strip("\"'").lower()
    name = CHARSET_ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except (LookupError, ValueError):
        return None


def decode_declared(data: bytes, charset: str | None) -> tuple[str, str]:
    """``(text, encoding used)``: the declared charset if it is known and fits, else detection."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", errors="replace"), "utf-16"
    declared = known_codec(charset)
    if declared is not None:
        try:
            return data.decode(declared), declared
        except UnicodeDecodeError:
            pass  # the declaration is wrong for these bytes
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    detected = detect_encoding(data)
    if detected is not None:
        return data.decode(detected, errors="replace"), detected
    return data.decode(declared or "utf-8", errors="replace"), declared or "utf-8"


def detect_encoding(data: bytes) -> str | None:
    """charset-normalizer's best guess; among the Latin-script code pages, which it cannot tell
    apart on short texts, Windows-1252 (the fallback of browsers) when it decodes the bytes."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a dependency of Carrag (and of httpx), always installed
        return None
    best = from_bytes(data[:262144]).best()
    if best is None:
        return None
    if codecs.lookup(best.encoding).name in LATIN_CODE_PAGES:
        try:
            data.decode("cp1252")
        except UnicodeDecodeError:
            return best.encoding
        return "cp1252"
    return best.encoding
