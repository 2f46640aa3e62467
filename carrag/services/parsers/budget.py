"""What a parser may read of one document, and the error naming the limit exceeded (413, or 400 for
malformed input). Each limit is checked on what is actually read, never on what a file declares.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from carrag.services.errors import PayloadTooLarge

if TYPE_CHECKING:
    from carrag.services.settings import Settings


@dataclass(frozen=True, slots=True)
class ParseBudget:
    max_pdf_pages: int = 5000  # MAX_PDF_PAGES (also the pages of a TIFF)
    ocr_max_page_pixels: int = 20_000_000  # OCR_MAX_PAGE_PIXELS: a page is rendered at a lower DPI to fit
    max_image_pixels: int = 50_000_000  # MAX_IMAGE_PIXELS
    max_archive_bytes: int = 256 * 1024 * 1024  # MAX_ARCHIVE_BYTES, inflated
    max_archive_members: int = 10_000  # MAX_ARCHIVE_MEMBERS
    max_markup_bytes: int = 16 * 1024 * 1024  # MAX_MARKUP_BYTES, the XML of an archive parsed into trees
    max_sheet_cells: int = 2_000_000  # MAX_SHEET_CELLS
    max_html_elements: int = 200_000  # MAX_HTML_ELEMENTS
    max_html_attributes: int = 1_000  # MAX_HTML_ATTRIBUTES, on one element
    max_email_nesting: int = 10  # MAX_EMAIL_NESTING

    @classmethod
    def from_settings(cls, settings: Settings) -> ParseBudget:
        """Each limit from the setting of the same name."""
        return cls(**{field.name: getattr(settings, field.name) for field in fields(cls)})


DEFAULT_BUDGET = ParseBudget()


def too_large(filename: str, what: str, limit: int, setting: str) -> PayloadTooLarge:
    """413: ``<filename> <what>; the limit is <limit> (<SETTING>).``"""
    return PayloadTooLarge(f"{filename} {what}; the limit is {limit:,} ({setting}).")
