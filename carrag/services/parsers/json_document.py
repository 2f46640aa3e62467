"""JSON → text, pretty-printed with a 2-space indent. The standard library recurses, so nesting deeper
than `MAX_JSON_DEPTH` is refused with a 400 rather than ending in a RecursionError.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from carrag.services.errors import InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.text import decode_text

MAX_JSON_DEPTH = 200


def nesting_depth(value: Any) -> int:
    """Depth of nested arrays/objects (a scalar is 0), computed without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


# The Python types `json.loads` gives, by their JSON names.
JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def parse_json(data: bytes, filename: str) -> ParsedDocument:
    text = decode_text(data, filename)
    too_deep = f"{filename} is nested more than {MAX_JSON_DEPTH} levels deep; flatten it before ingesting."
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInput(too_deep) from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer too long to convert
        raise InvalidInput(f"{filename} is not valid JSON ({exc}).") from exc
    depth = nesting_depth(value)
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(too_deep)
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    metadata: dict[str, Any] = {
        "json_type": JSON_TYPES.get(type(value), "null"),
        "nesting_depth": depth,
        "line_count": pretty.count("\n") + 1,
    }
    if isinstance(value, (dict, list)):
        metadata["item_count"] = len(value)
    return ParsedDocument(text=pretty, filename=filename, source_type="json", metadata=metadata)
