"""The article of an HTML page, as Markdown: trafilatura finds it, markdownify writes it.

trafilatura picks the main content out of a page — the article text with its headings, lists and
tables — and drops site navigation, footers, language lists and other boilerplate. Its HTML
output (the article's own elements) then goes through the same Markdown converter as a whole
page (`html_markdown.py`), so headings stay ATX headers for the `markdown` chunking strategy and
link targets are left out of the text.

`choose_content` decides between the article and the whole page (by their words, before either is
converted, so only the chosen one is), and says which it took:

- ``main_content``: the article, when it is a real part of the page.
- ``whole_page``: the article is empty (extraction found nothing), or it holds nearly every word
  of the page (there was no boilerplate to drop; the whole-page conversion keeps the structure
  better on such pages, e.g. tables trafilatura flattens on very small documents).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from carrag.services.parsers.optional import import_optional

Extraction = Literal["main_content", "whole_page"]

# Share of the whole page's words that the article must leave out for the article to be used; when
# it keeps more, the page had no boilerplate worth dropping and the whole-page conversion is kept.
MIN_DROPPED_SHARE = 0.1
_WORD = re.compile(r"\w+")


def article_html(markup: str, url: str | None = None) -> str | None:
    """trafilatura's main-content HTML for ``markup`` (None when it finds none)."""
    trafilatura = import_optional("trafilatura", package="trafilatura", extension=".html")
    return trafilatura.extract(
        markup,
        url=url,
        output_format="html",
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        deduplicate=False,
        favor_recall=True,
    )


def words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


@dataclass(slots=True)
class ContentChoice:
    extraction: Extraction
    dropped_share: float  # share of the whole page's words the article leaves out


def choose_content(article_text: str, page_text: str) -> ContentChoice:
    """The article or the whole page (their visible text), see the module docstring."""
    page_words = words(page_text)
    total = sum(page_words.values())
    if not article_text.strip() or not total:
        return ContentChoice("whole_page", 0.0)
    kept = sum((words(article_text) & page_words).values())
    dropped_share = round(1 - kept / total, 3)
    return ContentChoice("whole_page" if dropped_share < MIN_DROPPED_SHARE else "main_content", dropped_share)


# --- headings the extractor left out ------------------------------------------------------------------
# trafilatura drops some headings (often all of them on small pages), which the `markdown` chunking
# strategy needs. They are put back from the original page: each article block is located in the
# page's text, and a heading of the page that lies between two located blocks (or directly before
# the first one, with no other text in between) is inserted before the later block. Headings inside
# <nav>, <aside> and <footer> are boilerplate and stay out.

HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
BOILERPLATE_CONTAINERS = ("nav", "aside", "footer")
_ANCHOR_CHARS = 40  # the start of a block's text that locates it in the page


def _collapse(text: str) -> str:
    return " ".join(text.split())


@dataclass(slots=True)
class PageHeading:
    offset: int
    end: int
    level: int
    text: str


def page_text_and_headings(soup) -> tuple[str, list[PageHeading]]:
    """The page's visible text, whitespace collapsed, and where each content heading starts and ends in it."""
    bs4 = import_optional("bs4", package="beautifulsoup4", extension=".html")
    parts: list[str] = []
    position = 0
    headings: list[PageHeading] = []
    for node in soup.descendants:
        if isinstance(node, bs4.Tag):
            if node.name in HEADING_TAGS and node.find_parent(BOILERPLATE_CONTAINERS) is None:
                text = _collapse(node.get_text(" "))
                if text:
                    headings.append(PageHeading(position, position + len(text), int(node.name[1]), text))
        elif type(node) is bs4.NavigableString:
            text = _collapse(str(node))
            if text:
                parts.append(text)
                position += len(text) + 1
    return " ".join(parts), headings


def restore_headings(article_soup, page_soup) -> int:
    """Insert the page's headings that the article lost (see above); returns how many."""
    page_text, headings = page_text_and_headings(page_soup)
    body = article_soup.body or article_soup
    blocks = [child for child in body.find_all(True, recursive=False)]
    present = {_collapse(block.get_text(" ")).lower() for block in blocks if block.name in HEADING_TAGS}
    cursor = 0
    previous_end: int | None = None
    inserted = 0
    for block in blocks:
        text = _collapse(block.get_text(" "))
        if not text:
            continue
        offset = page_text.find(text[:_ANCHOR_CHARS], cursor)
        if offset < 0:
            continue
        if previous_end is None:
            chosen = _leading_headings(page_text, headings, offset)
        else:
            chosen = [heading for heading in headings if previous_end <= heading.offset < offset]
        for heading in chosen:
            if heading.text.lower() in present or (
                block.name in HEADING_TAGS and _collapse(block.get_text(" ")).lower().startswith(heading.text.lower())
            ):
                continue
            tag = article_soup.new_tag(f"h{heading.level}")
            tag.string = heading.text
            block.insert_before(tag)
            present.add(heading.text.lower())
            inserted += 1
        cursor = offset + min(len(text), _ANCHOR_CHARS)
        previous_end = max(cursor, offset + len(text))
    return inserted


def _leading_headings(page_text: str, headings: list[PageHeading], first_offset: int) -> list[PageHeading]:
    """The run of headings directly before the article's first block, with no other text between."""
    chosen: list[PageHeading] = []
    gap_end = first_offset
    for heading in reversed([heading for heading in headings if heading.end <= first_offset]):
        if page_text[heading.end : gap_end].strip():
            break
        chosen.insert(0, heading)
        gap_end = heading.offset
    return chosen
