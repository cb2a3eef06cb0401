"""How files become documents, as the documents settings say: size limit, id link schemes, where
ids are declared. Plain and picklable, since parse workers in other processes receive it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cached_property

from worker.settings import DEFAULTS_FILE, DocumentsSettings


@dataclass(frozen=True)
class DocumentRules:
    max_bytes: int
    unpacked_bytes: int  # an Office file's XML parts, decompressed, in all
    unpack_ratio: float  # decompressed over compressed size, per part
    parse_seconds: float  # a file's parse stops past this (time_limit)
    max_sections: int  # a file with more is refused before any write
    id_schemes: tuple[str, ...]
    id_fields: tuple[str, ...]  # front-matter keys / meta tag names that declare a document's id
    id_patterns: tuple[str, ...]  # regexes over a PDF's opening lines; group 1 is the id

    @classmethod
    def of(cls, documents: DocumentsSettings) -> DocumentRules:
        return cls(
            max_bytes=documents.max_file_bytes,
            unpacked_bytes=documents.unpacked_bytes,
            unpack_ratio=documents.unpack_ratio,
            parse_seconds=documents.parse_seconds,
            max_sections=documents.max_sections,
            id_schemes=tuple(documents.id_schemes),
            id_fields=tuple(documents.id_fields),
            id_patterns=tuple(documents.id_patterns),
        )

    @classmethod
    def defaults(cls) -> DocumentRules:
        """The shipped defaults, for parsing without a configuration (tests, one-off tools)."""
        with DEFAULTS_FILE.open("rb") as handle:
            documents = tomllib.load(handle)["documents"]
        return cls.of(DocumentsSettings.model_validate(documents))

    def refusal(self, stamp: str) -> str:
        """What a refused file is remembered by: its stamp and the limits that refused it, so it
        is read again when either changes."""
        return f"{stamp} max_bytes={self.max_bytes} parse_seconds={self.parse_seconds:g} unpacked_bytes={self.unpacked_bytes} unpack_ratio={self.unpack_ratio:g} max_sections={self.max_sections}"

    @cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(pattern) for pattern in self.id_patterns)
