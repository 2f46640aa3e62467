"""Request bodies hold only JSON that JSON can represent: ``json.loads`` accepts ``NaN``, ``Infinity``,
``1e309`` and lone surrogates, none of which can be sent back out (a validation error echoing one would
be a 500) and a lone surrogate breaks the tokenizer or the store. `JsonBodyRoute` makes them a 422.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from fastapi import Request, Response
from fastapi.routing import APIRoute

# A surrogate's escape: decoding it gives a lone surrogate unless it is half of a pair.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is out of range (JSON numbers must be finite)")
    return number


def _not_json(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value (JSON numbers must be finite)")


def strict_json(body: bytes) -> Any:
    """``body`` as JSON (UTF-8, RFC 8259), or ``json.JSONDecodeError`` saying what it holds that
    JSON cannot represent."""
    try:
        value = json.loads(body.decode("utf-8"), parse_float=_finite, parse_constant=_not_json)
        if SURROGATE_ESCAPE.search(body):
            json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a surrogate outside a pair
    except json.JSONDecodeError:
        raise
    except UnicodeEncodeError:
        raise json.JSONDecodeError("a \\u escape is a lone surrogate (\\ud800-\\udfff outside a pair)", "", 0) from None
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("the body is not UTF-8", "", exc.start) from None
    except ValueError as exc:  # from the hooks above
        raise json.JSONDecodeError(str(exc), "", 0) from None
    return value


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


class JsonBodyRoute(APIRoute):
    """A route whose JSON body is decoded by `strict_json` (every router's ``route_class``)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handle_strictly(request: Request) -> Response:
            return await handle(StrictJsonRequest(request.scope, request.receive))

        return handle_strictly
