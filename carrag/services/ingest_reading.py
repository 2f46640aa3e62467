"""What an ingest reads, turned into a `ParsedDocument`: an upload's bytes, a fetched URL's body, or text
already extracted. Parsers are synchronous and run in a worker thread; OCR progress goes back to the
event loop's thread (`progress_from_thread`)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from carrag.services.errors import InvalidInput
from carrag.services.fetchers.base import MEDIA_TYPE_EXTENSIONS, FetchedPage, Fetcher
from carrag.services.models import OriginalFile, ParsedDocument
from carrag.services.originals import fetched_original
from carrag.services.parsers import check_supported, parse_file, without_surrogates
from carrag.services.parsers.budget import ParseBudget
from carrag.services.parsers.decoding import decode_declared
from carrag.services.parsers.pdf import OcrReader, Progress, parse_pdf
from carrag.services.parsers.pdf_markdown import parse_pdf_markdown
from carrag.services.parsers.text import parse_text
from carrag.services.parsers.web import parse_web_page
from carrag.services.settings import Settings
from carrag.services.timing import elapsed_ms


async def parse_upload(
    data: bytes,
    filename: str,
    settings: Settings,
    ocr: OcrReader | None,
    timings: dict[str, float],
    on_ocr_read: Progress | None = None,
) -> ParsedDocument:
    """An uploaded file, parsed by its extension (400 for an unsupported one, before any work)."""
    check_supported(filename)
    started = time.perf_counter()
    parsed = await asyncio.to_thread(
        parse_file,
        data,
        filename,
        budget=ParseBudget.from_settings(settings),
        pdf_mode=settings.pdf_mode,
        ocr=ocr,
        on_progress=progress_from_thread(on_ocr_read),
    )
    timings["parse"] = elapsed_ms(started)
    return parsed


async def read_url(
    url: str,
    fetcher: Fetcher,
    settings: Settings,
    ocr: OcrReader | None,
    timings: dict[str, float],
    on_ocr_read: Progress | None = None,
) -> tuple[ParsedDocument, OriginalFile | None]:
    """A URL fetched and parsed by its media type, with its body as the original when KEEP_ORIGINALS."""
    started = time.perf_counter()
    page = await fetcher.fetch(url)
    timings["fetch"] = elapsed_ms(started)
    return await read_page(page, settings, ocr, timings, on_ocr_read)


async def read_page(
    page: FetchedPage,
    settings: Settings,
    ocr: OcrReader | None,
    timings: dict[str, float],
    on_ocr_read: Progress | None = None,
) -> tuple[ParsedDocument, OriginalFile | None]:
    """A fetched page parsed by its media type, with its body as the original when KEEP_ORIGINALS."""
    url = page.url
    started = time.perf_counter()
    parsed = await asyncio.to_thread(
        parse_fetched, page.content_type, page.body, page.charset, url, settings, ocr, progress_from_thread(on_ocr_read)
    )
    timings["parse"] = elapsed_ms(started)
    parsed.metadata.setdefault("url", url)
    if page.final_url != url:
        parsed.metadata["final_url"] = page.final_url
    return parsed, fetched_original(page) if settings.keep_originals else None


def parse_fetched(
    content_type: str,
    body: bytes,
    charset: str | None,
    url: str,
    settings: Settings,
    ocr: OcrReader | None,
    on_progress: Progress | None = None,
) -> ParsedDocument:
    budget = ParseBudget.from_settings(settings)
    if content_type == "application/pdf":
        pdf_parser = parse_pdf_markdown if settings.pdf_mode == "markdown" else parse_pdf
        parsed = pdf_parser(body, url, budget=budget, ocr=ocr, on_progress=on_progress)
    elif content_type in ("text/html", "application/xhtml+xml"):
        parsed = parse_web_page(decode_declared(body, charset)[0], url, budget)
    elif content_type in MEDIA_TYPE_EXTENSIONS:  # an office document, e-book or e-mail
        name = document_name(url, MEDIA_TYPE_EXTENSIONS[content_type])
        parsed = parse_file(body, name, budget=budget, ocr=ocr, on_progress=on_progress)
    else:
        parsed = parse_text(body, url, charset=charset)
        if not parsed.text.strip():
            raise InvalidInput(f"{url} contains no extractable text.")
    parsed.filename = url
    parsed.source_type = "web"
    parsed.metadata.setdefault("extracted_at", datetime.now(UTC).isoformat())
    return without_surrogates(parsed)


def document_name(url: str, extension: str) -> str:
    """A file name for a fetched document: the URL's last path segment when it has the extension the
    server's media type implies, else ``document`` with it (the parser goes by the extension)."""
    name = url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return name if name.lower().endswith(extension) else f"document{extension}"


def text_document(text: str, filename: str, title: str | None) -> ParsedDocument:
    """Already-extracted text as a parsed document."""
    if not text.strip():
        raise InvalidInput(f"{filename} contains no text.")
    return ParsedDocument(
        text=text, filename=filename, source_type="text", metadata={"line_count": len(text.splitlines())}, title=title
    )


def progress_from_thread(on_ocr_read: Progress | None) -> Progress | None:
    """``on_ocr_read`` for a parser running in a worker thread (OCR pages done/total during the
    ``parsing`` stage): each call is handed to the event loop's thread."""
    if on_ocr_read is None:
        return None
    loop = asyncio.get_running_loop()

    def report(done: int, total: int) -> None:
        loop.call_soon_threadsafe(on_ocr_read, done, total)

    return report
