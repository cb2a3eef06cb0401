"""The one-shot loads (`load docs`, `load warehouse`) and `forget`, the one way a library leaves the graph."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from worker.cli_support import Context, emit_json, out, pass_context, progress_bars
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from worker.settings import Settings


@click.group()
def load() -> None:
    """One-shot loads, then exit."""


@load.command("docs")
@click.argument("roots", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def load_docs(ctx: Context, roots: tuple[str, ...], as_json: bool) -> None:
    """Load document libraries (ROOT: PATH or NAME=PATH; default: documents.libraries)."""
    from worker.components import Components
    from worker.documents.loader import load as load_documents
    from worker.graph.setup import apply_schema

    settings = with_roots(ctx.settings, roots)
    if not settings.documents.libraries:
        raise LakegraphError("no document library: pass ROOT arguments or set documents.libraries")
    with Components.open(settings) as components:
        apply_schema(settings, components.driver, components.database)
        with progress_bars(disable=as_json) as progress:
            report = load_documents(components.documents, progress)
    if as_json:
        emit_json({**report.__dict__, "sections_per_second": report.sections_per_second})
        return
    out.print(
        f"{report.documents} documents ({report.read} read, {report.parsed} parsed), {report.sections} sections parsed "
        f"in {report.seconds:.1f} s ({report.sections_per_second:,.0f} sections/s): {report.written} written, {report.unchanged} unchanged, "
        f"{report.deleted} deleted, {report.skipped} skipped, {report.warned} with warnings, {report.conflicts} conflicts; "
        f"{report.linked} links resolved, {report.unresolved} unresolved",
        highlight=False,
    )
    if report.skipped or report.warned or report.conflicts or report.unresolved:
        out.print("see `lakegraph errors` and `lakegraph links --broken`")


@click.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def forget(ctx: Context, names: tuple[str, ...], as_json: bool) -> None:
    """Remove whole libraries from the graph (the files are untouched); links into them become unresolved.

    Loads and reconciles never remove a library they were not given: this is the one way to."""
    from worker.documents.writer import DocumentWriter
    from worker.graph.connection import connect

    driver, where = connect(ctx.settings)
    with driver:
        writer = DocumentWriter(driver, where.database, {})
        stored = writer.library_names()
        unknown = [name for name in names if name not in stored]
        if unknown:
            raise LakegraphError(f"no library named {', '.join(unknown)} in the graph (it holds: {', '.join(stored) or 'none'})")
        removed = {name: len(writer.forget_library(name).deleted) for name in names}
    if as_json:
        emit_json({"documents_deleted": removed})
        return
    for name, count in removed.items():
        out.print(f"{name}: {count} documents removed", highlight=False, markup=False)


@load.command("warehouse")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_context
def load_warehouse(ctx: Context, as_json: bool) -> None:
    """Load the warehouse's metadata, the glossary, and the audit-log files in warehouse.audit_log_dir."""
    from worker.components import Components
    from worker.graph.setup import apply_schema

    with Components.open(ctx.settings) as components:
        apply_schema(ctx.settings, components.driver, components.database)
        with progress_bars(disable=as_json) as progress:
            loaded, bridged = components.load_warehouse(progress)
    reports, terms, logs = loaded.schemas, loaded.glossary, loaded.query_logs
    if as_json:
        emit_json(
            {
                "schemas": reports,
                "glossary": None if terms is None else terms.__dict__,
                "relearned": None if loaded.relearned is None else loaded.relearned.__dict__,
                "query_logs": logs,
                "statements": None if loaded.statements is None else asdict(loaded.statements),
                "bridge": bridged.__dict__,
            }
        )
        return
    for name, report in reports.items():
        out.print(
            f"{loaded.database}.{name}: {report['tables_written']} tables and {report['columns_written']} columns "
            f"written, {report['tables_deleted']} tables and {report['columns_deleted']} columns removed, {report['keys']} key columns",
            highlight=False,
            markup=False,
        )
    if loaded.relearned is not None and loaded.relearned.settled:
        relearned = loaded.relearned
        out.print(f"query logs: {relearned.settled} queries that came before their tables learned now ({relearned.runs} runs, {relearned.pairs} join pairs)")
    if terms is not None:
        out.print(f"glossary: {terms.terms} terms, {terms.tagged} tags, {len(terms.unresolved)} terms with unresolved tags")
    runs = sum(log.get("runs", 0) for log in logs)
    pairs = sum(log.get("pairs", 0) for log in logs)
    out.print(
        f"query logs: {len(logs)} files in {ctx.settings.audit_log_path}: {runs} new query runs, {pairs} join pairs updated",
        highlight=False,
        markup=False,
    )
    if (statements := loaded.statements) is not None:
        pairs = statements.absorbed.pairs if statements.absorbed else 0
        out.print(f"statement statistics: {statements.statements} statements, {statements.ran} with {statements.runs} new runs, {pairs} join pairs updated")
    out.print(bridged.summary(), highlight=False, markup=False)


def with_roots(settings: Settings, roots: tuple[str, ...]) -> Settings:
    """Settings whose libraries are the given roots (NAME=PATH, or PATH named after its folder; PATH may be gs://bucket/prefix)."""
    if not roots:
        return settings
    from pydantic import ValidationError

    from worker.documents.slugs import name_slug
    from worker.settings import GCS_SCHEME

    chosen: list[dict[str, object]] = []
    for root in roots:
        name, _, path = root.rpartition("=")
        if path.startswith(GCS_SCHEME):  # a bucket library: named after its bucket or last prefix folder
            chosen.append({"name": name or name_slug(path.rstrip("/").rsplit("/", 1)[-1]), "root": path})
            continue
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise LakegraphError(f"{folder} is not a folder")
        chosen.append({"name": name or name_slug(folder.resolve().name), "root": folder})
    try:
        return settings.with_section("documents", libraries=chosen)
    except ValidationError as error:
        raise LakegraphError(f"bad ROOT: {error.errors()[0]['msg']}") from None
