"""Hierarchical URIs: `<library>/<folder path>/<document slug>#<heading path>`.

Folder and document segments are `slugs.name_slug` of the names on disk (the document without
its extension); the heading path joins the GitHub anchors of the heading and its ancestors:
`technical-library/bulletins/tsb-21-114#cause/coil-failure`. Links find documents by a
`path_key`: the library-relative path, lower-cased, without a known extension, so that
`../Bulletins/TSB-21-114.md`, `/bulletins/tsb-21-114` and `..\\bulletins\\TSB-21-114.MD` agree.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

from worker.documents.formats import FORMATS
from worker.documents.slugs import name_slug

KNOWN_EXTENSIONS = tuple(FORMATS)


def strip_extension(path: str) -> str:
    lowered = path.lower()
    for extension in KNOWN_EXTENSIONS:
        if lowered.endswith(extension):
            return path[: -len(extension)]
    return path


def path_key(library: str, relpath: str) -> str:
    return f"{library}/{strip_extension(relpath).lower()}"


_NOT_ID = re.compile(r"[\W_]+", re.UNICODE)


def id_key(doc_id: str) -> str:
    """A document id as links find it: case, punctuation and spacing ignored, so that
    doc://man-falcon-engine, `id: MAN_FALCON_ENGINE` and MAN-FALCON-ENGINE.pdf agree."""
    return _NOT_ID.sub("-", unicodedata.normalize("NFKC", doc_id).casefold()).strip("-")


def stem_key(relpath: str) -> str:
    """The id key of a document's file name without its extension: the id every document has."""
    return id_key(strip_extension(PurePosixPath(relpath).name))


def folder_chain(library: str, relpath: str) -> list[tuple[str, str]]:
    """(uri, name) of each folder from the library down to the document's own folder."""
    chain = []
    uri = library
    for part in PurePosixPath(relpath).parts[:-1]:
        uri = f"{uri}/{name_slug(part)}"
        chain.append((uri, part))
    return chain


def document_uri(library: str, relpath: str) -> str:
    parts = PurePosixPath(relpath).parts
    folders = "".join(f"/{name_slug(part)}" for part in parts[:-1])
    return f"{library}{folders}/{name_slug(strip_extension(parts[-1]))}"


def folder_uri(library: str, relfolder: str) -> str:
    parts = PurePosixPath(relfolder).parts if relfolder else ()
    return library + "".join(f"/{name_slug(part)}" for part in parts)


def section_uri(document: str, heading_path: str) -> str:
    return f"{document}#{heading_path}"
