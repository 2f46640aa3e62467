"""Auto-tagging: up to five short lowercase tags per document. `LLMTagger` asks the LLM; `KeywordTagger`
is the deterministic fallback for the embedded default, whose 135M model cannot follow the prompt
(vehicle make, model and year, the document type, then key phrases). Tagging never blocks ingestion.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from typing import Protocol

from carrag.services.keyphrases import acceptable_tag, detect_language, keyphrases, stopwords_for
from carrag.services.llms.base import LLM, complete
from carrag.services.models import ChatMessage
from carrag.services.stop_words import word_list

logger = logging.getLogger(__name__)

MAX_TAG_LENGTH = 40


class Tagger(Protocol):
    name: str

    async def tags(self, text: str, filename: str) -> list[str]: ...


def clean_tags(candidates: list[str], limit: int) -> list[str]:
    tags: list[str] = []
    for candidate in candidates:
        tag = candidate.strip().strip("\"'`#*-•.").strip().lower()
        tag = re.sub(r"\s+", " ", tag)
        if tag and len(tag) <= MAX_TAG_LENGTH and tag not in tags:
            tags.append(tag)
        if len(tags) >= limit:
            break
    return tags


def merge_tags(auto_tags: list[str], user_tags: list[str]) -> list[str]:
    """Auto tags first, then the user's, each once (order kept, unlike the seed's set())."""
    merged: list[str] = []
    for tag in [*auto_tags, *user_tags]:
        normalised = tag.strip().lower()
        if normalised and normalised not in merged:
            merged.append(normalised)
    return merged


class LLMTagger:
    name = "llm"

    def __init__(self, llm: LLM, prompt: str, *, content_chars: int, max_tags: int, timeout: float) -> None:
        self.llm = llm
        self.prompt = prompt
        self.content_chars = content_chars
        self.max_tags = max_tags
        self.timeout = timeout

    async def tags(self, text: str, filename: str) -> list[str]:
        messages = [
            ChatMessage("system", self.prompt),
            ChatMessage("user", f"Filename: {filename}\n\nDocument:\n{text[: self.content_chars]}\n\nTags:"),
        ]
        reply = await asyncio.wait_for(complete(self.llm, messages, max_tokens=64, temperature=0.0), self.timeout)
        reply = re.sub(r"^\s*tags\s*:\s*", "", reply.strip(), flags=re.I)
        return valid_tags(clean_tags(re.split(r"[,\n]", reply), self.max_tags * 2), text, self.max_tags)


def valid_tags(tags: list[str], text: str, limit: int) -> list[str]:
    """The tags that pass `acceptable_tag` for the document's language, at most ``limit``."""
    stop = stopwords_for(detect_language(text))
    return [tag for tag in tags if _YEAR.fullmatch(tag) or acceptable_tag(tag, stop)][:limit]


VEHICLE_MAKES = word_list("vehicle_makes")  # one make a line, some of two words
_MAKE_ALIASES = {"chevy": "chevrolet", "vw": "volkswagen", "mercedes": "mercedes-benz"}
# Words that follow a make without naming a model ("Ford Motor Company", "Toyota dealer").
_NOT_A_MODEL = word_list("not_a_model")
DOCUMENT_TYPES = [
    (r"owner'?s?\W{0,2}(manual|guide)", "owners manual"),
    (r"(service|repair|workshop|shop)\s+manual", "service manual"),
    (r"quick\s+(reference|start)\s+guide", "quick reference guide"),
    (r"user'?s?\s+(guide|manual)", "user guide"),
    (r"installation\s+(guide|manual|instructions)", "installation guide"),
    (r"warranty\s+(guide|booklet|information)", "warranty"),
    (r"data\s*sheet", "datasheet"),
    (r"\binvoice\b", "invoice"),
    (r"\bbrochure\b", "brochure"),
    (r"\bspecifications?\b", "specification"),
    (r"\babstract\b.{0,4000}\breferences\b", "research paper"),
    (r"\bannual\s+report\b|\bform\s+10-k\b", "annual report"),
    (r"\breport\b", "report"),
    (r"\bhandbook\b", "handbook"),
    (r"\btutorial\b", "tutorial"),
]
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")


def _filename_words(filename: str) -> str:
    stem = re.sub(r"\.[a-z0-9]{1,5}$", "", filename.lower().rsplit("/", 1)[-1])
    return " " + re.sub(r"[_\W]+", " ", stem) + " "


class KeywordTagger:
    name = "keywords"

    def __init__(self, *, content_chars: int = 8000, max_tags: int = 5) -> None:
        self.content_chars = content_chars
        self.max_tags = max_tags

    async def tags(self, text: str, filename: str) -> list[str]:
        return await asyncio.to_thread(self.tags_sync, text[: self.content_chars], filename)  # CPU-bound

    def tags_sync(self, text: str, filename: str) -> list[str]:
        lowered = text.lower()
        name = _filename_words(filename)
        tags: list[str] = []

        make = self._make(name, lowered)
        if make:
            tags.append(_MAKE_ALIASES.get(make, make))
            model = self._model(make, name, text)
            if model:
                tags.append(model)
        year = self._year(name, lowered, vehicle=make is not None)
        if year:
            tags.append(year)
        tags.extend(
            label for pattern, label in DOCUMENT_TYPES if re.search(pattern, name + " " + lowered[:20000], re.S)
        )
        tags = clean_tags(tags, self.max_tags)
        # Keep one document type, then fill with topic words.
        types = {label for _, label in DOCUMENT_TYPES}
        first_type = next((t for t in tags if t in types), None)
        tags = [t for t in tags if t not in types or t == first_type]
        if len(tags) < self.max_tags:
            tags.extend(keyphrases(text, self.max_tags - len(tags), exclude=tags))
        return clean_tags(tags, self.max_tags)

    @staticmethod
    def _make(name: str, lowered: str) -> str | None:
        in_name = [m for m in VEHICLE_MAKES if f" {m} " in name]
        if in_name:
            return max(in_name, key=len)
        counts = Counter({m: len(re.findall(rf"\b{re.escape(m)}\b", lowered)) for m in VEHICLE_MAKES})
        make, count = counts.most_common(1)[0]
        return make if count >= 3 else None

    @staticmethod
    def _model(make: str, name: str, text: str) -> str | None:
        after = re.compile(rf"\b{re.escape(make)}[\s_\-]+([a-z0-9][a-z0-9\-]{{0,14}})", re.I)
        candidates = [m.group(1) for m in after.finditer(name)] or [m.group(1) for m in after.finditer(text)]
        candidates = [c for c in candidates if c.lower() not in _NOT_A_MODEL and not _YEAR.fullmatch(c)]
        if not candidates:
            return None
        model = Counter(c.lower() for c in candidates).most_common(1)[0][0]
        # Prefer the text's own spelling: "F150" in a filename is "F-150" in the manual.
        spelling = re.compile(r"\b" + "-?".join(re.escape(ch) for ch in model.replace("-", "")) + r"\b", re.I)
        spellings = Counter(m.group(0).lower() for m in spelling.finditer(text))
        return spellings.most_common(1)[0][0] if spellings else model

    @staticmethod
    def _year(name: str, lowered: str, *, vehicle: bool) -> str | None:
        in_name = _YEAR.findall(name)
        if in_name:
            return in_name[0]
        if not vehicle:
            return None
        years = Counter(_YEAR.findall(lowered[:3000]))
        return years.most_common(1)[0][0] if years else None


class NoTagger:
    name = "off"

    async def tags(self, text: str, filename: str) -> list[str]:
        return []


async def auto_tags(tagger: Tagger, text: str, filename: str) -> list[str]:
    """Tags from ``tagger``, or [] with a warning if it fails in any way."""
    try:
        return await tagger.tags(text, filename)
    except Exception as exc:  # noqa: BLE001 - tagging must never block ingestion
        logger.warning(
            "auto-tagging failed; continuing without auto tags",
            extra={"tagger": tagger.name, "document": filename, "error": repr(exc)},
        )
        return []
