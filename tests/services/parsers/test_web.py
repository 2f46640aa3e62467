from __future__ import annotations

import trafilatura

from carrag.services.parsers.web import extract_main_text, fallback_text, parse_web_page

ARTICLE = """<!doctype html><html><head><title>Oil change intervals</title>
<style>body { color: red }</style><script>var tracking = "do not index";</script></head>
<body><nav>Home | Products | Contact</nav><header>Site header</header>
<article><h1>Oil change intervals</h1>
<p>Most modern engines need an oil change every 7,500 miles when using full synthetic oil.
Check your owner's manual for the exact interval for your vehicle and driving conditions.</p>
<p>Severe service, such as towing or dusty roads, halves the interval. Always replace the oil filter
at the same time as the oil, and reset the oil life monitor afterwards.</p></article>
<footer>Copyright footer</footer></body></html>"""


def test_trafilatura_extracts_the_article() -> None:
    parsed = parse_web_page(ARTICLE, "https://example.com/oil")
    assert "7,500 miles" in parsed.text and "oil filter" in parsed.text
    assert "tracking" not in parsed.text and "Copyright footer" not in parsed.text
    assert parsed.metadata["url"] == "https://example.com/oil"
    assert parsed.metadata["title"] == "Oil change intervals"
    assert parsed.metadata["extracted_at"].endswith("+00:00")
    assert parsed.filename == "https://example.com/oil" and parsed.source_type == "web"


NOISY = (
    "<html><head><title>T</title><script>evil()</script><style>x{}</style></head><body><nav>menu</nav>"
    "<header>top</header><div>Tiny page</div><footer>foot</footer></body></html>"
)


def test_beautifulsoup_fallback_drops_noise() -> None:
    text = fallback_text(NOISY)
    assert "Tiny page" in text
    for noise in ("evil", "menu", "top", "foot", "x{}"):
        assert noise not in text


def test_fallback_used_when_trafilatura_finds_nothing(monkeypatch) -> None:
    monkeypatch.setattr(trafilatura, "extract", lambda *args, **kwargs: None)
    assert extract_main_text(NOISY) == "T\nTiny page"
