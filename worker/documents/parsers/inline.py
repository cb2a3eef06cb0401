"""Raw HTML inside Markdown: `<a href>` links, `id`/`name` anchors, and tags stripped from text."""

from __future__ import annotations

import html
import re

from worker.documents.model import RawLink

_A_HREF = re.compile(r"""<a\s[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>(.*?)</a\s*>""", re.IGNORECASE | re.DOTALL)
_ID_ATTR = re.compile(r"""<[a-zA-Z][^>]*?\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
# CommonMark's raw HTML tag: a tag name of letters, digits and `-`, then attributes. Anything else in
# angle brackets is text: `<System.IO.FileAttributes>` stays, as GitHub and pandoc show it.
_TAG = re.compile(r"""</?[a-zA-Z][a-zA-Z0-9-]*(?:\s+[a-zA-Z_:][\w.:-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*\s*/?>""")


def html_links(text: str) -> list[tuple[int, RawLink]]:
    if "<a" not in text and "<A" not in text:
        return []
    found = []
    for match in _A_HREF.finditer(text):
        href = html.unescape(match.group(1) or match.group(2) or match.group(3) or "")
        label = " ".join(_TAG.sub("", match.group(4)).split())
        found.append((match.start(), RawLink(href, html.unescape(label), "html")))
    return found


def html_ids(text: str) -> list[str]:
    if "<" not in text:
        return []
    return [html.unescape(match.group(1) or match.group(2) or match.group(3)) for match in _ID_ATTR.finditer(text)]


def strip_html(text: str) -> str:
    return _TAG.sub("", text) if "<" in text else text
