from __future__ import annotations

from carrag.services.keyphrases import (
    acceptable_tag,
    detect_language,
    keyphrases,
    stopwords,
    stopwords_for,
    without_placeholder_text,
)

GERMAN = (
    "Die Bremsflüssigkeit muss alle zwei Jahre gewechselt werden, auch wenn das Fahrzeug wenig gefahren wird. "
    "Bremsflüssigkeit ist hygroskopisch und nimmt Wasser auf; der Siedepunkt der Bremsflüssigkeit sinkt dann. "
    "Die Werkstatt prüft den Wassergehalt der Bremsflüssigkeit mit einem Messgerät. Es sind eine Reihe von "
    "Prüfungen nötig, und auch die Bremsscheiben werden bei jeder Inspektion vermessen."
)
FRENCH = (
    "Nous proposons dans cet article une méthode pour recommander des requêtes OLAP. Les requêtes OLAP "
    "d'un entrepôt de données sont analysées pour notre système de recommandation, et nous évaluons la "
    "qualité des recommandations sur un entrepôt de données réel."
)
LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Nulla vitae morbi tristique senectus et netus. "
    "Morbi vitae nulla, vitae morbi nulla pellentesque habitant.\n\n"
)


def test_language_detection_and_stop_word_lists() -> None:
    assert detect_language(GERMAN) == "de"
    assert detect_language(FRENCH) == "fr"
    assert detect_language("ok") == "en", "too short to tell"
    assert {"auch", "sind", "eine"} <= stopwords("de")
    assert "nous" in stopwords("fr") and "the" in stopwords_for("fr")
    assert stopwords("xx") == frozenset()
    assert stopwords("lt") and stopwords("sk"), "the lists YAKE ships in ISO-8859-1 load too"


def test_no_stop_words_in_any_language_it_meets() -> None:
    for text in (GERMAN, FRENCH):
        language = detect_language(text)
        tags = keyphrases(text, 5)
        assert tags, text
        for tag in tags:
            words = tag.split()
            assert words[0] not in stopwords(language) and words[-1] not in stopwords(language), tag
    assert any("bremsflüssigkeit" in tag for tag in keyphrases(GERMAN, 5))
    assert any("requêtes olap" in tag or "olap" in tag for tag in keyphrases(FRENCH, 5))


def test_placeholder_text_gives_no_tags() -> None:
    assert keyphrases(LOREM * 5, 5) == []
    mixed = LOREM + "Torque the wheel nuts of the trailer to 120 Nm and check the trailer hitch.\n"
    assert without_placeholder_text(mixed).strip().startswith("Torque the wheel nuts")
    assert all("lorem" not in tag and "vitae" not in tag for tag in keyphrases(mixed * 3, 5))


def test_filler_markup_and_edges_are_refused() -> None:
    english = stopwords_for("en")
    for tag in ("whenever", "heading", "little", "nothing", "find", "main", "contents", "of the", "the engine"):
        assert not acceptable_tag(tag, english), tag
    for tag in ("[docs](/wiki/duck)", "https://example.com", "toggle history subsection", "a" * 41, "12"):
        assert not acceptable_tag(tag, english), tag
    for tag in ("engine oil", "bank of america", "f-150", "anna pavlovna", "olap"):
        assert acceptable_tag(tag, english), tag


def test_multi_word_terms_and_names_are_preferred() -> None:
    text = (
        "Anna Pavlovna Scherer received Prince Vasili at her reception in Petersburg. The reception was "
        "crowded. Anna Pavlovna spoke of the war, and Prince Vasili listened. The war with Napoleon worried "
        "Anna Pavlovna, who kept her reception lively while Prince Vasili spoke of his children."
    )
    tags = keyphrases(text, 5)
    assert tags[0] in {"anna pavlovna", "prince vasili", "anna pavlovna scherer"}
    assert sum(len(tag.split()) > 1 for tag in tags) >= 2
    assert not any(set(a.split()) < set(b.split()) for a in tags for b in tags), "no tag inside another"
