"""The hostile uploads of issue 25, each parsed in a child process with the default budgets: the answer,
the time and how far peak RSS rose.

    python -m carrag.bench.hostile_inputs [--no-ocr]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path


def pdf_with_a_huge_page(points: int = 3000) -> bytes:
    """One blank page of ``points`` × ``points`` (a line on it, so OCR does not skip it as blank)."""
    import pymupdf

    document = pymupdf.open()
    page = document.new_page(width=points, height=points)
    page.draw_line((10, 10), (20, 20))
    return document.tobytes()


def pdf_with_a_huge_image(side: int = 20_000) -> bytes:
    """A letter page showing one ``side`` × ``side`` grey image, compressed to a few hundred KB."""
    import pymupdf

    compressor = zlib.compressobj(9)
    row = bytes(side)
    stream = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    document = pymupdf.open()
    page = document.new_page()
    xref = document.get_new_xref()
    document.update_object(
        xref,
        f"<< /Type /XObject /Subtype /Image /Width {side} /Height {side} /ColorSpace /DeviceGray "
        f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(stream)} >>",
    )
    document.update_stream(xref, stream, compress=False)
    page.insert_text((72, 72), " ")  # gives the page a resource dictionary
    resources = document.xref_get_key(page.xref, "Resources")
    if resources[0] == "xref":
        holder = int(resources[1].split()[0])
        document.xref_set_key(holder, "XObject", f"<< /Im0 {xref} 0 R >>")
    else:
        document.xref_set_key(page.xref, "Resources/XObject", f"<< /Im0 {xref} 0 R >>")
    content = document.get_new_xref()
    document.update_object(content, "<< >>")
    document.update_stream(content, b"q 612 0 0 792 0 0 cm /Im0 Do Q")
    document.xref_set_key(page.xref, "Contents", f"{content} 0 R")
    return document.tobytes()


def pdf_whose_page_count_lies(count: int = 1_000_000) -> bytes:
    """One page, under a page tree that claims ``count``."""
    import pymupdf

    document = pymupdf.open()
    document.new_page().insert_text((72, 72), "The only page.")
    data = document.tobytes(garbage=0, deflate=False)
    return data.replace(b"/Count 1", f"/Count {count}".encode())


def xlsx_zip_bomb(members: int = 3, inflated: int = 400 * 1024 * 1024) -> bytes:
    """Members that declare 2 KB each but inflate to ``inflated`` bytes (declared sizes patched)."""
    buffer = io.BytesIO()
    chunk = b"<c>" + b"A" * (1024 * 1024 - 7) + b"</c>"
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        for number in range(members):
            info = zipfile.ZipInfo(f"xl/worksheets/sheet{number}.xml")
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as member:
                for _ in range(inflated // len(chunk)):
                    member.write(chunk)
    data = bytearray(buffer.getvalue())
    # Rewrite every declared uncompressed size (central directory, then local headers) to 2 KB.
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        position = 0
        while (position := data.find(signature, position)) != -1:
            struct.pack_into("<I", data, position + offset, 2048)
            position += 4
    return bytes(data)


def docx_with_much_xml(megabytes: int = 24) -> bytes:
    """An honest .docx whose document.xml is ``megabytes`` of paragraphs (python-docx builds it whole)."""
    import docx

    seed = io.BytesIO()
    docx.Document().save(seed)
    with zipfile.ZipFile(seed) as source:
        members = {name: source.read(name) for name in source.namelist()}
    paragraph = b"<w:p><w:r><w:t>The quick brown fox jumps over the lazy dog again and again.</w:t></w:r></w:p>"
    body = paragraph * (megabytes * 1024 * 1024 // len(paragraph))
    members["word/document.xml"] = members["word/document.xml"].replace(b"<w:body>", b"<w:body>" + body, 1)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def xlsx_with_far_cells(rows: int = 2000) -> bytes:
    """One cell in column XFD on each of ``rows`` rows (a 32.7-million-cell grid)."""
    import openpyxl  # type: ignore[import-untyped]

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in range(1, rows + 1):
        sheet.cell(row=row, column=16384, value=f"far {row}")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def html_with_many_attributes(count: int = 1_000_000) -> bytes:
    """One element with ``count`` attributes (9 MB at the default)."""
    attributes = " ".join(f'a{number}="x"' for number in range(count))
    return f"<html><body><div {attributes}>hello</div><p>after</p></body></html>".encode()


def eml_nested_messages(depth: int = 1500) -> bytes:
    message = b"From: a@example.com\r\nSubject: inner\r\n\r\nbody text\r\n"
    for level in range(depth):
        message = (
            b"From: a@example.com\r\nSubject: level %d\r\nMIME-Version: 1.0\r\nContent-Type: message/rfc822\r\n\r\n"
            % level
        ) + message
    return message


def eml_nested_multiparts(depth: int = 2000) -> bytes:
    body = b"Content-Type: text/plain\r\n\r\ninner text\r\n"
    for level in range(depth):
        boundary = b"b%d" % level
        header = b'Content-Type: multipart/mixed; boundary="%s"\r\n\r\n' % boundary
        body = header + b"--%s\r\n%s\r\n--%s--\r\n" % (boundary, body, boundary)
    return b"From: a@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n" + body


def json_with_lone_surrogates() -> bytes:
    return b'{"name": "broken \\ud800 pair", "items": ["\\udfff", "fine \\ud83d\\ude00"]}'


def png(width: int, height: int) -> bytes:
    """A blank greyscale PNG of any size, a few KB per megapixel (rows of zeros compress well)."""
    compressor = zlib.compressobj(9)
    row = b"\x00" + bytes(width)  # filter byte, then the pixels
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


CHILD = """
import json, resource, sys, time
from carrag.services.parsers import parse_file
from carrag.services.parsers.pdf_ocr import reader_for, _engine

path, name, with_ocr = sys.argv[1], sys.argv[2], sys.argv[3] == "ocr"
ocr = reader_for(True) if with_ocr else None
if with_ocr:
    _engine()
data = open(path, "rb").read()
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before, started = peak(), time.perf_counter()
try:
    parsed = parse_file(data, name, ocr=ocr)
    error, message, text = None, None, parsed.text
except Exception as exc:
    error, message, text = type(exc).__name__, str(exc), None
print(json.dumps({"error": error, "message": message, "text": text,
                  "seconds": time.perf_counter() - started, "growth_mb": peak() - before}))
"""


def parse_in_child(folder: Path, name: str, data: bytes, ocr: bool = False) -> dict:
    """Parse ``data`` as ``name`` in a fresh interpreter; its answer, seconds and RSS growth (MB)."""
    path = folder / name
    path.write_bytes(data)
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), name, "ocr" if ocr else "plain"],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# (issue 25 row, file name, builder, read with OCR)
CASES: list[tuple[str, str, Callable[[], bytes], bool]] = [
    ("2", "page.pdf", pdf_with_a_huge_page, True),
    ("3", "image.pdf", pdf_with_a_huge_image, True),
    ("3", "picture.png", lambda: png(20_000, 20_000), True),
    ("4", "bomb.xlsx", lambda: xlsx_zip_bomb(members=1), False),
    ("4", "much-xml.docx", docx_with_much_xml, False),
    ("5", "far.xlsx", xlsx_with_far_cells, False),
    ("6", "attributes.html", html_with_many_attributes, False),
    ("7", "messages.eml", eml_nested_messages, False),
    ("7", "multiparts.eml", eml_nested_multiparts, False),
    ("8", "lying.pdf", pdf_whose_page_count_lies, False),
    ("9", "surrogates.json", json_with_lone_surrogates, False),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Parse each hostile upload of issue 25 in a child process.")
    parser.add_argument("--no-ocr", action="store_true", help="leave out the rows read by OCR (slow)")
    args = parser.parse_args(argv)
    print("| row | file | size | answer | seconds | RSS growth (MB) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for row, name, build, ocr in CASES:
            if ocr and args.no_ocr:
                continue
            data = build()
            result = parse_in_child(Path(folder), name, data, ocr)
            answer = result["error"] or "parsed"
            print(
                f"| {row} | {name} | {len(data):,} B | {answer} | {result['seconds']:.1f} | {result['growth_mb']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
