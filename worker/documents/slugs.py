"""Slugs for URIs: GitHub-style heading anchors and file/folder name segments.

A heading's slug is what GitHub renders as its anchor: lower-cased, punctuation dropped except
`-` and `_`, spaces turned into `-`; a repeated slug gets `-1`, `-2`, ... in document order, so
`#anchor` links written for GitHub resolve here unchanged.
"""

from __future__ import annotations

import re
import unicodedata

# Code marks and Markdown links; never `_` or `<...>`: a reader strips its format's emphasis and
# tags, and what is left is text (`$_` is GitHub's `_`, `Delimiter <String>` its `delimiter-string`).
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|[*`~]+")
_NOT_SLUG = re.compile(r"[^\w\- ]+", re.UNICODE)
_NAME_NOT_SLUG = re.compile(r"[^\w.\-]+", re.UNICODE)
_DASHES = re.compile(r"-{2,}")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?\s+(\S.*)$")
FALLBACK = "section"


def plain_heading(text: str) -> str:
    """Heading text without inline markup: links keep their text, emphasis and code marks go."""
    return " ".join(_MARKUP.sub(lambda match: match.group(1) or "", text).split())


def heading_slug(text: str) -> str:
    slug = _NOT_SLUG.sub("", plain_heading(text).lower()).replace(" ", "-")
    return slug or FALLBACK


def split_number(text: str) -> tuple[str, str]:
    """("2.1", "Coil identification") for "2.1 Coil identification"; ("", text) when unnumbered."""
    match = _NUMBERED.match(text.strip())
    return (match.group(1), match.group(2).strip()) if match else ("", text.strip())


class SlugCounter:
    """Hands out unique slugs within one document, GitHub's way."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def unique(self, slug: str) -> str:
        if slug not in self._seen:
            self._seen[slug] = 0
            return slug
        while True:
            self._seen[slug] += 1
            candidate = f"{slug}-{self._seen[slug]}"
            if candidate not in self._seen:
                self._seen[candidate] = 0
                return candidate


def name_slug(name: str) -> str:
    """A file or folder name as a URI segment: NFKC, lower-case, spaces and odd characters as `-`."""
    text = unicodedata.normalize("NFKC", name).strip().lower()
    slug = _DASHES.sub("-", _NAME_NOT_SLUG.sub("-", text)).strip("-.")
    return slug or "untitled"
