"""Where a span of a PDF's text is drawn (`positions.py`): one region per line it touches, a piece held in
part trimmed to its share, rounded outwards, capped per chunk; the stored form round-trips."""

from __future__ import annotations

import pytest

from carrag.services.positions import MAX_REGIONS, Region, TextPositions, capped, decode_regions, encode_regions_json


def two_lines() -> TextPositions:
    positions = TextPositions()
    positions.add(1, 0, 10, 0, 0, (10.2, 20.5, 110.0, 32.0))  # "0123456789" on line 0
    positions.add(1, 11, 21, 0, 1, (10.0, 34.0, 60.4, 46.0))  # line 1, in two pieces
    positions.add(1, 21, 31, 0, 1, (60.0, 34.0, 110.0, 46.0))
    positions.add(2, 40, 50, 0, 0, (50.0, 50.0, 150.0, 60.0))  # the next page
    return positions


def test_a_span_has_one_region_per_line_with_its_offsets() -> None:
    positions = two_lines()
    assert positions.regions(0, 31) == [Region(1, 0, 10, 10, 20, 110, 32), Region(1, 11, 31, 10, 34, 110, 46)]
    assert positions.regions(11, 50) == [Region(1, 0, 20, 10, 34, 110, 46), Region(2, 29, 39, 50, 50, 150, 60)]
    assert positions.regions(32, 39) == [], "between pieces: nothing drawn"


def test_a_piece_held_in_part_gives_its_share_of_the_width() -> None:
    positions = two_lines()
    assert positions.regions(5, 10) == [Region(1, 0, 5, 60, 20, 110, 32)]  # the right half of line 0
    assert positions.regions(0, 2) == [Region(1, 0, 2, 10, 20, 31, 32)]  # 10.2 + 2 × 9.98, rounded outwards


def test_pieces_come_in_text_order() -> None:
    positions = two_lines()
    with pytest.raises(ValueError, match="overlaps"):
        positions.add(2, 45, 47, 0, 1, (0.0, 0.0, 1.0, 1.0))


def test_too_many_regions_are_merged_with_their_neighbours_on_the_page() -> None:
    lines = [Region(1 + index // 100, index, index + 1, 10, 10 * index, 100, 10 * index + 8) for index in range(200)]
    kept = capped(lines)
    assert len(kept) <= MAX_REGIONS and {region.page for region in kept} == {1, 2}
    assert min(r.y0 for r in kept) == 0 and max(r.y1 for r in kept) == 1998, "the same area, in fewer rectangles"
    assert all(a.page == b.page or a.page < b.page for a, b in zip(kept, kept[1:], strict=False))
    one_per_page = [Region(page, 0, 1, 0, 0, 1, 1) for page in range(1, 100)]
    assert capped(one_per_page) == one_per_page[:MAX_REGIONS], "nothing to merge across pages"


def test_the_stored_form_round_trips() -> None:
    regions = two_lines().regions(0, 50)
    stored = encode_regions_json(regions)
    assert stored is not None and decode_regions(stored) == regions
    assert encode_regions_json([]) is None and decode_regions(None) == [] and decode_regions("[]") == []
    assert decode_regions([[3, 0, 4, 1, 2, 3, 4]]) == [Region(3, 0, 4, 1, 2, 3, 4)]
