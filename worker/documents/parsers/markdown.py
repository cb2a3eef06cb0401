"""Markdown (CommonMark + GFM) structure: front matter, ATX and setext headings, links, anchors.

A line scanner rather than a full renderer: lakegraph needs headings in reading order, the
text directly under each, and the links and explicit anchors written there — quickly, for
libraries of tens of thousands of files. Fenced and indented code are text, never headings or
links; link reference definitions may appear anywhere in the file.
"""

from __future__ import annotations

import re

import yaml

from worker.documents.model import Block, ParsedFile, RawLink, new_parsed_file
from worker.documents.parsers.inline import html_ids, html_links, strip_html

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_CODE_INDENTS = ("    ", "\t")
# CommonMark's HTML block of block-level tags (its kind 6): it runs to a blank line and is HTML, not
# Markdown: a `#` line in it (a comment in a table cell's code) is no heading, `[x][y]` no link.
_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|"
    r"fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|"
    r"nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?:[ \t>]|/>|$)",
    re.IGNORECASE,
)
_NOT_PARAGRAPH_START = re.compile(r"^ {0,3}(?:[-*+>]|\d{1,9}[.)])(?:[ \t]|$)")
_REF_DEF = re.compile(r"""^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]*)>?(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$""")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK = re.compile(
    r"""(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([ \t]*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"""
    r"""(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*\)"""
)
_FULL_REF = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\[([^\]]*)\]")
_SHORTCUT_REF = re.compile(r"(!?)\[([^\[\]]+)\](?![\[(:])")
_AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.\-]{1,31}:[^\s<>]*)>")
_BARE_URL = re.compile(r"(?<![(<\"'=])\bhttps?://[^\s<>\])]+")
_CODE_SPAN_MARK = re.compile("\x00(\\d+)\x00")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash before ASCII punctuation makes it literal
_ESCAPE_MARK = re.compile("\x01(\\d+)\x01")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_TRAILING_PUNCT = ".,;:!?*_~'\""
# Emphasis: `*`/`~` runs, and `_` runs that open and close around text at a word's edges; a lone
# `_` (`One character (_)`) or one inside a word (`snake_case`) is text.
_EMPHASIS = re.compile(r"[*~]+|(?<![^\W_])(_+)(?=[^\s_])(.+?)(?<=[^\s_])\1(?![^\W_])")


# A block's regex is tried only on lines whose first non-space character can open that block.
_FENCE_HEADS = ("`", "~")
_SETEXT_HEADS = ("=", "-")


def _head(line: str) -> str:
    return line.lstrip(" ")[:1]


def _label(text: str) -> str:
    return " ".join(text.lower().split())


def parse(text: str) -> ParsedFile:
    parsed = new_parsed_file()
    lines = text.splitlines()
    start = _front_matter(lines, parsed)
    body = lines[start:]
    definitions = _definitions(body)
    scanner = _Scanner(parsed, definitions)
    for line in body:
        scanner.feed(line)
    scanner.finish()
    return parsed


def _front_matter(lines: list[str], parsed: ParsedFile) -> int:
    """YAML between a first-line `---` and the next `---`/`...`; returns the first body line."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            source = "\n".join(lines[1:index])
            try:
                data = yaml.load(source, Loader=_YAML_LOADER) if source.strip() else {}
            except yaml.YAMLError as err:
                mark = getattr(err, "problem_mark", None)
                where = f" at line {mark.line + 2}" if mark is not None else ""
                parsed.problems.append(f"malformed front matter{where}: {getattr(err, 'problem', err)}")
                return index + 1
            if isinstance(data, dict):
                parsed.front_matter = {str(key): value for key, value in data.items()}
            elif data is not None:
                parsed.problems.append("front matter is not a mapping; ignored")
            return index + 1
    return 0  # no closing line: a thematic break, not front matter


def _definitions(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    fence: str | None = None
    for line in lines:
        head = _head(line)
        opened = _FENCE.match(line) if head in _FENCE_HEADS else None
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not opened.group(2).strip():
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _REF_DEF.match(line) if head == "[" else None
        if match:
            found.setdefault(_label(match.group(1)), match.group(2))
    return found


class _Scanner:
    """Feeds lines one by one into blocks, holding paragraph lines until a setext underline or a break."""

    def __init__(self, parsed: ParsedFile, definitions: dict[str, str]) -> None:
        self.parsed = parsed
        self.definitions = definitions
        self.block: Block = parsed.preamble
        self.paragraph: list[str] = []
        self.fence: str | None = None
        self.in_comment = False
        self.html: list[str] = []  # the lines of the HTML block being read

    def feed(self, line: str) -> None:
        if self.fence is not None:
            self._in_fence(line)
            return
        if self.in_comment:
            if "-->" in line:
                self.in_comment = False
                line = line.split("-->", 1)[1]
            else:
                return
        if "<!--" in line:
            line = _COMMENT.sub("", line)
            if "<!--" in line:
                line, self.in_comment = line.split("<!--", 1)[0], True
        head = _head(line)
        fence = _FENCE.match(line) if head in _FENCE_HEADS else None
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            self._flush()
            self.fence = fence.group(1)
            return
        if not line.strip():
            self._flush()
            return
        if self.html:
            self.html.append(line)
            return
        if head == "<" and _HTML_BLOCK.match(line):
            self._flush()
            self.html.append(line)
            return
        if not self.paragraph and line.startswith(_CODE_INDENTS):
            self.block.text_parts.append(line.strip())
            return
        atx = _ATX.match(line) if head == "#" else None
        if atx:
            self._flush()
            self._heading(atx.group(2) or "", len(atx.group(1)))
            return
        setext = _SETEXT.match(line) if head in _SETEXT_HEADS and self.paragraph else None
        if setext and self.paragraph and not _NOT_PARAGRAPH_START.match(self.paragraph[0]):
            title = " ".join(part.strip() for part in self.paragraph)
            self.paragraph = []
            self._heading(title, 1 if setext.group(1)[0] == "=" else 2)
            return
        if head == "[" and not self.paragraph and _REF_DEF.match(line):
            return
        self.paragraph.append(line)

    def finish(self) -> None:
        self._flush()

    def _in_fence(self, line: str) -> None:
        assert self.fence is not None  # only called inside a fence
        closing = _FENCE.match(line) if _head(line) in _FENCE_HEADS else None
        if closing and closing.group(1)[0] == self.fence[0] and len(closing.group(1)) >= len(self.fence) and not closing.group(2).strip():
            self.fence = None
            return
        self.block.text_parts.append(line)

    def _heading(self, raw_title: str, level: int) -> None:
        title, links, ids = self._inline(raw_title.strip(), heading=True)
        self.block = Block(title=title, level=level, ids=ids, links=links)
        self.parsed.blocks.append(self.block)

    def _flush(self) -> None:
        if self.html:
            block = "\n".join(self.html)
            self.html = []
            self.block.text_parts.append(strip_html(block))
            self.block.links.extend(link for _, link in html_links(block))
            self.block.ids.extend(html_ids(block))
        if not self.paragraph:
            return
        text, links, ids = self._inline("\n".join(self.paragraph))
        self.paragraph = []
        self.block.text_parts.append(text)
        self.block.links.extend(links)
        self.block.ids.extend(ids)

    def _inline(self, text: str, heading: bool = False) -> tuple[str, list[RawLink], list[str]]:
        """Links and anchors of a paragraph, and its readable text (link targets and tags removed);
        a heading's text also loses its emphasis marks, never the `_` of its code or escapes."""
        links: list[tuple[int, RawLink]] = []
        spans: list[str] = []

        def hide_code(match: re.Match[str]) -> str:
            spans.append(match.group(2))
            return f"\x00{len(spans) - 1}\x00"

        work = _CODE_SPAN.sub(hide_code, text) if "`" in text else text
        escaped: list[str] = []

        def hide_escape(match: re.Match[str]) -> str:
            escaped.append(match.group(1))
            return f"\x01{len(escaped) - 1}\x01"

        if "\\" in work:  # `\<String\>` is text, not a tag; `\[` opens no link
            work = _ESCAPE.sub(hide_escape, work)

        def inline(match: re.Match[str]) -> str:
            label = match.group(2)
            if not match.group(1):
                href = match.group(3).strip("<>")
                links.append((match.start(), RawLink(href, _plain_label(label), "inline")))
            return label

        def full_ref(match: re.Match[str]) -> str:
            label = match.group(2)
            target = self.definitions.get(_label(match.group(3) or label))
            if target is not None and not match.group(1):
                links.append((match.start(), RawLink(target, _plain_label(label), "reference")))
            return label

        def shortcut(match: re.Match[str]) -> str:
            target = self.definitions.get(_label(match.group(2)))
            if target is None:
                return match.group(0)
            if not match.group(1):
                links.append((match.start(), RawLink(target, match.group(2), "reference")))
            return match.group(2)

        # Each pass runs only where its opening character occurs: most lines of prose have none.
        if "[" in work:
            work = _INLINE_LINK.sub(inline, work)
            work = _FULL_REF.sub(full_ref, work)
            work = _SHORTCUT_REF.sub(shortcut, work)
        if "<" in work:
            for match in _AUTOLINK.finditer(work):
                links.append((match.start(), RawLink(match.group(1), match.group(1), "autolink")))
            work = _AUTOLINK.sub(lambda match: match.group(1), work)
        if "://" in work:
            seen = {link.href for _, link in links}
            for match in _BARE_URL.finditer(work):
                url = match.group(0).rstrip(_TRAILING_PUNCT)
                if url not in seen:
                    links.append((match.start(), RawLink(url, url, "autolink")))
        for offset, link in html_links(work):
            links.append((offset, link))
        ids = html_ids(work)
        readable = strip_html(work)
        if heading:
            readable = _EMPHASIS.sub(lambda match: match.group(2) or "", readable)
        if spans:
            readable = _CODE_SPAN_MARK.sub(lambda match: spans[int(match.group(1))], readable)
        ordered = [link for _, link in sorted(links, key=lambda item: item[0])]
        if escaped:

            def literal(value: str) -> str:
                return _ESCAPE_MARK.sub(lambda match: escaped[int(match.group(1))], value)

            readable, ids = literal(readable), [literal(value) for value in ids]
            ordered = [RawLink(literal(link.href), literal(link.text), link.kind) for link in ordered]
        return readable, ordered, ids


def _plain_label(label: str) -> str:
    return " ".join(_INLINE_LINK.sub(lambda match: match.group(2), label).split())
