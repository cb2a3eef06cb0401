"""Titles and ids from a file's own metadata (a PDF's /Title, an Office file's core properties),
kept only when they mean something: not "untitled", not "Microsoft Word - x.docx"."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_PLACEHOLDER = re.compile(r"^(?:untitled(?:\s+document)?|document\d*|title|none|null|unknown|\(?anonymous\)?|contents)$", re.I)
_OFFICE_PREFIX = re.compile(r"^microsoft (?:word|powerpoint|excel) - ", re.I)
_OFFICE_SUFFIX = re.compile(r"\.(?:docx?|pptx?|xlsx?|odt|rtf)$", re.I)
_ID_SHAPE = re.compile(r"^(?=\S*\d)(?=\S*[A-Z])[A-Z0-9][A-Z0-9_.\-/]{2,63}$")  # TSB-20-501, not "report-2"


def clean(raw: object) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    text = _OFFICE_SUFFIX.sub("", _OFFICE_PREFIX.sub("", " ".join(text.replace("\x00", " ").split())))
    return text if any(char.isalnum() for char in text) and not _PLACEHOLDER.match(text) else ""


def looks_like_id(text: str) -> bool:
    return bool(_ID_SHAPE.match(text))


def id_in_text(lines: Iterable[str], patterns: Sequence[re.Pattern[str]]) -> str:
    """A document id written in the text (`Document: TSB-20-501`): group 1 of the first pattern
    that matches, line by line."""
    for line in lines:
        for pattern in patterns:
            match = pattern.search(line)
            if match:
                return match.group(1).strip()
    return ""
