"""One technical library rendered several ways: as Markdown, as PDF the way publishers render it,
and as Word documents.

The PDFs follow the conventions of a real rendered library: a title in large type under a
running header (the publisher's name), a metadata block (`Document: TSB-20-501`), numbered
headings (`2.1 Coil identification`) with no bookmarks, `doc://ID#anchor`, `doc://ID#heading/path`
(the section's path, as its URI spells it) and relative link annotations that wrap across lines, and a running footer with page numbers; `/Title` is
reportlab's "untitled". The bookmarked variant adds an outline and a meaningful `/Title`. The
Word documents have a "Title" paragraph and core properties (title, and dc:identifier for
bulletins), numbered "heading N" paragraphs each inside a bookmark, and hyperlinks: external
relationships with `w:anchor` bookmarks for paths, URLs and `doc://` links as targets.
Bulletins declare their ids in the text; manuals have none and are found by file name
(`doc://man-falcon-engine` ↔ `MAN-FALCON-ENGINE.pdf`).

    python -m tests.rendered_library OUT --format pdf|pdf-outline|markdown|docx [--documents N]
"""

from __future__ import annotations

import argparse
import io
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import Paragraph as PdfParagraph
from reportlab.platypus import SimpleDocTemplate, Spacer

from worker.demo.docx import Paragraph, Run, make_docx

Format = Literal["markdown", "pdf", "pdf-outline", "docx"]
FORMATS: tuple[Format, ...] = ("markdown", "pdf", "pdf-outline", "docx")
EXTENSIONS: dict[Format, str] = {"markdown": ".md", "pdf": ".pdf", "pdf-outline": ".pdf", "docx": ".docx"}
PUBLISHER = "ACME MOTORS TECHNICAL PUBLICATIONS"
SYSTEMS = ("ignition", "fuel", "cooling", "brakes", "charging", "transmission", "steering", "lighting")
TOPICS = ("identification", "inspection", "removal", "installation", "testing", "specifications", "diagnosis")
FILLER = (
    "Work on a cold engine with the ignition off and the battery disconnected. Keep the work area "
    "clean, note the position of every connector before removal, and torque fasteners to the values "
    "in the specifications table. Record the repair order number on the warranty tag."
)


@dataclass(frozen=True)
class Link:
    target: str  # "doc:ID#anchor" or "path:relpath-without-extension#anchor" or "url:https://..."
    text: str


@dataclass
class Section:
    number: str
    name: str
    paragraphs: list[list[str | Link]] = field(default_factory=list)

    @property
    def level(self) -> int:
        return self.number.count(".") + 1

    @property
    def anchor(self) -> str:
        return self.name.lower().replace(" ", "-")


@dataclass
class Document:
    relpath: str  # without extension
    title: str
    doc_id: str  # declared in the text; "" for documents found by file name
    sections: list[Section] = field(default_factory=list)

    def path(self, section: Section) -> str:
        """The section's heading path: its ancestors' anchors and its own (`procedure/torque-values`)."""
        numbers = section.number.split(".")
        by_number = {candidate.number: candidate for candidate in self.sections}
        return "/".join(by_number[".".join(numbers[: depth + 1])].anchor for depth in range(len(numbers)))


def _name(system: str, topic: str) -> str:
    return f"{system.capitalize()} {topic}"


def build(documents: int = 12, seed: int = 7) -> list[Document]:
    """Bulletins (with ids) and manuals (without), cross-linked by id, by file name and by path."""
    rng = random.Random(seed)
    docs: list[Document] = []
    for index in range(documents):
        system = SYSTEMS[index % len(SYSTEMS)]
        if index % 3 == 2:
            relpath = f"manuals/MAN-{system.upper()}-{index:02d}"
            docs.append(Document(relpath, f"{system.capitalize()} system manual {index}", ""))
        else:
            doc_id = f"TSB-{20 + index % 5}-{500 + index}"
            docs.append(Document(f"bulletins/tsb-{20 + index % 5}-{500 + index}-{system}", f"{system.capitalize()} service bulletin {doc_id}", doc_id))
    for doc, system in zip(docs, (SYSTEMS[index % len(SYSTEMS)] for index in range(documents)), strict=True):
        topics = rng.sample(TOPICS, 3)
        doc.sections = [Section("1", "Condition"), Section("2", "Procedure")]
        doc.sections += [Section(f"2.{number}", _name(system, topic)) for number, topic in enumerate(topics, start=1)]
        doc.sections += [Section("2.3.1", "Torque values"), Section("3", "References")]
    for doc in docs:
        for section in doc.sections:
            section.paragraphs = _paragraphs(doc, section, docs, rng)
    return docs


def _paragraphs(doc: Document, section: Section, docs: list[Document], rng: random.Random) -> list[list[str | Link]]:
    other = rng.choice([candidate for candidate in docs if candidate is not doc])
    target = rng.choice(other.sections)
    other_id = other.doc_id or Path(other.relpath).name.lower()
    by_id = f"doc:{other_id}#{target.anchor}"
    paragraphs: list[list[str | Link]] = [[FILLER]]
    if section.number == "1":
        paragraphs.append(
            [
                "Vehicles may show the condition described here; see ",
                Link(by_id, f"the {target.name.lower()} section of {other.title}, which describes the same symptoms in detail"),
                " before replacing parts.",
            ]
        )
    elif section.number == "2":
        paragraphs.append(["1 Disconnect the battery negative cable."])
        paragraphs.append(["2 Use a 12.5 mm socket and the torque values in 2.3.1."])
    elif section.number == "3":
        path = f"path:{other.relpath}#{target.anchor}"
        paragraphs.append(["Related: ", Link(path, f"{other.title}, {target.name}"), "."])
        paragraphs.append(["Parts information: ", Link("url:https://parts.acme.example/catalog", "the parts catalog"), "."])
        paragraphs += [[FILLER], [FILLER]]
    else:
        by_path = f"doc:{other_id}#{other.path(target)}"
        paragraphs.append(["Before starting, read ", Link(by_path, f"{other.title}"), " and keep it at hand."])
    return paragraphs


def _href(link: Link, fmt: Format, here: str) -> str:
    kind, _, rest = link.target.partition(":")
    if kind == "doc":
        return f"doc://{rest}"
    if kind == "url":
        return rest
    relpath, _, anchor = rest.partition("#")
    depth = here.count("/")
    return f"{'../' * depth}{relpath}{EXTENSIONS[fmt]}#{anchor}"


def markdown(doc: Document) -> str:
    lines = ["---", f"title: {doc.title}"] + ([f"id: {doc.doc_id}"] if doc.doc_id else []) + ["---", ""]
    lines += [f"Publisher: {PUBLISHER}", ""]
    for section in doc.sections:
        lines += [f"{'#' * section.level} {section.name}", ""]
        for paragraph in section.paragraphs:
            text = "".join(part if isinstance(part, str) else f"[{part.text}]({_href(part, 'markdown', doc.relpath)})" for part in paragraph)
            lines += [text.replace("1 Disconnect", "1. Disconnect").replace("2 Use", "2. Use"), ""]
    return "\n".join(lines)


def pdf(doc: Document, outline: bool) -> bytes:
    styles = getSampleStyleSheet()
    heading_styles = {1: styles["Heading1"], 2: styles["Heading2"], 3: styles["Heading3"]}
    buffer = io.BytesIO()
    fmt: Format = "pdf-outline" if outline else "pdf"

    def furniture(canvas, template) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 8)
        canvas.drawString(72, A4[1] - 40, PUBLISHER)
        canvas.drawString(72, 30, f"{doc.doc_id or Path(doc.relpath).name} - Page {template.page}")
        canvas.restoreState()

    class Template(SimpleDocTemplate):
        def afterFlowable(self, flowable) -> None:
            mark = getattr(flowable, "outline_entry", None)
            if mark is not None:
                key, text, level = mark
                top = self.frame._y + flowable.height + 6
                self.canv.bookmarkHorizontalAbsolute(key, top)
                self.canv.addOutlineEntry(text, key, level=level - 1, closed=False)

    template = Template(buffer, pagesize=A4, title=doc.title if outline else None)
    story = [PdfParagraph(doc.title, styles["Title"]), Spacer(1, 6)]
    story += [PdfParagraph(line, styles["Normal"]) for line in ([f"Document: {doc.doc_id}"] if doc.doc_id else []) + ["Revision: 2"]]
    for position, section in enumerate(doc.sections):
        heading = PdfParagraph(f"{section.number} {section.name}", heading_styles[min(section.level, 3)])
        if outline:
            heading.outline_entry = (f"s{position}", f"{section.number} {section.name}", section.level)
        story.append(heading)
        for paragraph in section.paragraphs:
            text = "".join(
                _escape(part) if isinstance(part, str) else f'<a href="{_escape(_href(part, fmt, doc.relpath))}" color="blue">{_escape(part.text)}</a>'
                for part in paragraph
            )
            story.append(PdfParagraph(text, styles["Normal"]))
    template.build(story, onFirstPage=furniture, onLaterPages=furniture)
    return buffer.getvalue()


def docx(doc: Document) -> bytes:
    paragraphs = [Paragraph([Run(doc.title)], title=True)]
    paragraphs += [Paragraph([Run(line)]) for line in ([f"Document: {doc.doc_id}"] if doc.doc_id else []) + ["Revision: 2"]]
    for position, section in enumerate(doc.sections):
        paragraphs.append(Paragraph([Run(f"{section.number} {section.name}")], heading=section.level, bookmark=f"_Toc{position + 1000}"))
        for paragraph in section.paragraphs:
            paragraphs.append(Paragraph([Run(part) if isinstance(part, str) else Run(part.text, _href(part, "docx", doc.relpath)) for part in paragraph]))
    return make_docx(paragraphs, title=doc.title, identifier=doc.doc_id)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def write(root: Path, fmt: Format, documents: int = 12, seed: int = 7) -> list[Path]:
    """Render the library into `root` in one format; returns the files written."""
    written = []
    for doc in build(documents, seed):
        path = root / f"{doc.relpath}{EXTENSIONS[fmt]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "markdown":
            path.write_text(markdown(doc))
        elif fmt == "docx":
            path.write_bytes(docx(doc))
        else:
            path.write_bytes(pdf(doc, outline=fmt == "pdf-outline"))
        written.append(path)
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--format", choices=FORMATS, default="pdf")
    parser.add_argument("--documents", type=int, default=12)
    options = parser.parse_args()
    print(f"{len(write(options.root, options.format, options.documents))} files in {options.root}")
