"""One Markdown library written again by writers this project does not control: pandoc into Word,
OpenDocument and AsciiDoc (each heading's bookmark or anchor placed pandoc's way), those Word files
opened and saved again by python-docx, and Word files pandoc converts from its OpenDocument files.

Links to `.md` files are pointed at the rendered file's extension first, as a publishing pipeline
does (a pandoc Lua filter), so each rendered library links to itself. Headings get GitHub's
identifiers (`gfm`), the same slugs the Markdown reader gives. YAML front matter is taken off and
its fields given to pandoc as metadata, as DocFX-style pipelines do (pandoc's own YAML reader
refuses front matter real estates write, such as an unquoted `- %`): Word and OpenDocument keep
them as document properties, AsciiDoc as header attributes (`:id: TSB-20-500`). Files are rendered by a small pool of pandoc processes; a file pandoc refuses is
reported, never silently dropped.

    python -m tests.writers SOURCE OUT --writer docx|odt|asciidoc|docx-resaved|docx-from-odt
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docx
import yaml

PANDOC = "pandoc"
READER = "gfm"
WRITERS = ("docx", "odt", "asciidoc", "docx-resaved", "docx-from-odt")
EXTENSIONS = {"docx": ".docx", "odt": ".odt", "asciidoc": ".adoc", "docx-resaved": ".docx", "docx-from-odt": ".docx"}
PANDOC_FORMATS = {"docx": "docx", "odt": "odt", "asciidoc": "asciidoc"}
# The document header a pipeline's AsciiDoc template writes: the title and the document's id attribute.
ASCIIDOC_TEMPLATE = """$if(title)$
= $title$
$endif$
$if(id)$
:id: $id$
$endif$

$body$
"""
PROCESSES = 4  # pandoc is a single-threaded process; a few overlap their start-up
# A publishing pipeline's link rewrite: `other.md#x` becomes `other.docx#x`, any case of `.md`, and
# DocFX's `xref:System.String` the API page it stands for (an external link either way).
LINK_FILTER = """
function Link(el)
  if el.target:match("^xref:") then
    el.target = "https://learn.microsoft.com/dotnet/api/" .. el.target:sub(6):lower()
  else
    el.target = el.target:gsub("%.[mM][dD]$", "{extension}"):gsub("%.[mM][dD]#", "{extension}#")
  end
  return el
end
"""


# What pandoc cannot carry from Markdown into these formats, so a file that has it reads as another
# graph whatever the reader: raw HTML anchors (`<a id="ex3"></a>`, `<span id='quality-nov'>`) are
# dropped from every one; its
# AsciiDoc writer fences a listing with `----` (or `....`) without looking inside it, so a code line
# that is exactly its delimiter ends the listing early (for Asciidoctor too).
_HTML_ANCHOR = re.compile(r"<[a-z][a-z0-9]*\s[^>]*\b(?:id|name)\s*=", re.I)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ASCIIDOC_DELIMITERS = ("----", "....")


def unfaithful(markdown: str, writer: str) -> bool:
    """Whether pandoc's `writer` cannot carry this Markdown: what it writes reads as another graph."""
    if _HTML_ANCHOR.search(markdown):
        return True
    if writer != "asciidoc":
        return False
    fence = ""
    for line in markdown.splitlines():
        opened = _FENCE.match(line)
        if fence and opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line.strip()[len(opened.group(1)) :].strip():
            fence = ""
        elif fence and line.strip() in _ASCIIDOC_DELIMITERS:
            return True
        elif not fence and opened:
            fence = opened.group(1)
    return False


def available() -> bool:
    return shutil.which(PANDOC) is not None


def version() -> str:
    return subprocess.run([PANDOC, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]


FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


def _metadata(front_matter: str) -> dict[str, object]:
    """The front matter's fields, as a pipeline hands them to its converter (only the title when the
    YAML does not parse: read as a lenient reader would)."""
    try:
        data = yaml.safe_load(front_matter)
    except yaml.YAMLError:
        found = re.search(r"^title:\s*(.+)$", front_matter, re.M)
        return {"title": found.group(1).strip().strip("'\"")} if found else {}
    return {str(key): value for key, value in data.items() if isinstance(value, str | int | float)} if isinstance(data, dict) else {}


def _pandoc(source: Path, target: Path, to: str, lua: Path, markdown: Path | None = None) -> None:
    """`source` (Markdown, else a file pandoc reads by its extension) written as `to`, with the
    front matter of `markdown` (the source itself when Markdown) as metadata: Word and ODF keep it
    as document properties, AsciiDoc as header attributes. A converter of OpenDocument to Word is
    given the original's properties again, as a pipeline keeps a document's id through a conversion."""
    target.parent.mkdir(parents=True, exist_ok=True)
    is_markdown = source.suffix.lower() == ".md"
    text = (markdown or source).read_text(encoding="utf-8", errors="replace")
    front = FRONT_MATTER.match(text)
    command = [PANDOC, "-f", READER if is_markdown else source.suffix.lstrip("."), "-t", to, "--lua-filter", str(lua), "-o", str(target)]
    with tempfile.TemporaryDirectory() as work:
        metadata = Path(work) / "metadata.yaml"
        metadata.write_text(yaml.safe_dump(_metadata(front.group(1)) if front else {}))
        command += [f"--metadata-file={metadata}"]
        if to == "asciidoc":
            template = Path(work) / "template.asciidoc"
            template.write_text(ASCIIDOC_TEMPLATE)
            command += ["--standalone", f"--template={template}"]
        if is_markdown:  # the body alone: pandoc's own YAML reader refuses some front matter
            done = subprocess.run(command, input=text[front.end() :] if front else text, capture_output=True, text=True)
        else:
            done = subprocess.run([*command, str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pandoc refused {source}: {done.stderr.strip()}")


def _resave(path: Path) -> None:
    docx.Document(str(path)).save(str(path))


def render(source: Path, out: Path, writer: str) -> list[Path]:
    """Every Markdown file under `source` written by `writer` under `out`, at the same relative path
    with the writer's extension; returns the files written."""
    if writer not in WRITERS:
        raise ValueError(f"unknown writer {writer!r}: one of {', '.join(WRITERS)}")
    extension = EXTENSIONS[writer]
    out.mkdir(parents=True, exist_ok=True)
    lua = out.parent / f".{out.name}-links.lua"
    lua.write_text(LINK_FILTER.replace("{extension}", extension))
    sources = sorted(path for path in source.rglob("*") if path.is_file() and path.suffix.lower() == ".md")
    jobs: list[Callable[[], Path]] = []
    for path in sources:
        target = (out / path.relative_to(source)).with_suffix(extension)
        jobs.append(lambda path=path, target=target: _write(path, target, writer, lua))
    with ThreadPoolExecutor(PROCESSES) as pool:
        written = list(pool.map(lambda job: job(), jobs))
    lua.unlink()
    return written


def _write(path: Path, target: Path, writer: str, lua: Path) -> Path:
    if writer in PANDOC_FORMATS:
        _pandoc(path, target, PANDOC_FORMATS[writer], lua)
    elif writer == "docx-resaved":
        _pandoc(path, target, "docx", lua)
        _resave(target)
    else:  # docx-from-odt: the OpenDocument file converted again, its links already pointing at .docx
        odt = target.with_suffix(".odt")
        _pandoc(path, odt, "odt", lua)
        _pandoc(odt, target, "docx", lua, markdown=path)
        odt.unlink()
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--writer", choices=WRITERS, default="docx")
    args = parser.parse_args()
    written = render(args.source, args.out, args.writer)
    print(f"{len(written)} files written by {version()} ({args.writer}) under {args.out}")


if __name__ == "__main__":
    main()
