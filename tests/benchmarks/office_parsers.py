"""Office parser benchmark (not a test): lakegraph's reader against docling (its format backends,
no ML models, no torch) and the format-specific libraries (python-docx, python-pptx, openpyxl,
odfpy, asciidoc-py) on the real samples of ../shared/corpora/office-samples and on the hostile files of
tests/hostile_office.py: headings, links and text found, files refused or crashed, and speed.

    pip install 'docling-slim[format-office,format-opendocument,format-markdown]' python-docx python-pptx openpyxl odfpy asciidoc
    python -m tests.benchmarks.office_parsers [--repeat 5]

A candidate that is not installed is left out. "Headings" counts section headings (slides for
a deck, a Title paragraph excluded); "links" hyperlinks; "text" characters of text; "failed"
the samples a reader raised an error on. Each file runs `--repeat` times in this process; the
time is the median, summed over the files. Hostile files: lakegraph refuses with a reason (its
`Skipped`), the others raise whatever their library raises, or load the file.
"""

from __future__ import annotations

import argparse
import html
import io
import re
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.corpora import OFFICE_SAMPLES
from tests.hostile_office import files as hostile_files
from worker.documents.formats import FORMATS
from worker.documents.rules import DocumentRules
from worker.documents.source import Skipped, build

SAMPLES = OFFICE_SAMPLES
RULES = DocumentRules.defaults()


@dataclass(frozen=True)
class Found:
    headings: int
    links: int
    text: int


Reader = Callable[[str, bytes], Found]


def lakegraph(name: str, data: bytes) -> Found:
    record = build("bench", name, data, RULES)
    links = len(record.links) + sum(len(section.links) for section in record.sections)
    return Found(len(record.sections), links, len(record.text) + sum(len(section.text) for section in record.sections))


def docling_reader() -> Reader:
    from docling.backend.asciidoc_backend import AsciiDocBackend
    from docling.backend.msexcel_backend import MsExcelDocumentBackend
    from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend
    from docling.backend.msword_backend import MsWordDocumentBackend
    from docling.backend.opendocument_backend import OdtDocumentBackend
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument
    from docling_core.types.doc import DocItemLabel

    backends = {
        ".docx": (InputFormat.DOCX, MsWordDocumentBackend),
        ".docm": (InputFormat.DOCX, MsWordDocumentBackend),
        ".pptx": (InputFormat.PPTX, MsPowerpointDocumentBackend),
        ".pptm": (InputFormat.PPTX, MsPowerpointDocumentBackend),
        ".xlsx": (InputFormat.XLSX, MsExcelDocumentBackend),
        ".xlsm": (InputFormat.XLSX, MsExcelDocumentBackend),
        ".odt": (InputFormat.ODT, OdtDocumentBackend),
        ".adoc": (InputFormat.ASCIIDOC, AsciiDocBackend),
        ".asciidoc": (InputFormat.ASCIIDOC, AsciiDocBackend),
    }

    def read(name: str, data: bytes) -> Found:
        fmt, backend = backends[Path(name).suffix.lower()]
        document = InputDocument(path_or_stream=io.BytesIO(data), format=fmt, backend=backend, filename=name)
        if not document.valid:
            raise ValueError("docling refused the file")
        converted = document._backend.convert()
        items = [item for item, _ in converted.iterate_items()]
        headings = sum(getattr(item, "label", None) == DocItemLabel.SECTION_HEADER for item in items)
        if fmt in (InputFormat.PPTX, InputFormat.XLSX):  # a slide, a sheet: a page
            headings = len(converted.pages) or sum(getattr(item, "label", None) == DocItemLabel.TITLE for item in items)
        links = sum(getattr(item, "hyperlink", None) is not None for item in items)
        text = sum(len(getattr(item, "text", "") or "") for item in items)
        text += sum(len(cell.text) for item in items for cell in getattr(getattr(item, "data", None), "table_cells", []) or [])
        return Found(headings, links, text)

    return read


def python_docx(name: str, data: bytes) -> Found:
    import docx

    document = docx.Document(io.BytesIO(data))
    paragraphs = list(document.paragraphs) + [p for table in document.tables for row in table.rows for cell in row.cells for p in cell.paragraphs]
    headings = sum(bool(p.style is not None and p.style.name.lower().startswith("heading")) for p in document.paragraphs)
    return Found(headings, sum(len(p.hyperlinks) for p in paragraphs), sum(len(p.text) for p in paragraphs))


def python_pptx(name: str, data: bytes) -> Found:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    links = text = 0
    for slide in deck.slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text += len(paragraph.text)
                    links += sum(run.hyperlink.address is not None for run in paragraph.runs)
    return Found(len(deck.slides), links, text)


def openpyxl_reader(name: str, data: bytes) -> Found:
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(data), read_only=False, data_only=True)
    cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
    links = sum(cell.hyperlink is not None for cell in cells)
    return Found(len(book.sheetnames), links, sum(len(str(cell.value)) for cell in cells if cell.value is not None))


def odfpy(name: str, data: bytes) -> Found:
    from odf import teletype, text
    from odf.opendocument import load

    document = load(io.BytesIO(data))
    paragraphs = document.getElementsByType(text.P) + document.getElementsByType(text.H)
    return Found(
        len(document.getElementsByType(text.H)),
        len(document.getElementsByType(text.A)),
        sum(len(teletype.extractText(paragraph)) for paragraph in paragraphs),
    )


def asciidoc_py(name: str, data: bytes) -> Found:
    from asciidoc import asciidoc

    out = io.StringIO()
    asciidoc.execute("asciidoc", [("--backend", "html5"), ("--no-header-footer", None), ("--out-file", out)], [io.StringIO(data.decode())])
    rendered = out.getvalue()
    plain = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    return Found(len(re.findall(r"<h[2-6]\b", rendered)), len(re.findall(r"<a href=", rendered)), len(" ".join(plain.split())))


def candidates() -> dict[str, tuple[Reader, tuple[str, ...]]]:
    """Each installed reader and the extensions it reads."""
    found: dict[str, tuple[Reader, tuple[str, ...]]] = {"lakegraph (lxml)": (lakegraph, tuple(FORMATS))}
    optional: list[tuple[str, Callable[[], Reader], tuple[str, ...]]] = [
        ("docling backends", docling_reader, (".docx", ".docm", ".pptx", ".pptm", ".xlsx", ".xlsm", ".odt", ".adoc", ".asciidoc")),
        ("python-docx", lambda: python_docx, (".docx", ".docm")),
        ("python-pptx", lambda: python_pptx, (".pptx", ".pptm")),
        ("openpyxl", lambda: openpyxl_reader, (".xlsx", ".xlsm")),
        ("odfpy", lambda: odfpy, (".odt",)),
        ("asciidoc-py", lambda: asciidoc_py, (".adoc", ".asciidoc")),
    ]
    for name, make, extensions in optional:
        try:
            found[name] = (make(), extensions)
        except ImportError as err:
            print(f"{name}: not installed ({err.name})")
    return found


def run(reader: Reader, name: str, data: bytes, repeat: int) -> tuple[Found | str, float]:
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        try:
            result = reader(name, data)
        except Skipped as refused:
            return f"refused: {refused}", time.perf_counter() - began
        except (Exception, SystemExit) as err:  # a candidate's failure is a finding (asciidoc-py exits), not the benchmark's end
            return f"raised: {type(err).__name__}: {str(err)[:80]}", time.perf_counter() - began
        times.append(time.perf_counter() - began)
    assert result is not None
    return result, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    samples = sorted(path for path in SAMPLES.iterdir() if path.suffix.lower() in FORMATS)
    hostile = hostile_files()
    readers = candidates()
    warnings.filterwarnings("ignore")
    print(f"\n{len(samples)} samples in {SAMPLES}, {len(hostile)} hostile files\n")
    print(
        f"{'reader':<18} {'format':<9} {'files':>5} {'headings':>8} {'links':>6} {'text':>8} {'failed':>6} {'ms':>8}   hostile: refused with a reason / raised / loaded"
    )
    for name, (reader, extensions) in readers.items():
        by_format: dict[str, list[tuple[Found | str, float]]] = {}
        for path in samples:
            if path.suffix.lower() in extensions:
                by_format.setdefault(FORMATS[path.suffix.lower()], []).append(run(reader, path.name, path.read_bytes(), args.repeat))
        outcomes = [run(reader, item.name, item.data, 1)[0] for item in hostile if Path(item.name).suffix.lower() in extensions]
        refused = sum(isinstance(outcome, str) and outcome.startswith("refused") for outcome in outcomes)
        raised = sum(isinstance(outcome, str) and outcome.startswith("raised") for outcome in outcomes)
        hostile_text = f"{refused} / {raised} / {len(outcomes) - refused - raised}"
        for fmt, results in sorted(by_format.items()):
            good = [found for found, _ in results if isinstance(found, Found)]
            total = sum(seconds for _, seconds in results) * 1000
            print(
                f"{name:<18} {fmt:<9} {len(results):>5} {sum(f.headings for f in good):>8} {sum(f.links for f in good):>6} "
                f"{sum(f.text for f in good):>8} {len(results) - len(good):>6} {total:>8.1f}   {hostile_text}"
            )
            hostile_text = ""


if __name__ == "__main__":
    main()
