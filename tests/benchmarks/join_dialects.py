"""Joins learned from real SQL in three dialects: Spider 2.0-lite's gold SQL as each engine's query log.

    python -m tests.benchmarks.join_dialects [--root <unpacked spider2-lite>]

Each gold query (BigQuery, Snowflake and SQLite dialects, as their engines ran them) is absorbed
through the query-log path against the catalogue of its own database (its tables and columns as
the engine spells them). A learned pair counts only when both of its columns are the catalogue's
columns as spelled there: those are the graph's column ids, so any other pair is lost when it is
written. The truth for a query is what the same code learns when names are compared in any case
(an engine ran these queries, so each name in them resolves, and no two of a table's columns
differ only by case); the case rules are what is measured. Recall is the share of true pairs
learned, precision the share of learned pairs that are true. Queries over tables a catalogue
lacks (BigQuery's wildcard families: `ga_sessions_*`) learn nothing on either side and are
counted apart.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.corpora import spider2_table_id, unpack_spider2_lite
from worker.warehouse.joins import JoinPair, SchemaIndex
from worker.warehouse.query_log import Execution, absorb

ENGINES = {"bigquery": "bigquery", "snowflake": "snowflake", "sqlite": "sqlite"}
ANY_CASE = "{dialect}, normalization_strategy = case_insensitive"


@dataclass
class Tally:
    queries: int = 0
    unparsable: int = 0
    learned: int = 0
    true: int = 0
    correct: int = 0
    lost: int = 0  # learned pairs naming a column the catalogue does not spell that way

    @property
    def recall(self) -> float:
        return self.correct / self.true if self.true else 1.0

    @property
    def precision(self) -> float:
        return self.correct / self.learned if self.learned else 1.0


def catalogue(engine: str, database: str, tables: list[dict]) -> tuple[SchemaIndex, set[str]]:
    """The database's tables as the product's schema holds them (catalog.schema.table; a SQLite
    file as `<database>.main`), and the set of its column ids."""
    mapping: dict = defaultdict(lambda: defaultdict(dict))
    columns: set[str] = set()
    for table in tables:
        name = spider2_table_id(engine, database, table["table"]).replace(". ", ".")  # NHTSA's names start with a space there
        catalog, schema, table_name = name.rsplit(".", 2)
        for column in table["columns"]:
            mapping[catalog][schema].setdefault(table_name, {})[column["name"]] = column["type"] or "STRING"
            columns.add(f"{name}.{column['name']}")
    only = next(iter(mapping)) if len(mapping) == 1 else None
    return SchemaIndex({catalog: dict(schemas) for catalog, schemas in mapping.items()}, default_catalog=only), columns


def learned(sql: str, dialect: str, schema: SchemaIndex) -> tuple[set[JoinPair], bool]:
    """The pairs a query teaches, and whether it parsed."""
    result = absorb([Execution("gold", sql)], dialect, schema, workers=1)
    return {pair for extraction in result.shapes.values() for pair in extraction.pairs}, not result.unparsable


def landing(pairs: set[JoinPair], known: set[str]) -> set[JoinPair]:
    """The pairs both of whose columns are the catalogue's, as it spells them: the graph's column ids."""
    return {pair for pair in pairs if str(pair.left) in known and str(pair.right) in known}


def score(root: Path) -> dict[str, Tally]:
    schemas = {engine: json.loads((root / "schemas" / f"{engine}.json").read_text()) for engine in ENGINES}
    engine_of = {database: engine for engine, databases in schemas.items() for database in databases}
    tallies = {engine: Tally() for engine in ENGINES}
    built: dict[str, tuple[SchemaIndex, set[str]]] = {}
    for line in (root / "questions.jsonl").read_text().splitlines():
        item = json.loads(line)
        gold = root / "gold-sql" / f"{item['instance_id']}.sql"
        if not gold.is_file() or item["db"] not in engine_of:
            continue
        engine = engine_of[item["db"]]
        if item["db"] not in built:
            built[item["db"]] = catalogue(engine, item["db"], schemas[engine][item["db"]])
        schema, known = built[item["db"]]
        sql, tally = gold.read_text(), tallies[engine]
        everything, parsed = learned(sql, ENGINES[engine], schema)
        found, truth = landing(everything, known), landing(learned(sql, ANY_CASE.format(dialect=ENGINES[engine]), schema)[0], known)
        tally.queries += 1
        tally.unparsable += not parsed
        tally.learned += len(found)
        tally.true += len(truth)
        tally.correct += len(found & truth)
        tally.lost += len(everything) - len(found)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="an unpacked spider2-lite folder (default: unpack the corpus)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.root or unpack_spider2_lite(Path(scratch))
        tallies = score(root)
    print(f"{'dialect':<11}{'queries':>8}{'unparsable':>11}{'true pairs':>11}{'learned':>8}{'recall':>8}{'precision':>10}{'lost':>6}")
    for engine, tally in tallies.items():
        print(
            f"{engine:<11}{tally.queries:>8}{tally.unparsable:>11}{tally.true:>11}{tally.learned:>8}{tally.recall:>8.3f}{tally.precision:>10.3f}{tally.lost:>6}"
        )


if __name__ == "__main__":
    main()
