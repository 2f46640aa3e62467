"""Source and configuration files as text, marked ``source_type: code`` with their language so the
pipeline chunks them with the `code` strategy by default.
"""

from __future__ import annotations

from carrag.services.models import ParsedDocument
from carrag.services.parsers.text import decode_text

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sql": "sql",
}
CODE_EXTENSIONS = tuple(sorted(LANGUAGES))


def parse_code(data: bytes, filename: str) -> ParsedDocument:
    text = decode_text(data, filename)
    extension = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return ParsedDocument(
        text=text,
        filename=filename,
        source_type="code",
        metadata={"language": LANGUAGES.get(extension), "line_count": len(text.splitlines())},
    )
