from __future__ import annotations

from carrag.services.answers.loops import LoopDetector


def feed_words(text: str) -> LoopDetector:
    detector = LoopDetector()
    for word in text.split(" "):
        if detector.feed(word + " "):
            break
    return detector


def test_a_repeated_sentence_is_a_loop_cut_after_its_first_occurrence() -> None:
    detector = feed_words("Intro line here. " + "The filter is the Motorcraft FL-500S. " * 6)
    assert detector.loop_start is not None
    assert detector.trimmed == "Intro line here. The filter is the Motorcraft FL-500S."


def test_a_repeating_tail_without_sentence_ends_is_a_loop() -> None:
    detector = LoopDetector()
    looped = False
    for _ in range(10):
        looped = detector.feed("and the oil and the filter ")
        if looped:
            break
    assert looped and detector.trimmed == "and the oil and the filter"


def test_ordinary_text_is_not_a_loop() -> None:
    text = "Change the oil every 7,500 miles. Check the level monthly. Use 5W-30 oil. Replace the filter each time."
    assert feed_words(text).loop_start is None
