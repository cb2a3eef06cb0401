"""`lakegraph extract-joins`: the query log's join inference run offline on a file, without a graph."""

from __future__ import annotations

import json
from pathlib import Path

import click

from worker.cli_support import emit_json, err, out
from worker.exceptions import LakegraphError


@click.command("extract-joins")
@click.option("--queries", "queries_file", required=True, type=click.Path(path_type=Path), help="JSONL of {id, sql[, user, dialect]}.")
@click.option("--dialect", required=True, help="sqlglot dialect of the SQL, e.g. bigquery, duckdb, snowflake.")
@click.option("--schema", "schema_file", type=click.Path(path_type=Path), help="JSON schema in sqlglot's mapping form.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of pairs.")
def extract_joins_command(queries_file: Path, dialect: str, schema_file: Path | None, as_json: bool) -> None:
    """Infer join pairs from a file of queries, without a graph."""
    from sqlglot.dialects.dialect import Dialect

    from worker.warehouse.joins import SchemaIndex
    from worker.warehouse.query_log import absorb, read_queries

    try:
        Dialect.get_or_raise(dialect)
    except ValueError as error:
        raise LakegraphError(f"unknown --dialect {dialect!r}: {error}") from None
    schema = SchemaIndex(_read_json(schema_file) if schema_file else {})
    executions, rejected = read_queries(queries_file)
    for line, reason in rejected[:5]:
        err.print(f"skipped line {line}: {reason}", highlight=False, markup=False)
    result = absorb(executions, dialect, schema)
    rows = sorted(result.pairs.items())
    unresolved = [{"query": shape, "columns": columns, "sql": result.samples[shape][:200]} for shape, columns in sorted(result.unresolved.items())]
    if as_json:
        emit_json(
            {
                "executions": result.executions,
                "distinct_queries": len(result.shapes),
                "unparsable": len(result.unparsable),
                "bad_lines": len(rejected),
                "duplicates": result.duplicates,
                "unresolved": unresolved,
                "pairs": [
                    {
                        "left": str(pair.left),
                        "right": str(pair.right),
                        "queries": len(stats.queries),
                        "executions": stats.executions,
                        "self_join": pair.self_join,
                    }
                    for pair, stats in rows
                ],
            }
        )
        return
    out.print(
        f"{result.executions} executions, {len(result.shapes)} distinct queries, {len(result.unparsable)} unparsable, "
        f"{len(unresolved)} with unresolved columns, {len(rejected)} bad lines, {result.duplicates} duplicate ids; {len(rows)} join pairs",
        highlight=False,
    )
    for pair, stats in rows:
        flag = "  (self-join)" if pair.self_join else ""
        out.print(f"{pair.left} = {pair.right}  queries {len(stats.queries)}  executions {stats.executions}{flag}", highlight=False, markup=False)
    for row in unresolved[:5]:
        err.print(f"unresolved {', '.join(row['columns'])} (not a join) in: {row['sql']}", highlight=False, markup=False)
    if result.unparsable:
        err.print(f"{len(result.unparsable)} queries did not parse, e.g.: {next(iter(result.unparsable.values()))}", markup=False)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise LakegraphError(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise LakegraphError(f"{path} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise LakegraphError(f"{path} must hold a JSON object (sqlglot's schema mapping)")
    return data
