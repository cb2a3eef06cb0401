"""The file formats a library holds: each extension and the parser that reads it. The one home of
this list: the settings' allowed extensions, link paths without extensions and the parsers' choice
all read it."""

from __future__ import annotations

FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".docm": "docx",  # macro-enabled: read like .docx, its macros never read nor run
    ".pptx": "pptx",
    ".pptm": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".odt": "odt",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
}
TEXT_FORMATS = frozenset({"markdown", "html", "asciidoc"})  # decoded as UTF-8 text before parsing
NAMELESS_FIRST_SECTION = frozenset({"xlsx"})  # a workbook's first sheet ("Sheet1") does not name it: its file does
