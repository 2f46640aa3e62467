"""Domain errors → HTTP responses. Every error body is JSON: ``{"detail": "<what went wrong>"}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from carrag.services.errors import (
    CarragError,
    Conflict,
    DependencyUnavailable,
    Forbidden,
    InvalidInput,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    UpstreamError,
)

logger = logging.getLogger(__name__)

STATUS_BY_ERROR: list[tuple[type[CarragError], int]] = [
    (PayloadTooLarge, 413),
    (InvalidInput, 400),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (Overloaded, 429),
    (UpstreamError, 502),
    (DependencyUnavailable, 503),
]


def status_for(error: CarragError) -> int:
    for error_type, status in STATUS_BY_ERROR:
        if isinstance(error, error_type):
            return status
    return 500


def _without_input(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validation errors without the input they echo, every text made encodable."""

    def text(value: object) -> str:
        return str(value).encode("utf-8", "backslashreplace").decode("utf-8")

    return [
        {
            "type": text(error.get("type", "")),
            "loc": [part if isinstance(part, int) else text(part) for part in error.get("loc", ())],
            "msg": text(error.get("msg", "")),
        }
        for error in errors
    ]


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        """FastAPI's 422, whose errors echo the input; when that holds what JSON cannot carry (a NaN
        from a form field's JSON, an infinite number), the errors are sent without it."""
        errors = jsonable_encoder(error.errors())
        try:
            return JSONResponse({"detail": errors}, status_code=422)
        except (ValueError, UnicodeEncodeError):
            return JSONResponse({"detail": _without_input(errors)}, status_code=422)

    @app.exception_handler(CarragError)
    async def carrag_error(request: Request, error: CarragError) -> JSONResponse:
        status = status_for(error)
        headers = {"Retry-After": "1"} if status in (429, 503) else None
        if status >= 500:
            logger.warning("request failed", extra={"status": status, "error": error.message, "path": request.url.path})
        return JSONResponse({"detail": error.message}, status_code=status, headers=headers)

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, error: Exception) -> JSONResponse:
        logger.exception("unhandled error", extra={"path": request.url.path})
        request_id = getattr(request.state, "request_id", None)
        return JSONResponse(
            {"detail": "Internal error; the service logged it.", "request_id": request_id}, status_code=500
        )
