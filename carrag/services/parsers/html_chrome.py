"""Site chrome out of an HTML page (navigation, tables of contents, prev/next bars, sidebars, footers),
found by the page's structure rather than one generator's class names: landmarks (``nav``, ``aside``,
``footer``, ARIA roles, forms); regions beside the path from the content root (the deepest container
holding `ROOT_SHARE` of the text) up to ``<body>``; link-dense blocks (`LINK_DENSITY`, unless they would
take more than `MAX_LINK_BLOCK_SHARE` of the page: then the page is a list of links); permalink marks in
headings; and what chrome leaves behind (emptied headings, `ORPHAN_WORDS` labels).

Imported by `html_markdown.html_document` when a page is parsed, after it found bs4 installed. The
thresholds are the middle of the working range on the tuning pages of `carrag/bench/html_references/`
(``python -m carrag.bench.html_extraction --grid``) and are measured on its other pages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import bs4

LANDMARK_TAGS = ("nav", "aside", "footer")
FORM_TAGS = ("form", "button", "input", "select", "textarea", "option")
LANDMARK_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary", "menubar", "toolbar"})
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Blocks judged whole: a list, table or paragraph, not one of its items or cells (a link item in a list of
# prose items stays), and not a span (inline).
BLOCKS = frozenset(
    {"div", "section", "article", "main", "header", "p", "ul", "ol", "dl", "table", "blockquote", "center"}
    | {"details", "figure", "menu"}
)
CONTAINERS = frozenset({"div", "section", "article", "main", "td", "center", "pre"})  # where a content root can be
# Beside the content root, these are other regions of the layout (a link standing alone is one too);
# paragraphs, headings and preformatted text there are the document's own flow and stay.
REGIONS = frozenset(
    {"div", "section", "article", "main", "header", "table", "ul", "ol", "dl", "center", "menu", "details", "a"}
)
ROOT_SHARE = 0.8
LINK_DENSITY = 0.6
MAX_LINK_BLOCK_SHARE = 0.5
ORPHAN_WORDS = 3
REPEATED_LINK = 3  # a one-link block seen this often on the page is a repeated link ("(details)", "[edit]")
_WORD = re.compile(r"\w")
_SEPARATORS = re.compile(r"[\s|»«›‹/\\>·•,:;()\[\]–—-]+")


@dataclass(slots=True)
class Size:
    chars: int = 0  # visible non-space characters
    link_chars: int = 0  # of them, inside links
    links: int = 0
    same_page_links: int = 0  # links to a fragment of this page ("#top")

    @property
    def density(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0


def _chars(text: str) -> int:
    return len(text) - sum(text.count(space) for space in " \t\n\r\f\v\xa0")


def tags(soup) -> list:
    """Every element, in document order (cheaper than ``find_all(True)``, which matches a filter on each)."""
    return [node for node in soup.descendants if isinstance(node, bs4.Tag)]


def walk(soup, inside: str | tuple[str, ...]):
    """``(node, within)`` for every node in document order, ``within`` telling whether it lies inside
    an element named ``inside`` (one pass, no recursion)."""
    stack = [(soup, False)]
    while stack:
        node, within = stack.pop()
        yield node, within
        if isinstance(node, bs4.Tag):
            flag = within or node.name in inside
            stack.extend((child, flag) for child in reversed(node.contents))


def measure(soup) -> dict[int, Size]:
    """Text and link sizes of every element, children before parents (no recursion)."""
    sizes: dict[int, Size] = {}
    for tag in reversed(tags(soup)):
        size = Size()
        for child in tag.children:
            if isinstance(child, bs4.Tag):
                inner = sizes.get(id(child))
                if inner is not None:
                    size.chars += inner.chars
                    size.link_chars += inner.link_chars
                    size.links += inner.links
                    size.same_page_links += inner.same_page_links
            elif type(child) is bs4.NavigableString:
                size.chars += _chars(child)
        if tag.name == "a" and tag.get("href") is not None and size.chars:
            size.link_chars, size.links = size.chars, 1
            size.same_page_links = int(str(tag.get("href")).startswith("#"))
        sizes[id(tag)] = size
    return sizes


def _is_landmark(tag) -> bool:
    if tag.name in LANDMARK_TAGS or tag.name in FORM_TAGS:
        return True
    if str(tag.get("role") or "").lower() in LANDMARK_ROLES:
        return True
    return tag.name == "header" and tag.find_parent(("article", "main", "section")) is None and tag.find("h1") is None


def drop(tag, title) -> None:
    """Remove ``tag``, but keep ``title`` (the page's first ``<h1>``) if it holds it."""
    if tag.parent is None:  # already removed (bs4's ``decomposed`` costs a search when it is not)
        return
    if title is not None and tag is not title and title.parent is not None and any(p is tag for p in title.parents):
        tag.replace_with(title.extract())
    else:
        tag.decompose()


def remove_landmarks(soup, title) -> None:
    for tag in [tag for tag in tags(soup) if _is_landmark(tag)]:
        drop(tag, title)


def remove_heading_anchors(soup) -> None:
    for heading in soup.find_all((*HEADINGS, "dt")):
        for link in heading.find_all("a"):
            if not _WORD.search(link.get_text()):
                link.decompose()


def content_root(soup, sizes: dict[int, Size]):
    """The deepest container holding at least `ROOT_SHARE` of the page's text outside links."""
    body = soup.body or soup
    size = sizes.get(id(body))
    total = size.chars - size.link_chars if size is not None else 0
    root = body
    while total > 0:
        heavy = next(
            (
                child
                for child in root.children
                if isinstance(child, bs4.Tag)
                and child.name in CONTAINERS
                and sizes[id(child)].chars - sizes[id(child)].link_chars >= ROOT_SHARE * total
            ),
            None,
        )
        if heavy is None:
            break
        root = heavy
    return root


def remove_outside_root(soup, sizes: dict[int, Size], title) -> None:
    """The layout regions beside the path from the content root up to ``<body>``: containers and lone
    links, but not paragraphs and other text of the document's flow, nor a heading block before it."""
    body = soup.body or soup
    node = content_root(soup, sizes)
    doomed = []
    while node is not body and node.parent is not None:
        before = True
        for sibling in node.parent.children:
            if sibling is node:
                before = False
            elif isinstance(sibling, bs4.Tag) and sibling.name in REGIONS:
                size = sizes[id(sibling)]
                if not (before and sibling.find(HEADINGS) is not None and size.density < LINK_DENSITY):
                    doomed.append(sibling)
        node = node.parent
    for tag in doomed:
        drop(tag, title)


def remove_link_blocks(soup, sizes: dict[int, Size], title) -> None:
    """The outermost link-dense blocks (see the module docstring), unless they are most of the page."""
    body = soup.body or soup
    total = sizes[id(body)].chars if id(body) in sizes else 0
    dense = []  # (block, its words) of every outermost link-dense block
    skip_inside: set[int] = set()
    for tag in tags(soup):
        if id(tag.parent) in skip_inside or tag.name in (*HEADINGS, "pre"):
            skip_inside.add(id(tag))
            continue
        size = sizes.get(id(tag))
        if size is not None and tag.name in BLOCKS and size.chars and size.density >= LINK_DENSITY:
            dense.append((tag, " ".join(tag.get_text(" ").split()).lower()))
            skip_inside.add(id(tag))
    repeats = Counter(words for _, words in dense)
    found = [
        tag
        for tag, words in dense
        if sizes[id(tag)].links >= 2 or sizes[id(tag)].same_page_links or repeats[words] >= REPEATED_LINK
    ]
    if total and sum(sizes[id(tag)].chars for tag in found) > MAX_LINK_BLOCK_SHARE * total:
        return
    for tag in found:
        drop(tag, title)


def remove_orphans(soup, before: dict[int, Size], empty_before: set[int], title) -> None:
    """Headings left without a section, and blocks reduced to a label, after the removals above."""
    after = measure(soup)
    gone: set[int] = set()
    for tag in tags(soup):
        if id(tag.parent) in gone:
            gone.add(id(tag))
            continue
        if tag.name not in BLOCKS:
            continue
        old, new = before.get(id(tag)), after.get(id(tag))
        if old is None or new is None or not old.chars:
            continue
        if new.chars <= old.chars / 2 and len(tag.get_text(" ").split()) <= ORPHAN_WORDS:
            gone.add(id(tag))
            drop(tag, title)
    for heading in empty_sections(soup):
        if id(heading) not in empty_before and heading is not title:
            heading.decompose()


def empty_sections(soup) -> list:
    """Headings followed (in document order) by a heading of the same or a higher level, or by nothing."""
    items: list[bs4.Tag | str] = []  # headings and runs of text, in document order
    for node, in_heading in walk(soup, HEADINGS):
        if isinstance(node, bs4.Tag) and node.name in HEADINGS:
            items.append(node)
        elif (
            type(node) is bs4.NavigableString
            and not in_heading
            and node.strip()
            and (not items or not isinstance(items[-1], str))
        ):
            items.append("text")
    empty = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        if following is None or (not isinstance(following, str) and following.name <= item.name):
            empty.append(item)
    return empty


def remove_link_lines(soup) -> None:
    """Lines of preformatted text that are nothing but links and separators ("top - main help file")."""
    for pre in soup.find_all("pre"):
        if pre.find("a", href=True) is None:
            continue
        lines: list[list[tuple[str, bool]]] = [[]]
        for node, linked in walk(pre, "a"):
            if type(node) is not bs4.NavigableString:
                continue
            parts = str(node).split("\n")
            for position, part in enumerate(parts):
                if position:
                    lines.append([])
                lines[-1].append((part, linked))
        kept = []
        changed = False
        for line in lines:
            links = sum(1 for text, linked in line if linked and text.strip())
            other = _SEPARATORS.sub("", "".join(text for text, linked in line if not linked))
            if links >= 2 and not other:
                changed = True
                continue
            kept.append("".join(text for text, _ in line))
        if changed:
            pre.clear()
            pre.append("\n".join(kept))


def images_as_alt_text(soup) -> None:
    """Images become their alt text (the Markdown converter writes it), so its size counts here too."""
    for image in soup.find_all("img"):
        image.replace_with(image.get("alt") or "")


def remove_chrome(soup) -> float:
    """Remove the page's chrome (module docstring); returns the share of its text removed."""
    body = soup.body or soup
    images_as_alt_text(soup)
    total = _chars(body.get_text())
    if not total:
        return 0.0
    title = soup.find("h1")
    remove_landmarks(soup, title)
    remove_heading_anchors(soup)
    sizes = measure(soup)
    empty_before = {id(heading) for heading in empty_sections(soup)}
    remove_outside_root(soup, sizes, title)
    remove_link_blocks(soup, measure(soup), title)
    remove_link_lines(soup)
    remove_orphans(soup, sizes, empty_before, title)
    return round(1 - _chars(body.get_text()) / total, 3)
