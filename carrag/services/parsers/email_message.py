"""E-mail (.eml, MIME) → Markdown with the standard library's `email`: subject as heading, the address
headers, the body (plain, else HTML), then each supported attachment under ``## Attachment: <name>``
(recursively, within MAX_ATTACHMENT_DEPTH, MAX_ATTACHMENTS and MAX_ATTACHMENT_BYTES; pictures are not
read). The parser recurses into nested parts, so the MIME depth is scanned first (`mime_depth`) and
deeper than MAX_EMAIL_NESTING is a 400. S/MIME bodies are not decrypted.
"""

from __future__ import annotations

import email
import email.policy
import re
from email.message import EmailMessage, Message
from typing import Any

from carrag.services.errors import CarragError, InvalidInput
from carrag.services.models import ParsedDocument
from carrag.services.parsers.budget import DEFAULT_BUDGET, ParseBudget
from carrag.services.parsers.decoding import decode_declared

MAX_ATTACHMENT_DEPTH = 3  # an e-mail attached to an e-mail attached to an e-mail
MAX_ATTACHMENTS = 20  # per message, nested messages included
MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024
SHOWN_HEADERS = ("From", "To", "Cc", "Date")
_EXCESS_BLANK_LINES = re.compile(r"\n{3,}")
_HEADER_LINE = re.compile(r"^[!-9;-~]+:")  # a header field name and colon (RFC 5322 2.2)
_CONTENT_TYPE = re.compile(rb"content-type\s*:\s*([^;\s]+)(.*)", re.IGNORECASE | re.DOTALL)
_BOUNDARY = re.compile(rb"""boundary\s*=\s*(?:"([^"]*)"|([^;\s]+))""", re.IGNORECASE)


def mime_depth(data: bytes, limit: int) -> int:
    """How deep the message's parts nest (multiparts and attached messages), read line by line
    without parsing; counting stops just past ``limit``."""
    open_parts: list[bytes | None] = []  # a multipart's boundary, or None for an attached message
    deepest = 0
    in_headers, content_type = True, b""
    for line in data.splitlines():
        if in_headers:
            if line[:1] in (b" ", b"\t") and content_type:
                content_type += line  # a folded Content-Type header
            elif line.strip():
                content_type = line if line[:13].lower().startswith(b"content-type") else b""
            else:  # the end of a header block
                match = _CONTENT_TYPE.match(content_type.strip())
                kind = match.group(1).lower() if match else b""
                boundary = _BOUNDARY.search(match.group(2)) if match else None
                in_headers, content_type = False, b""
                if kind.startswith(b"multipart/") and boundary is not None:
                    open_parts.append(boundary.group(1) or boundary.group(2))
                elif kind == b"message/rfc822":
                    open_parts.append(None)
                    in_headers = True  # the attached message's own headers follow
                deepest = max(deepest, len(open_parts))
                if deepest > limit:
                    return deepest
        elif line.startswith(b"--"):
            marker = line[2:].rstrip()
            for position in range(len(open_parts) - 1, -1, -1):
                boundary_of = open_parts[position]
                if boundary_of is not None and marker == boundary_of:
                    del open_parts[position + 1 :]
                    in_headers = True  # a part of that multipart begins
                    break
                if boundary_of is not None and marker == boundary_of + b"--":
                    del open_parts[position:]
                    break
    return deepest


class _Budget:
    def __init__(self, parse: ParseBudget) -> None:
        self.remaining = MAX_ATTACHMENTS
        self.parse = parse


def _header(message: Message, name: str) -> str:
    try:
        value = message.get(name)
    except (ValueError, IndexError, TypeError):  # a header the policy cannot parse
        value = message.get_all(name, failobj=[None])[0] if hasattr(message, "get_all") else None
    return re.sub(r"\s+", " ", str(value)).strip() if value else ""


def part_text(part: Message) -> str:
    """A text part's content, decoded with its declared charset or, failing that, by detection."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return str(part.get_payload() or "")
    text, _encoding = decode_declared(payload, part.get_content_charset())
    return text.replace("\r\n", "\n")


def _body(message: EmailMessage, parse_budget: ParseBudget) -> tuple[str, str | None]:
    """The body text and the type it came from."""
    try:
        plain = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
    except (KeyError, AttributeError):  # not an EmailMessage or a damaged structure
        plain = message if message.get_content_type() == "text/plain" else None
        html = None
    if plain is not None and not plain.is_attachment():
        text = part_text(plain).strip()
        if text:
            return text, "text/plain"
    if html is not None and not html.is_attachment():
        from carrag.services.parsers.html_markdown import parse_html

        try:
            return parse_html(
                part_text(html).encode("utf-8"), "body.html", budget=parse_budget
            ).text.strip(), "text/html"
        except CarragError:
            return "", None
    return "", None


def _attachments(message: EmailMessage) -> list[Message]:
    """Attachment parts anywhere below the top level, attached messages as one part each."""
    found: list[Message] = []

    def walk(part: Message) -> None:
        for child in part.iter_parts() if hasattr(part, "iter_parts") else []:
            if child.get_content_type() == "message/rfc822" or child.is_attachment():
                found.append(child)
            elif child.is_multipart():
                walk(child)
            elif child.get_filename() and child.get_content_maintype() != "text":
                found.append(child)  # an inline part with a file name: a document, not body text

    walk(message)
    return found


def _attachment_block(part: Message, depth: int, budget: _Budget, record: list[dict[str, Any]]) -> str | None:
    from carrag.services.parsers import PARSERS, extension_of, parse_file
    from carrag.services.parsers.image import IMAGE_EXTENSIONS

    is_message = part.get_content_type() == "message/rfc822"
    name = part.get_filename() or ("attached message.eml" if is_message else "unnamed attachment")
    entry: dict[str, Any] = {"filename": name, "content_type": part.get_content_type(), "depth": depth + 1}
    record.append(entry)
    if budget.remaining <= 0:
        entry["status"] = f"skipped: more than {MAX_ATTACHMENTS} attachments"
        return None
    if depth + 1 > MAX_ATTACHMENT_DEPTH:
        entry["status"] = f"skipped: nested deeper than {MAX_ATTACHMENT_DEPTH} levels"
        return None
    if not is_message and extension_of(name) not in PARSERS:
        entry["status"] = "skipped: not a supported document type"
        return None
    if extension_of(name) in IMAGE_EXTENSIONS:  # logos and signatures, mostly: not worth an OCR run each
        entry["status"] = "skipped: pictures in e-mails are not read"
        return None
    budget.remaining -= 1
    if is_message:
        inner = part.get_payload()
        inner_message = inner[0] if isinstance(inner, list) and inner else None
        data = inner_message.as_bytes() if isinstance(inner_message, Message) else part.get_payload(decode=True)
    else:
        data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data:
        entry["status"] = "skipped: empty"
        return None
    if len(data) > MAX_ATTACHMENT_BYTES:
        entry["status"] = f"skipped: larger than {MAX_ATTACHMENT_BYTES:,} bytes"
        return None
    try:
        if is_message or extension_of(name) == ".eml":
            parsed = _parse_message(data, name, depth + 1, budget, record)
        else:
            parsed = parse_file(data, name, budget=budget.parse)
    except CarragError as exc:
        entry["status"] = f"skipped: {exc.message}"
        return None
    entry["status"] = "parsed"
    entry["source_type"] = parsed.source_type
    return f"## Attachment: {name}\n\n{parsed.text.strip()}"


def _parse_message(
    data: bytes, filename: str, depth: int, budget: _Budget, record: list[dict[str, Any]]
) -> ParsedDocument:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        data = data.decode("utf-16", errors="replace").encode("utf-8")  # a message saved as UTF-16 text
    limit = budget.parse.max_email_nesting
    if mime_depth(data, limit) > limit:
        raise InvalidInput(
            f"{filename} nests its parts more than {limit} levels deep; the limit is {limit} (MAX_EMAIL_NESTING)."
        )
    head = data.lstrip()[:2048].split(b"\n", 1)[0].decode("latin-1")
    if not (_HEADER_LINE.match(head) or head.startswith("From ")):
        raise InvalidInput(f"{filename} is not an e-mail message (it does not start with header fields).")
    message = email.message_from_bytes(data, policy=email.policy.default)
    subject = _header(message, "Subject")
    headers = [f"{name}: {value}" for name in SHOWN_HEADERS if (value := _header(message, name))]
    if not headers and not subject:
        raise InvalidInput(f"{filename} is not an e-mail message (it has no From, To, Date or Subject).")
    body, body_type = _body(message, budget.parse)
    blocks = [f"# {subject}" if subject else "", "\n".join(headers), body]
    for part in _attachments(message):
        block = _attachment_block(part, depth, budget, record)
        if block:
            blocks.append(block)
    text = _EXCESS_BLANK_LINES.sub("\n\n", "\n\n".join(block for block in blocks if block)).strip()
    metadata = {
        "subject": subject or None,
        "from": _header(message, "From") or None,
        "to": _header(message, "To") or None,
        "date": _header(message, "Date") or None,
        "body_type": body_type,
    }
    return ParsedDocument(text=text, filename=filename, source_type="email", metadata=metadata, title=subject or None)


def parse_eml(data: bytes, filename: str, *, budget: ParseBudget = DEFAULT_BUDGET) -> ParsedDocument:
    attachments: list[dict[str, Any]] = []
    parsed = _parse_message(data, filename, 0, _Budget(budget), attachments)
    parsed.metadata["attachments"] = attachments
    if not parsed.metadata["body_type"] and not any(entry["status"] == "parsed" for entry in attachments):
        # Headers alone are not a document worth indexing.
        parsed.text = ""
    return parsed
