"""HTML structure: h1-h6 headings, `<a href>` links, `id`/`name` anchors; `<title>` and
`<meta name=... content=...>` play the part of front matter."""

from __future__ import annotations

from html.parser import HTMLParser

from worker.documents.model import Block, ParsedFile, RawLink, new_parsed_file

HEADINGS = {f"h{level}": level for level in range(1, 7)}
SKIPPED = {"script", "style", "template", "noscript"}
BREAKS = {"p", "div", "li", "tr", "br", "section", "article", "pre", "blockquote", "table", "ul", "ol", "dd", "dt"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parsed = new_parsed_file()
        self.block: Block = self.parsed.preamble
        self.heading: tuple[int, list[str], list[str]] | None = None  # level, text, ids
        self.link: tuple[str, list[str]] | None = None
        self.skipping = 0
        self.in_title = False
        self.title: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if tag in SKIPPED:
            self.skipping += 1
            return
        if tag == "title":
            self.in_title = True
        elif tag == "meta" and values.get("name") and "content" in values:
            self.parsed.front_matter.setdefault(values["name"], values["content"])
        anchors = [values[key] for key in ("id", "name") if values.get(key) and not (tag == "meta" and key == "name")]
        if tag in HEADINGS:
            self._flush_text()
            self.heading = (HEADINGS[tag], [], anchors)
            return
        if self.heading is not None:
            self.heading[2].extend(anchors)
        else:
            self.block.ids.extend(anchors)
        if tag == "a" and "href" in values:
            self.link = (values["href"], [])
        if tag in BREAKS:
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag == "title":
            self.in_title = False
        elif tag in HEADINGS and self.heading is not None:
            level, words, ids = self.heading
            self.heading = None
            self.block = Block(title=" ".join("".join(words).split()), level=level, ids=ids)
            self.parsed.blocks.append(self.block)
            self._take_pending_link()
        elif tag == "a" and self.link is not None:
            self._take_pending_link()
        elif tag in BREAKS:
            self.text.append("\n")

    def _take_pending_link(self) -> None:
        if self.link is None:
            return
        href, words = self.link
        self.link = None
        self.block.links.append(RawLink(href, " ".join("".join(words).split()), "html"))

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.in_title:
            self.title.append(data)
            return
        if self.link is not None:
            self.link[1].append(data)
        if self.heading is not None:
            self.heading[1].append(data)
        else:
            self.text.append(data)

    def _flush_text(self) -> None:
        text = "\n".join(" ".join(line.split()) for line in "".join(self.text).splitlines())
        self.block.text_parts.append("\n".join(line for line in text.splitlines() if line))
        self.text = []

    def result(self) -> ParsedFile:
        self._flush_text()
        title = " ".join("".join(self.title).split())
        if title:
            self.parsed.front_matter.setdefault("title", title)
        return self.parsed


def parse(text: str) -> ParsedFile:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.result()
