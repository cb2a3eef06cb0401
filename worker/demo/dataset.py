"""Make the demo dataset in a folder, deterministically from a seed, with a manifest of the
planted truths and a settings file that points lakegraph at it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from worker.demo.domain import (
    FAULT_CODES,
    REVISED_PART,
    SYSTEMS,
    THEMES,
    procedure,
    theme_of,
)
from worker.demo.glossary import GLOSSARY
from worker.demo.library import LIBRARY, write_library
from worker.demo.query_log import write_query_log
from worker.demo.warehouse import write_warehouse

MANIFEST = "manifest.json"
CONFIG = "lakegraph.toml"


@dataclass(frozen=True)
class Sizes:
    seed: int = 7
    vehicles: int = 400
    queries: int = 300


@dataclass
class Manifest:
    sizes: dict
    documents: int
    work_orders: int
    revised_part: dict
    wrong_procedures: list[dict]
    undocumented_codes: list[str]
    unseen_codes: list[str] = field(default_factory=list)  # documented, never in a work order
    themes: dict[str, list[str]] = field(default_factory=dict)  # planted theme -> document uris


def _system_of(relpath: str) -> str | None:
    for system in SYSTEMS:
        if f"/{system}/" in relpath or f"-{system}" in relpath or f"tsb-{system}-" in relpath:
            return system
    return None


def config_text(folder: Path) -> str:
    return f'''# lakegraph settings for the demo dataset (made by `lakegraph demo`).
state_dir = "{folder / "state"}"

[warehouse]
engine = "duckdb"
duckdb_path = "{folder / "warehouse.duckdb"}"
audit_log_dir = "{folder / "audit-logs"}"
glossary_path = "{folder / "glossary.toml"}"
sql_dialect = "bigquery"

[documents]
libraries = [{{ name = "{LIBRARY}", root = "{folder / "library"}" }}]
'''


def existing(folder: Path, sizes: Sizes) -> Manifest | None:
    """The manifest of a dataset already made with these sizes, else None."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return Manifest(**data) if data.get("sizes") == asdict(sizes) else None


def generate(folder: Path, sizes: Sizes) -> Manifest:
    folder.mkdir(parents=True, exist_ok=True)
    paths = write_library(folder / "library", sizes.seed)
    visits = write_warehouse(folder / "warehouse.duckdb", sizes.vehicles, sizes.seed)
    write_query_log(folder / "audit-logs", sizes.queries, sizes.seed)
    (folder / "glossary.toml").write_text(GLOSSARY)
    (folder / CONFIG).write_text(config_text(folder.resolve()))
    themes: dict[str, list[str]] = {name: [] for name in THEMES}
    for relpath in paths:
        system = _system_of(relpath)
        if system is not None and not relpath.startswith("bulletins/tsb-24-017"):
            themes[theme_of(system)].append(f"{LIBRARY}/{relpath.rsplit('.', 1)[0]}")
    manifest = Manifest(
        sizes=asdict(sizes),
        documents=len(paths),
        work_orders=len(visits),
        revised_part=REVISED_PART,
        wrong_procedures=[
            {"fault_code": code.code, "procedure": code.procedure, "documented_part": procedure(code.procedure).part, "fixing_part": code.fixing_part}
            for code in FAULT_CODES
            if code.procedure and code.fixing_part
        ],
        undocumented_codes=sorted(code.code for code in FAULT_CODES if code.procedure is None),
        unseen_codes=sorted(code.code for code in FAULT_CODES if code.procedure and not code.weight),
        themes=themes,
    )
    (folder / MANIFEST).write_text(json.dumps(asdict(manifest), indent=2))
    return manifest
