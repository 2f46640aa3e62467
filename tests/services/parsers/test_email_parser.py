from __future__ import annotations

from email.message import EmailMessage

import pytest

from carrag.services.errors import InvalidInput, NoExtractableText
from carrag.services.parsers import parse_file
from carrag.services.parsers.email_message import MAX_ATTACHMENT_DEPTH
from tests.services.parsers.formats import REAL, fixture_bytes


def message(subject: str, body: str | None = "Body text.", **headers: str) -> EmailMessage:
    mail = EmailMessage()
    mail["Subject"] = subject
    mail["From"] = headers.get("sender", "Workshop <workshop@example.com>")
    mail["To"] = "owner@example.com"
    mail["Date"] = "Mon, 23 Nov 2026 10:00:00 +0000"
    if body is not None:
        mail.set_content(body)
    return mail


def test_real_message_with_a_text_attachment() -> None:
    parsed = parse_file((REAL / "fake-email-attachment.eml").read_bytes(), "fake-email-attachment.eml")
    assert parsed.source_type == "email"
    assert parsed.title == "Fake email with attachment"
    assert parsed.text.startswith(
        "# Fake email with attachment\n\nFrom: Mallori Harrell <mallori@unstructured.io>\n"
        "To: Mallori Harrell <mallori@unstructured.io>\nDate: Fri, 23 Dec 2022 12:08:48 -0600\n\nHello!"
    )
    assert parsed.text.endswith("## Attachment: fake-attachment.txt\n\nHey this is a fake attachment!")
    assert "\r" not in parsed.text
    assert parsed.metadata["attachments"] == [
        {
            "filename": "fake-attachment.txt",
            "content_type": "text/plain",
            "depth": 1,
            "status": "parsed",
            "source_type": "text",
        }
    ]


def test_plain_part_is_preferred_over_html() -> None:
    parsed = parse_file((REAL / "mime-different-plain-html.eml").read_bytes(), "mime.eml")
    assert "This is the text/plain part." in parsed.text
    assert "text/html" not in parsed.text
    assert parsed.metadata["body_type"] == "text/plain"


def test_html_only_body_goes_through_the_html_parser() -> None:
    mail = message("Newsletter", None)
    mail.set_content("<html><body><h2>Recall</h2><p>Replace the <b>brake hose</b>.</p></body></html>", subtype="html")
    parsed = parse_file(mail.as_bytes(), "news.eml")
    assert parsed.metadata["body_type"] == "text/html"
    assert "## Recall" in parsed.text and "brake hose" in parsed.text and "<p>" not in parsed.text


def test_supported_attachments_are_parsed_recursively_others_listed() -> None:
    inner = message("Forwarded invoice", "See the attached notes.")
    inner.add_attachment(b"Chain replaced at 4,000 km.", maintype="text", subtype="plain", filename="notes.txt")
    outer = message("Service report")
    outer.add_attachment(
        fixture_bytes("workshop_notes.docx"),
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="workshop_notes.docx",
    )
    outer.add_attachment(inner)  # message/rfc822
    outer.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(32), maintype="image", subtype="png", filename="photo.png")
    parsed = parse_file(outer.as_bytes(), "report.eml")
    text = parsed.text
    assert text.index("Body text.") < text.index("## Attachment: workshop_notes.docx") < text.index("# Torque settings")
    assert "## Attachment: attached message.eml\n\n# Forwarded invoice" in text
    assert "## Attachment: notes.txt\n\nChain replaced at 4,000 km." in text
    assert "PNG" not in text
    statuses = {(entry["filename"], entry["depth"]): entry["status"] for entry in parsed.metadata["attachments"]}
    assert statuses == {
        ("workshop_notes.docx", 1): "parsed",
        ("attached message.eml", 1): "parsed",
        ("notes.txt", 2): "parsed",
        ("photo.png", 1): "skipped: pictures in e-mails are not read",
    }


def test_nesting_is_bounded() -> None:
    mail = message("level 0")
    for level in range(1, MAX_ATTACHMENT_DEPTH + 3):
        outer = message(f"level {level}")
        outer.add_attachment(mail)
        mail = outer
    parsed = parse_file(mail.as_bytes(), "deep.eml")
    depths = [entry["depth"] for entry in parsed.metadata["attachments"] if entry["status"] == "parsed"]
    assert max(depths) == MAX_ATTACHMENT_DEPTH
    assert any("nested deeper" in entry["status"] for entry in parsed.metadata["attachments"])


def test_a_broken_attachment_does_not_sink_the_message() -> None:
    mail = message("Broken")
    mail.add_attachment(b"PK\x03\x04 junk", maintype="application", subtype="octet-stream", filename="bad.docx")
    parsed = parse_file(mail.as_bytes(), "broken.eml")
    assert "Body text." in parsed.text
    assert parsed.metadata["attachments"][0]["status"].startswith("skipped: bad.docx is not a readable .docx")


def test_unknown_charset_is_detected() -> None:
    raw = (
        "Subject: Caf\u00e9\r\nFrom: a@example.com\r\nContent-Type: text/plain; charset=utf8mb4\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\nCr\u00e8me br\u00fbl\u00e9e at the caf\u00e9.\r\n"
    ).encode("utf-8")
    parsed = parse_file(raw, "dessert.eml")
    assert "Crème brûlée at the café." in parsed.text


def test_headers_only_is_no_text_and_non_mail_is_refused() -> None:
    with pytest.raises(NoExtractableText):
        parse_file(message("Empty", None).as_bytes(), "empty.eml")
    with pytest.raises(InvalidInput, match="not an e-mail message"):
        parse_file(b"just some words\nand more", "words.eml")
