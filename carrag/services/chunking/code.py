"""Code chunking: split at new units at the block's body indentation (after a blank line, a definition,
a ``;`` statement, a YAML block key), keeping comments and decorators with their definition; longer units
one indentation level down, then by lines, then characters; merged back like every strategy. A chunk's
`section` is the path of definitions enclosing its start.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from carrag.services.chunking.recursive import atomise
from carrag.services.chunking.spans import Span, merge_atoms, spans_to_chunks
from carrag.services.models import Chunk, PageSpan

DEFINITION = re.compile(
    r"(?:(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function\*?|interface|enum|type|namespace|module)\b"
    r"|(?:export|const|let|var)\s"
    r"|(?:public|private|protected|static)\s"
    r"|@\w"
    r"|\[{1,2}[\w.\-\"' ]+\]{1,2}\s*$"
    r"|(?i:create|alter|drop|insert|update|delete|select|with|grant|begin|comment\s+on)\b)"
)
BLOCK_KEY = re.compile(r"[\w\-\"'.]+\s*:\s*(?:#.*)?$")  # a YAML mapping key that opens a block
NOT_KEYS = {"else", "try", "finally", "except", "do", "default"}
COMMENT = re.compile(r"(?:#|//|--|/\*|\*|;)")
SECTION_SEPARATOR = " > "
LABEL_LENGTH = 80
_MAX_LOOKBACK_LINES = 5000
_NAMED_DEFINITION = re.compile(
    r"(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function\*?|interface|enum|namespace|module)\b"
    r"|\[{1,2}[\w.\-\"' ]+\]{1,2}\s*$"
    r"|(?i:create\s+(?:or\s+replace\s+)?(?:temporary\s+|temp\s+|unique\s+)?\w+)\b"
)


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int  # without the newline
    indent: int  # -1 for a blank line
    code: str  # the line without its indentation


def _lines(text: str, start: int, end: int) -> list[_Line]:
    lines: list[_Line] = []
    position = start
    while position < end:
        newline = text.find("\n", position, end)
        line_end = end if newline == -1 else newline
        raw = text[position:line_end]
        code = raw.lstrip(" \t")
        indent = -1 if not code.strip() else len(raw.expandtabs(4)) - len(code.expandtabs(4))
        lines.append(_Line(position, line_end, indent, code.rstrip()))
        position = line_end + 1
    return lines


def _starts_unit(lines: Sequence[_Line], index: int, indent: int) -> bool:
    line = lines[index]
    if line.indent != indent:
        return False
    previous = lines[index - 1]
    if previous.indent == -1:
        return True
    if previous.indent == indent and (COMMENT.match(previous.code) or previous.code.startswith("@")):
        return False  # a comment or decorator belongs to what follows it
    if previous.indent == indent and previous.code.endswith(";"):
        return True
    if BLOCK_KEY.match(line.code) and line.code.split(":", 1)[0].strip() not in NOT_KEYS:
        return True
    return bool(DEFINITION.match(line.code))


def _structural_pieces(text: str, start: int, end: int) -> list[Span]:
    """Split ``[start, end)`` into units at its body indentation; one piece when there are none."""
    lines = _lines(text, start, end)
    body = [line.indent for line in lines[1:] if line.indent >= 0]
    if not body:
        return [(start, end)]
    indent = min(body)
    cuts = [lines[i].start for i in range(1, len(lines)) if _starts_unit(lines, i, indent)]
    if not cuts:
        cuts = [lines[i].start for i in range(1, len(lines)) if lines[i].indent >= 0 and lines[i - 1].indent == -1]
    bounds = [start, *cuts, end]
    return [(a, b) for a, b in itertools.pairwise(bounds) if a < b]


def code_atoms(text: str, start: int, end: int, size: int, depth: int = 0) -> list[Span]:
    """Spans of at most ``size`` characters that tile ``text[start:end]``, cut on code structure."""
    if end - start <= size:
        return [(start, end)]
    pieces = _structural_pieces(text, start, end) if depth < 8 else [(start, end)]
    if len(pieces) == 1:
        return atomise(text, start, end, size, ("\n", " "))
    atoms: list[Span] = []
    for piece_start, piece_end in pieces:
        atoms.extend(code_atoms(text, piece_start, piece_end, size, depth + 1))
    return atoms


def _label(code: str) -> str:
    label = code.split("(", 1)[0] if "(" in code else code.rstrip(":{ ")
    label = re.sub(r"\s+", " ", label).strip()
    return label[:LABEL_LENGTH]


def definition_paths(text: str, starts: Sequence[int]) -> list[str | None]:
    """For each offset, the definitions whose blocks contain it, outermost first: walking up from
    the offset's line, each less indented line is an enclosing header; the named ones count."""
    lines = _lines(text, 0, len(text))
    line_starts = [line.start for line in lines]
    paths: list[str | None] = []
    for offset in starts:
        index = max(bisect.bisect_right(line_starts, offset) - 1, 0)
        while index + 1 < len(lines) and lines[index].code.startswith("@"):
            index += 1  # a decorator: name the definition it decorates
        chain: list[str] = []
        ceiling = lines[index].indent
        if ceiling >= 0 and _NAMED_DEFINITION.match(lines[index].code):
            chain.append(_label(lines[index].code))
        for earlier in range(index - 1, max(index - _MAX_LOOKBACK_LINES, -1), -1):
            if ceiling <= 0:
                break
            line = lines[earlier]
            if 0 <= line.indent < ceiling and not line.code.startswith((")", "]", "}")):
                ceiling = line.indent
                if _NAMED_DEFINITION.match(line.code):
                    chain.append(_label(line.code))
        paths.append(SECTION_SEPARATOR.join(reversed(chain)) or None)
    return paths


def _overlap_from_line_starts(text: str, spans: list[Span]) -> list[Span]:
    """Begin each overlap at a whole line where one starts inside it, not mid-line."""
    adjusted = spans[:1]
    for start, end in spans[1:]:
        if start > 0 and text[start - 1] != "\n":
            newline = text.find("\n", start, end)
            if newline != -1 and newline + 1 < adjusted[-1][1]:
                start = newline + 1
        adjusted.append((start, end))
    return adjusted


def chunk_code(text: str, size: int, overlap: int, page_spans: Sequence[PageSpan] = ()) -> list[Chunk]:
    spans = merge_atoms(text, code_atoms(text, 0, len(text), size), size, overlap)
    spans = _overlap_from_line_starts(text, spans)
    chunks = spans_to_chunks(text, spans, page_spans)
    # A chunk is about what follows its overlap: label it from where the previous chunk ended.
    own_starts = [chunks[0].char_start] if chunks else []
    for previous, chunk in itertools.pairwise(chunks):
        position = max(chunk.char_start, previous.char_end)
        while position < chunk.char_end - 1 and text[position].isspace():
            position += 1
        own_starts.append(position)
    for chunk, section in zip(chunks, definition_paths(text, own_starts), strict=True):
        chunk.section = section
    return chunks
