from __future__ import annotations

from carrag.services.parsers.web import parse_web_page
from tests.services.parsers.formats import REAL

ARTICLE = """<!doctype html><html><head><title>Oil change intervals</title>
<style>body { color: red }</style><script>var tracking = "do not index";</script></head>
<body><div class="menu"><ul><li><a href="/">Home</a></li><li><a href="/products">Products and parts</a></li>
<li><a href="/dealers">Find a dealer near you</a></li><li><a href="/contact">Contact us</a></li></ul></div>
<header>Site header</header>
<article><h1>Oil change intervals</h1>
<p>Most modern engines need an oil change every 7,500 miles when using full synthetic oil.
Check your <a href="/manuals">owner's manual</a> for the exact interval for your vehicle and driving conditions.</p>
<h2>Severe service</h2>
<p>Severe service, such as towing or dusty roads, halves the interval. Always replace the oil filter
at the same time as the oil, and reset the oil life monitor afterwards.</p>
<ul><li>Towing a trailer</li><li>Dusty roads</li></ul></article>
<footer>Copyright footer</footer></body></html>"""


def test_the_article_keeps_headings_and_lists_and_loses_link_targets() -> None:
    parsed = parse_web_page(ARTICLE, "https://example.com/oil")
    assert 0.1 < parsed.metadata["chrome_removed_share"] < 0.5
    assert "# Oil change intervals" in parsed.text and "## Severe service" in parsed.text
    assert "- Towing a trailer" in parsed.text
    assert "owner's manual for the exact interval" in parsed.text and "/manuals" not in parsed.text
    for noise in ("tracking", "Copyright footer", "Products and parts", "Find a dealer", "Site header"):
        assert noise not in parsed.text
    assert parsed.metadata["url"] == "https://example.com/oil"
    assert parsed.metadata["title"] == "Oil change intervals"
    assert parsed.metadata["extracted_at"].endswith("+00:00")
    assert parsed.filename == "https://example.com/oil" and parsed.source_type == "web"


NOISY = (
    "<html><head><title>T</title><script>evil()</script><style>x{}</style></head><body><nav>menu</nav>"
    "<div>Tiny page</div><footer>foot</footer></body></html>"
)


def test_a_tiny_page_loses_its_nav_and_footer() -> None:
    parsed = parse_web_page(NOISY, "https://example.com/tiny")
    assert parsed.text == "Tiny page"


def test_url_and_upload_of_the_same_page_give_the_same_text() -> None:
    from carrag.services.parsers import parse_file

    data = (REAL / "wiki_duck.html").read_bytes()
    by_url = parse_web_page(data.decode("utf-8"), "https://en.wikipedia.org/wiki/Duck")
    uploaded = parse_file(data, "wiki_duck.html")
    assert by_url.text == uploaded.text
    assert by_url.metadata["chrome_removed_share"] == uploaded.metadata["chrome_removed_share"] > 0.1
