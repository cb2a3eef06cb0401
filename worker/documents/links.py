"""What a link points at, decided from the href alone: external, same document, a path, a document id.

Paths are relative to the linking file, or to the library root when they start with `/`;
backslashes and case mismatches are tolerated; `%20` and friends are decoded. Whether the target
exists is the graph's question (see `writer`), so a target that arrives later still resolves.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from worker.documents import uris

_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*):")

TargetKind = Literal["external", "anchor", "path", "id", "invalid"]


@dataclass(frozen=True)
class LinkTarget:
    kind: TargetKind
    key: str = ""  # path_key for "path", the document id's key (uris.id_key) for "id", the URL for "external"
    anchor: str = ""  # lower-cased, "" for the document itself
    reason: str = ""  # why an "invalid" link cannot resolve


def target(href: str, library: str, relpath: str, id_schemes: tuple[str, ...]) -> LinkTarget:
    href = href.strip()
    if not href:
        return LinkTarget("invalid", reason="empty link")
    scheme = _SCHEME.match(href)
    if scheme and len(scheme.group(1)) > 1:  # a one-letter "scheme" is a Windows drive
        name = scheme.group(1).lower()
        if name in id_schemes:
            rest = href[len(name) + 1 :].lstrip("/")
            doc_id, _, anchor = rest.partition("#")
            key = uris.id_key(unquote(doc_id))
            if not key:
                return LinkTarget("invalid", reason=f"no document id after {name}://")
            return LinkTarget("id", key=key, anchor=_anchor(anchor))
        return LinkTarget("external", key=href)
    path, _, anchor = href.replace("\\", "/").partition("#")
    path = unquote(path.split("?", 1)[0])
    if not path:
        return LinkTarget("anchor", anchor=_anchor(anchor)) if anchor else LinkTarget("invalid", reason="empty link")
    if path.startswith("/"):
        joined = posixpath.normpath(path.lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(relpath), path))
    if joined == ".." or joined.startswith("../"):
        return LinkTarget("invalid", reason=f"points outside library {library!r}")
    if joined == "." or path.endswith("/"):
        return LinkTarget("invalid", reason="points at a folder, not a document")
    return LinkTarget("path", key=uris.path_key(library, joined), anchor=_anchor(anchor))


def _anchor(anchor: str) -> str:
    return unquote(anchor).strip().lower()
