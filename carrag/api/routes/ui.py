"""The web UI: `/` serves the page, `/ui/*` its scripts and styles (plain files, no build step).

The page is public; the API calls it makes carry the key the user enters (when API_KEYS is set).
A strict Content-Security-Policy backs up the UI's rule of never inserting document text as HTML.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from carrag.api.json_body import JsonBodyRoute

UI_DIR = Path(__file__).resolve().parent.parent / "ui"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
UI_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidate (ETag) so an upgraded server never runs stale scripts
}

router = APIRouter(include_in_schema=False, route_class=JsonBodyRoute)


@router.get("/")
async def index() -> FileResponse:
    return FileResponse(UI_DIR / "index.html", media_type="text/html", headers=UI_HEADERS)


class UiFiles(StaticFiles):
    def file_response(self, full_path, stat_result, scope: Scope, status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(UI_HEADERS)
        return response


def mount(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/ui", UiFiles(directory=UI_DIR), name="ui")
