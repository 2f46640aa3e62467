"""Take the web UI screenshots in docs/screenshots/ with headless Chromium.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--llm none|local]

It starts a fresh server (`carrag.bench.server`, driven by `carrag.bench.browser` as the browser tests are), uploads a few documents through the UI, and
captures each screen: ingest (three jobs done, one embedding), documents list, one document, the answer with its
citations, a cited passage opened, and the ask screen on a phone-sized viewport. The default
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
MANUAL = REPO / "tests" / "fixtures" / "2019_Ford_F150_Owners_Manual.pdf"  # a 4-page owner's manual
# The manual is short enough to be kept whole by default; split it so its chunks show their pages.
SPLIT_SMALL_DOCUMENTS = {"WHOLE_DOCUMENT_CHARS": "0"}

DOCUMENTS = {
    "maintenance-schedule.md": (
        "# Maintenance schedule\n\n## Every 7,500 miles\n\nChange the engine oil and the oil filter, rotate the "
        "tires and inspect the brake pads. Use Motorcraft SAE 5W-30 full synthetic oil.\n\n## Every 30,000 miles\n\n"
        "Replace the engine air filter and the cabin air filter. Inspect the coolant hoses and the drive belt.\n"
    ),
    "towing-checklist.txt": (
        "Towing checklist\n\nCross the safety chains under the trailer tongue. Match the hitch ball to the coupler. "
        "Check the trailer lights and the tire pressure of the trailer before every trip. Keep 10 to 15 percent "
        "of the trailer weight on the hitch.\n"
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

            upload_through_ui(page, [MANUAL], tags="maintenance, trucks")
            upload_through_ui(page, [uploads / name for name in DOCUMENTS], tags="maintenance")
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

            page.click("a.doc-name >> text=2019 Ford F-150 Owner's Manual")
            page.wait_for_selector("#document-chunks .chunk")
            shot("document", full_page=True)

            ask(page, "Which oil filter fits the engine, and how often should I change it?")
            page.wait_for_function(
                "document.querySelector('#answer-text').getAttribute('aria-busy') === 'false'", timeout=120_000
            )
            page.evaluate("document.activeElement && document.activeElement.blur()")
            shot("ask", full_page=True)

            citation = page.locator('#answer-text a.citation[title*="page"]')  # one into the PDF, with its page
            (citation if citation.count() else page.locator("#sources a.source-link")).first.click()
            page.wait_for_selector("#source-dialog[open]")
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
