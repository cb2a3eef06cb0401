"""The demo's technical library: manuals per model and system, procedures, parts pages, service
bulletins and recall notices, cross-linked the way real manuals are, as Markdown with some HTML,
a PDF and a Word document. Fault codes and part numbers appear in the text; the undocumented codes never do."""

from __future__ import annotations

import random
import re
from pathlib import Path

from worker.demo.docx import Paragraph, Run, make_docx
from worker.demo.domain import (
    FAULT_CODES,
    MODELS,
    PARTS,
    PROCEDURES,
    REVISED_PART,
    SYSTEMS,
    THEMES,
    part,
    procedure,
)
from worker.demo.pdf import make_pdf

LIBRARY = "technical-library"


def slug(text: str) -> str:
    return text.lower().replace(" ", "-")


def procedure_path(procedure_id: str) -> str:
    return f"procedures/{procedure(procedure_id).system}/{slug(procedure_id)}.md"


def part_path(number: str) -> str:
    return f"parts/{part(number).system}/{slug(number)}.md"


MARKDOWN_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")  # [text](href), as this generator writes links

HTML_BULLETINS = ("network", "body-bcm")  # published as HTML, as some dealers' portals do


def bulletin_path(system: str) -> str:
    return f"bulletins/tsb-{slug(system)}-update.{'html' if system in HTML_BULLETINS else 'md'}"


def rel(from_path: str, to_path: str) -> str:
    depth = from_path.count("/")
    return "../" * depth + to_path


def manual(model: str, system: str, rng: random.Random) -> str:
    here = f"manuals/{system}/{slug(model)}.md"
    codes = [(code, code.procedure) for code in FAULT_CODES if code.system == system and code.procedure]
    lines = [f"# {model} {system} manual", "", "## Overview", f"This chapter covers the {system} system of the {model} ({2019 + rng.randrange(5)} onwards)."]
    others = [other for other in MODELS if other != model]
    lines.append(f"For the same system on other models see [{others[0]}]({rel(here, f'manuals/{system}/{slug(others[0])}.md')}).")
    lines += ["", "## Fault codes"]
    for code, procedure_id in codes:
        proc = procedure(procedure_id)
        lines.append(f"- {code.code} {code.description}: [{proc.id} {proc.title}]({rel(here, procedure_path(proc.id))})")
    partner = next(other for systems in THEMES.values() if system in systems for other in systems if other != system)
    lines += [
        "",
        "## Related systems",
        f"Faults here often involve the {partner} system: see the [{model} {partner} manual]({rel(here, f'manuals/{partner}/{slug(model)}.md')})",
    ]
    lines += [f"- [{proc.id} {proc.title}]({rel(here, procedure_path(proc.id))})" for proc in PROCEDURES if proc.system == partner]
    lines += ["", "## Components"]
    for item in PARTS:
        if item.system == system and item.number not in {code.fixing_part for code in FAULT_CODES}:
            lines.append(f"- [{item.number}]({rel(here, part_path(item.number))}) {item.name}")
    return "\n".join(lines) + "\n"


def procedure_page(proc_id: str) -> str:
    proc = procedure(proc_id)
    here = procedure_path(proc_id)
    codes = [code for code in FAULT_CODES if code.procedure == proc_id]
    lines = [f"# {proc.id} {proc.title}", "", "## Applies to"]
    lines += [f"- {code.code} {code.description}" for code in codes]
    lines += [
        "",
        "## Parts",
        f"- [{proc.part}]({rel(here, part_path(proc.part))}) {part(proc.part).name}",
        "",
        "## Steps",
        "1. Confirm the fault code with the scan tool and record freeze-frame data.",
        f"2. Remove and replace {proc.part}.",
        "3. Clear codes, road test, and confirm the repair.",
    ]
    siblings = [other for other in PROCEDURES if other.system == proc.system and other.id != proc.id]
    lines += ["", "## Related"] + [f"- [{other.id} {other.title}]({rel(here, procedure_path(other.id))})" for other in siblings]
    return "\n".join(lines) + "\n"


def part_page(number: str) -> str:
    item = part(number)
    here = part_path(number)
    lines = [f"# {item.number} {item.name}", "", "## Description", f"Service part {item.number} for the {item.system} system."]
    if item.superseded_by:
        lines += ["", "## Supersession", f"Superseded by [{item.superseded_by}]({rel(here, part_path(item.superseded_by))})."]
    users = [proc for proc in PROCEDURES if proc.part == number]
    if users:
        lines += ["", "## Used by"] + [f"- [{proc.id}]({rel(here, procedure_path(proc.id))})" for proc in users]
    return "\n".join(lines) + "\n"


def bulletins() -> dict[str, str]:
    """Service bulletins cite procedures and parts pages; TSB-24-017 announces the revised coil."""
    revised = REVISED_PART
    docs = {}
    here = "bulletins/tsb-24-017.md"
    docs[here] = (
        f"# TSB-24-017 Recurring {revised['fault_code']} misfire\n\n## Condition\n"
        f"Vehicles return with {revised['fault_code']} after [PROC-IGN-01]({rel(here, procedure_path('PROC-IGN-01'))}).\n\n"
        f"## Cause\nCoil [{revised['old_part']}]({rel(here, part_path(revised['old_part']))}) fails under heat.\n\n"
        f"## Correction\nFit revised coil [{revised['new_part']}]({rel(here, part_path(revised['new_part']))}) from {revised['revised_on']}.\n"
    )
    for system in SYSTEMS:
        procs = [proc for proc in PROCEDURES if proc.system == system]
        here = bulletin_path(system)
        codes = [code.code for code in FAULT_CODES if code.system == system and code.procedure]
        partner = next(other for systems in THEMES.values() if system in systems for other in systems if other != system)
        docs[here] = (
            f"# TSB {system} service update\n\n## Condition\nApplies to fault codes {', '.join(codes)}.\n\n## Correction\n"
            + "\n".join(f"- Follow [{proc.id}]({rel(here, procedure_path(proc.id))}) using [{proc.part}]({rel(here, part_path(proc.part))})." for proc in procs)
            + f"\n\n## See also\n[The {partner} service update]({rel(here, bulletin_path(partner))}).\n"
        )
    return docs


def recalls() -> dict[str, str]:
    """Recall notices cite bulletins and parts pages."""
    docs = {}
    for index, system in enumerate(("brakes", "abs", "network", "body-bcm")):
        here = f"recalls/rc-{24 + index}-{slug(system)}.md"
        bulletin = bulletin_path(system)
        proc = next(proc for proc in PROCEDURES if proc.system == system)
        docs[here] = (
            f"# Recall RC-{24 + index} {system}\n\n## Defect\nA defect in the {system} system may reduce safety.\n\n"
            f"## Remedy\nDealers follow [the {system} bulletin]({rel(here, bulletin)}) and replace "
            f"[{proc.part}]({rel(here, part_path(proc.part))}).\n"
        )
    return docs


def as_html(markdown: str) -> str:
    """A bulletin as HTML (headings, paragraphs, lists and links), as some dealers' portals publish them."""
    body = []
    for line in markdown.splitlines():
        line = MARKDOWN_LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', line)
        if line.startswith("## "):
            body.append(f"<h2>{line[3:]}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{line[2:]}</h1>")
        elif line.startswith("- "):
            body.append(f"<ul><li>{line[2:]}</li></ul>")
        elif line.strip():
            body.append(f"<p>{line}</p>")
    title = markdown.splitlines()[0].lstrip("# ")
    return f"<!doctype html><html><head><title>{title}</title></head><body>{''.join(body)}</body></html>\n"


def as_pdf(markdown: str) -> bytes:
    """A notice as the manufacturer's PDF: title line, numbered headings, links as annotations."""
    lines, links, number = [], [], 0
    for line in markdown.splitlines():
        if line.startswith("## "):
            number += 1
            lines.append(f"{number} {line[3:]}")
        elif line.startswith("# "):
            lines.append(line[2:])
        elif line.strip():
            links += [(0, match.group(2)) for match in MARKDOWN_LINK.finditer(line)]
            lines.append(MARKDOWN_LINK.sub(r"\1", line))
    return make_pdf([lines], links=links)


def as_docx(markdown: str) -> bytes:
    """A notice as the Word document a recall coordinator writes: "heading N" paragraphs and hyperlinks."""
    paragraphs = []
    for line in markdown.splitlines():
        level = len(line) - len(line.lstrip("#"))
        text = line[level:].strip() if level else line
        if not text.strip():
            continue
        runs, at = [], 0
        for match in MARKDOWN_LINK.finditer(text):
            runs += [Run(text[at : match.start()]), Run(match.group(1), match.group(2))]
            at = match.end()
        runs.append(Run(text[at:]))
        paragraphs.append(Paragraph([run for run in runs if run.text], heading=level))
    return make_docx(paragraphs, title=markdown.splitlines()[0].lstrip("# "))


def write_library(root: Path, seed: int) -> list[str]:
    """Write every document; returns their relative paths."""
    rng = random.Random(seed)
    docs: dict[str, str | bytes] = {}
    for system in SYSTEMS:
        for model in MODELS:
            docs[f"manuals/{system}/{slug(model)}.md"] = manual(model, system, rng)
    for proc in PROCEDURES:
        docs[procedure_path(proc.id)] = procedure_page(proc.id)
    for item in PARTS:
        docs[part_path(item.number)] = part_page(item.number)
    for path, text in bulletins().items():
        docs[path] = as_html(text) if path.endswith(".html") else text
    for path, text in recalls().items():
        if "brakes" in path:  # one recall as the PDF the manufacturer issued
            docs[path.replace(".md", ".pdf")] = as_pdf(text)
        elif "-abs" in path:  # and one as the Word document its coordinator wrote
            docs[path.replace(".md", ".docx")] = as_docx(text)
        else:
            docs[path] = text
    for relpath, content in docs.items():
        written = root / relpath
        written.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            written.write_bytes(content)
        else:
            written.write_text(content)
    return sorted(docs)
