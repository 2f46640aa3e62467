"""PDF text hygiene (issue 13 item 3, issue 27): line-break hyphens, glyph garbage, ligatures and LaTeX's spacing
accents, on corpus pages."""

from __future__ import annotations

import pymupdf
import pytest

from carrag.services.parsers import parse_file
from carrag.services.parsers.pdf import PlacedText, TextSpan, clean_pages
from carrag.services.parsers.pdf_text_quality import (
    document_vocabulary,
    is_garbage,
    join_hyphenated_breaks,
    normalise_text,
)
from tests.services.parsers.formats import REAL

# Text layers of redp5110_sampled.pdf page 3 (a font without a character map) and skipped_1page.pdf.
GARBAGE = [
    "\x02 ]üìÜüéê •ìê °ê£ë†£ûÜüéê †ë ∞†¶£ \n",
    "èÜ•ÜáÜ§ê †°ê£Ü•î†ü§\n",
    "•ì£†¶íì û†èê£üî±Ü•î†ü †ë èÜ•ÜáÜ§ê Üüè \nÜ°°óîéÜ•î†ü§\n",
    "블록체인에컪픦 팢\ue406\ue422\ue19e 솒빪 방지 짝 쭖쩣 먾래 �헏\x10방지 기술\n",
    "\ue000\ue001\ue002\ue003",
]
LANGUAGE = [
    "Résumé d’un log: nous présentons les opérateurs classiques de l’algèbre.\n",
    "Übergröße: Die schöne Frau läuft über die Straße und grüßt.\n",
    "우선 「감염병예방법」 변경에 따른 감독당국의 보험사가 생명보험에서 ‘일부 감염병’을 재해로\n",
    "الوو،ها، ومسولادفخت الوو ارات، والبرنوخما الوو،ها ليصوا خت الايك ،ايوة\n",
    "Tiếng Việt là ngôn ngữ chính thức của Việt Nam, được dùng rộng rãi.\n",
    "q∈X member(q) and ∀i ∈ [1, n], the temperature is 45 °C at 5 £/kWh.\n",
    "266\tBoard’s Report\n",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_glyph_garbage_is_recognised(text: str) -> None:
    assert is_garbage(text)


@pytest.mark.parametrize("text", LANGUAGE)
def test_real_languages_symbols_and_quotes_are_not_garbage(text: str) -> None:
    assert not is_garbage(text)


def test_hyphenated_line_breaks_are_joined_but_real_hyphens_kept() -> None:
    document = "A well-known method.\nIt is ef-\nficient and well-\nknown; IBM-\nSupplied, COVID-\n19, hf-\nmeasure.\n"
    vocabulary = document_vocabulary([document, "the hf-measure is defined"])
    joined, count = join_hyphenated_breaks(document, vocabulary)
    assert "It is efficient and well-known;" in joined
    assert "IBM-\nSupplied" in joined and "COVID-\n19" in joined, "capitals and digits keep hyphen and break"
    assert "hf-measure" in joined
    assert count == 1
    soft, soft_count = join_hyphenated_breaks("trans\u00ad\nformation", document_vocabulary([""]))
    assert soft == "transformation" and soft_count == 1


def test_a_paper_page_gets_its_broken_words_back() -> None:
    parsed = parse_file((REAL / "layout-parser-paper-fast-page1.pdf").read_bytes(), "layout-parser.pdf")
    assert parsed.metadata["hyphen_joins"] == 4
    for word in ("important", "applications", "detection", "digitization"):
        assert word in parsed.text
    assert "im-\nportant" not in parsed.text and "de-\ntection" not in parsed.text
    assert parsed.page_spans[0].end == len(parsed.text), "page spans follow the joined text"


def test_garbage_blocks_of_a_redbook_page_are_dropped_and_reported() -> None:
    parsed = parse_file((REAL / "redp5110_sampled-page3.pdf").read_bytes(), "redp5110.pdf")
    assert parsed.metadata["garbage_spans_dropped"] >= 7
    assert parsed.metadata["garbage_pages"] == [], "most of the page is readable"
    assert "Database performance and scalability" in parsed.text
    assert not any(sign in parsed.text for sign in ("èÜ•", "†ü", "£ê"))


def test_a_page_of_mostly_garbage_counts_as_a_page_without_text() -> None:
    with pymupdf.open() as document:
        document.new_page()
        document.new_page()
        pages = [
            (1, [TextSpan("A readable first page of the manual.\n")]),
            (2, [TextSpan(GARBAGE[1]), TextSpan(GARBAGE[2]), TextSpan("p. 2\n")]),
        ]
        cleaned, hygiene = clean_pages(document, pages)
        assert [(page.number, page.text) for page in cleaned] == [(1, "A readable first page of the manual."), (2, "")]
        assert hygiene.garbage_pages == [2] and hygiene.garbage_spans_dropped == 2

        def fake_ocr(page, area):
            return PlacedText("Text read from the image of page 2")

        cleaned, hygiene = clean_pages(document, pages, ocr=fake_ocr)
        assert (cleaned[1].number, cleaned[1].text) == (2, "Text read from the image of page 2")
        assert hygiene.ocr_pages == [2] and hygiene.metadata()["ocr_pages"] == [2]


def test_a_latex_page_has_its_ligatures_expanded_and_its_accents_composed() -> None:
    """A page of a LaTeX paper: its text layer says ``L´aszl´o Luk´acs``, ``K¨uttler`` and ``ﬁ``."""
    parsed = parse_file((REAL / "multi-column-page10.pdf").read_bytes(), "multi-column-page10.pdf")
    for name in ("László Lukács", "Hervé Jégou", "Küttler", "Rocktäschel", "Säckinger"):
        assert name in parsed.text
    assert not any(char in parsed.text for char in "\ufb00\ufb01\ufb02\ufb03\ufb04´¨")
    assert "fi" in parsed.text


@pytest.mark.parametrize(
    ("extracted", "expected"),
    [
        ("Niklas E´en", "Niklas Eén"),  # the accent before its letter, as TeX draws it
        ("S¨orensson", "Sörensson"),  # S has no diaeresis form: the letter after it
        ("Hàn Thê´ Thành", "Hàn Thế Thành"),  # after the letter it belongs to, when the next one is a space
        ("Barlas O˘guz", "Barlas Oğuz"),
        ("Marius Pas¸ca", "Marius Paşca"),  # a cedilla is drawn after its letter
        ("Baudiˇs and ˇSediv`y", "Baudiš and Šedivỳ"),
        ("eﬃcient speciﬁed", "efficient specified"),
        ("run `echo` or `ls`", "run `echo` or `ls`"),  # backticks are not accents outside a word
        ("X´ + u", "X \u0301 + u"),  # no letter takes it (a mis-mapped β): NFKC's spacing form
    ],
)
def test_normalise_text(extracted: str, expected: str) -> None:
    assert normalise_text(extracted) == expected
