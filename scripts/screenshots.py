"""Take the web UI screenshots in docs/screenshots/ with headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--llm none|local]

It starts a fresh server (`carrag.bench.server`, driven by `carrag.bench.browser` as the browser tests are), uploads
a few documents through the UI (a page of the FAA's maintenance handbook and two Markdown notes, chosen at once),
and captures each screen: ingest (three jobs done, one embedding), documents list, one document (the overlap its
chunks share greyed), a conversation of two answers with their citations (the second from a Markdown table, shown
as formatting), a cited passage opened (the chunk that matched set apart, beside its PDF page with the passage
highlighted), and the documents on a phone-sized
viewport. The default
`--llm none` is the extractive answerer: it quotes the best passages with their [Source n]
citations, which shows the citation links; the packaged SmolLM2-135M rarely cites.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from carrag.bench.browser import CHROMIUM, ask, chromium, open_page, upload_through_ui, wait_for_jobs
from carrag.bench.server import server_process

REPO = Path(__file__).resolve().parent.parent
HANDBOOK = REPO / "tests" / "fixtures" / "amt_handbook_sample.pdf"  # a page of the FAA's handbook (public domain)
# Small documents are kept whole by default; split them so chunks, their pages and their overlap show.
SPLIT_SMALL_DOCUMENTS = {"WHOLE_DOCUMENT_CHARS": "0"}

DOCUMENTS = {
    "torque-table.md": (
        "# Torque values for self-locking nuts\n\nTighten a self-locking nut to the **torque in the table** with a "
        "calibrated wrench; `reuse` it only if the locking torque is still within limits.\n\n"
        "| Thread size | Fine thread torque | Coarse thread torque |\n|---|---|---|\n"
        "| 8-32 | 12-15 inch-pounds | 12-15 inch-pounds |\n| 10-24 | 20-25 inch-pounds | 20-25 inch-pounds |\n"
        "| 1/4-28 | 50-70 inch-pounds | 40-50 inch-pounds |\n"
    ),
    "nut-inspection.md": (
        "# Inspecting self-locking nuts\n\nBefore a self-locking nut is reused, check that:\n\n"
        "- it cannot be turned onto the bolt by hand past its locking section;\n"
        "- the fiber collar of an *elastic stop nut* is neither cut nor burnt;\n"
        "- the bolt extends at least two full threads through the nut.\n"
    ),
}


def take_screenshots(out: Path, llm: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots: list[Path] = []
    with tempfile.TemporaryDirectory() as scratch:
        uploads = Path(scratch) / "uploads"
        uploads.mkdir()
        for name, text in DOCUMENTS.items():
            (uploads / name).write_text(text)
        (uploads / "inspection-log.txt").write_text(
            "\n\n".join(
                f"Inspection {n}: brakes, lights and tyres checked on day {n % 365}; all within tolerance."
                for n in range(8000)
            )
        )
        with (
            server_process(Path(scratch) / "data", LLM=llm, LLM_MAX_TOKENS=160, **SPLIT_SMALL_DOCUMENTS) as server,
            chromium() as browser,
        ):
            page = open_page(browser, server, viewport={"width": 1280, "height": 820})

            def shot(name: str, full_page: bool = False) -> None:
                path = out / f"{name}.png"
                page.screenshot(path=str(path), full_page=full_page)
                shots.append(path)

            upload_through_ui(page, [HANDBOOK, *(uploads / name for name in DOCUMENTS)], tags="maintenance")
            states = wait_for_jobs(page, 3)
            assert states == ["done"] * 3, states
            # A long upload, caught while it embeds (then cancelled, so nothing of it is kept).
            upload_through_ui(page, [uploads / "inspection-log.txt"], tags="inspections")
            page.wait_for_function(
                "() => { const bar = document.querySelector('#jobs .job[data-state=embedding] progress');"
                " return bar && bar.value > bar.max * 0.2; }",
                timeout=120_000,
            )
            page.mouse.move(0, 0)
            shot("ingest")
            page.click("#jobs .job[data-state=embedding] .cancel")
            page.wait_for_selector("#jobs .job[data-state=cancelled]")

            page.click("nav.tabs >> text=Documents")
            page.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 3")
            shot("documents")

            page.click("a.doc-name >> text=AMT General Handbook")
            page.wait_for_selector("#document-chunks .chunk >> nth=2")
            page.set_viewport_size({"width": 1280, "height": 1400})
            shot("document")
            page.set_viewport_size({"width": 1280, "height": 820})

            done = "n => document.querySelectorAll('#conversation .turn:not([data-state=streaming])').length >= n"
            ask(page, "What are the two general types of self-locking nuts?")
            page.wait_for_function(done, arg=1, timeout=120_000)
            ask(page, "What torque does a 1/4-28 self-locking nut need?")
            page.wait_for_function(done, arg=2, timeout=120_000)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            shot("ask", full_page=True)

            first_turn = page.locator("#conversation .turn").first
            citation = first_turn.locator('.answer-text a.citation[title*="page"]')  # into the PDF, with its page
            into_pdf = citation.count() > 0
            (citation if into_pdf else first_turn.locator(".sources a.source-link")).first.click()
            page.wait_for_selector("#source-dialog[open]")
            if into_pdf:  # its page drawn beside it, the passage highlighted
                page.wait_for_function(
                    "() => { const image = document.querySelector('#source-page:not([hidden]) #source-page-image');"
                    " return image && image.complete && image.naturalWidth > 0; }"
                )
            shot("ask-citation")

            phone = open_page(browser, server, viewport={"width": 390, "height": 844})
            phone.goto(server.url + "/#/documents")
            phone.wait_for_function("document.querySelectorAll('#doc-rows a.doc-name').length === 3")
            phone.screenshot(path=str(out / "documents-phone.png"))
            shots.append(out / "documents-phone.png")
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--llm", choices=["none", "local"], default="none")
    arguments = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing: apt-get install chromium")
    for path in take_screenshots(arguments.out, arguments.llm):
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


if __name__ == "__main__":
    main()
