"""Site chrome out of HTML pages (issue 27): each structural rule on a small page, and a real page."""

from __future__ import annotations

import re

import pytest

from carrag.services.parsers import parse_file
from tests.services.parsers.formats import REAL

PARAGRAPH = (
    "The relationship fields declare which packages a binary package needs, and which it cannot be "
    "installed together with, so that the package manager can order the installation correctly."
)


def text_of(body: str, title: str = "Page") -> str:
    html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    return parse_file(html.encode(), "page.html").text


@pytest.fixture(scope="module")
def duck():
    return parse_file((REAL / "wiki_duck.html").read_bytes(), "wiki_duck.html")


def test_a_wiki_page_keeps_its_article_and_loses_its_chrome(duck) -> None:
    assert duck.text.startswith("# Duck"), "the title heading of a removed header block stays"
    assert "**Duck** is the common name for numerous species of waterfowl in the family Anatidae." in duck.text
    for heading in ("## Etymology", "## Taxonomy", "### Feeding", "### Heraldry"):
        assert f"\n{heading}\n" in duck.text
    chrome = (
        "Jump to content",
        "Main menu",
        "Log in",
        "136 languages",
        "Afrikaans",
        "Alemannisch",
        "Toggle the table of contents",
        "Hidden categories",
        "Retrieved from",
        "Privacy policy",
        "This page was last edited",
    )
    assert [phrase for phrase in chrome if phrase in duck.text] == []
    assert "| Kingdom: | Animalia |" in duck.text, "tables stay Markdown tables"
    assert "](" not in duck.text and "/wiki/" not in duck.text and not re.search(r"\[\d+\]", duck.text)


def test_sphinx_navigation_bars_sidebar_and_pilcrows() -> None:
    related = '<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="genindex.html">index</a></li><li><a href="next.html">next</a> |</li><li><a href="prev.html">previous</a> |</li></ul></div>'
    body = (
        related
        + '<div class="document"><div class="body" role="main"><section><h1>7. Relationships<a class="headerlink" href="#rel">¶</a></h1>'
        + f'<p>{PARAGRAPH}</p><dl><dt>Depends<a class="headerlink" href="#dep">¶</a></dt><dd>{PARAGRAPH}</dd></dl></section></div>'
        + '<div class="sphinxsidebar"><h3>This Page</h3><ul><li><a href="bug.html">Report a Bug</a></li><li><a href="src.txt">Show Source</a></li></ul></div></div>'
        + related
        + '<div class="footer">Created using <a href="https://sphinx-doc.org">Sphinx</a> 5.3.0.</div>'
    )
    text = text_of(body)
    assert text.startswith("# 7. Relationships\n") and "¶" not in text
    assert PARAGRAPH in text and "Depends" in text
    for chrome in ("Navigation", "previous", "Report a Bug", "This Page", "Sphinx"):
        assert chrome not in text


def test_docbook_prev_next_tables_and_table_of_contents() -> None:
    body = (
        '<div class="navheader"><table><tr><th colspan="3">Chapter 8. Tools</th></tr>'
        '<tr><td><a href="ch7.html">Prev</a></td><td></td><td><a href="ch9.html">Next</a></td></tr></table><hr></div>'
        '<div class="chapter"><h1>Chapter 8. Tools</h1><div class="toc"><p><b>Table of Contents</b></p>'
        '<dl><dt><a href="#s1">8.1. dpkg</a></dt><dt><a href="#s2">8.2. APT</a></dt></dl></div>'
        f'<div class="section"><h2>8.1. dpkg</h2><p>{PARAGRAPH}</p></div>'
        f'<div class="section"><h2>8.2. APT</h2><p>{PARAGRAPH} APT fetches packages.</p></div></div>'
        '<div class="navfooter"><hr><table><tr><td><a href="ch7.html">Prev</a></td><td></td><td><a href="ch9.html">Next</a></td></tr>'
        '<tr><td>Chapter 7. Basics</td><td><a href="index.html">Home</a></td><td>Chapter 9. Upgrades</td></tr></table></div>'
    )
    text = text_of(body)
    assert text.startswith("# Chapter 8. Tools\n\n## 8.1. dpkg\n")
    for chrome in ("Prev", "Next", "Home", "Table of Contents", "Chapter 7. Basics", "Chapter 9"):
        assert chrome not in text
    assert "APT fetches packages." in text


def test_link_bars_breadcrumbs_and_same_page_links_go_but_links_in_prose_stay() -> None:
    body = (
        '<p><a href="#content">Jump to content</a></p>'
        '<div class="up"><a href="mod/">Modules</a> | <a href="dirs/">Directives</a> | <a href="faq/">FAQ</a> | '
        '<a href="sitemap.html">Sitemap</a> | <a href="bugs.html">Report a bug</a></div>'
        '<div class="path"><a href="/">Apache</a> &gt; <a href="/httpd/">HTTP Server</a> &gt; <a href="./">Docs</a></div>'
        f'<h2>Mapping URLs</h2><p>{PARAGRAPH} See the <a href="rewrite.html">rewrite</a> module.</p>'
        '<div class="top"><a href="#page-header"><img alt="top" src="up.gif"></a></div>'
        f"<h2>Redirects</h2><p>{PARAGRAPH}</p>"
    )
    text = text_of(body)
    assert "See the rewrite module." in text and "## Redirects" in text
    for chrome in ("Jump to content", "Sitemap", "Report a bug", "HTTP Server", "top"):
        assert chrome not in text


def test_a_link_repeated_as_a_block_across_the_page_goes_a_single_one_stays() -> None:
    sections = "".join(
        f'<h2>Part {n}</h2><p>(<a href="spec.html#p{n}">details</a>)</p><p>{PARAGRAPH}</p>' for n in range(4)
    )
    text = text_of(sections + '<p><a href="install.html">Installation guide</a></p>')
    assert "details" not in text and text.count(PARAGRAPH) == 4
    assert "Installation guide" in text


def test_a_preformatted_line_of_links_goes_and_the_text_stays() -> None:
    body = (
        '<h1>usr_05</h1><a href="index.html">main help file</a><hr><pre>'
        + "Vim can be tuned to work like you want it to.\n" * 30
        + 'Next chapter: <a href="usr_06.html">usr_06.txt</a>  Using syntax highlighting\n'
        + '<a href="#top">top</a> - <a href="index.html">main help file</a>\n</pre>'
    )
    text = text_of(body)
    assert "Next chapter: usr_06.txt  Using syntax highlighting" in text
    assert "main help file" not in text and "\ntop" not in text


def test_a_page_that_is_a_list_of_links_keeps_it() -> None:
    items = "".join(f'<li><a href="page{n}.html">Chapter {n}: a chapter title</a></li>' for n in range(30))
    text = text_of(f"<h1>Contents</h1><ul>{items}</ul>")
    assert "Chapter 29: a chapter title" in text


def test_a_heading_that_had_no_text_of_its_own_stays() -> None:
    text = text_of(f"<h1>Guide</h1><h2>Empty on purpose</h2><h2>Usage</h2><p>{PARAGRAPH}</p>")
    assert "## Empty on purpose" in text


def test_comments_beside_a_dominant_article_go() -> None:
    body = (
        f'<div id="page"><div class="post"><h1>Oil changes</h1>{f"<p>{PARAGRAPH}</p>" * 12}</div>'
        '<div class="comments"><p>Great post, thanks!</p></div></div>'
    )
    text = text_of(body)
    assert text.count(PARAGRAPH) == 12 and "Great post" not in text
