"""The value side of the bridge: make each identifier column's HAS_VALUE edges match the warehouse,
then give every new value its MENTIONS.

Level-triggered and idempotent. Each column is written in its own transactions (a batch of values
each) with the `values` stamp, so the document writer picks the new values up at once. A value
appears marked `pending` until a mention pass has read every library for it, so a crash between
the two loses nothing: the next refresh finishes the pass. A pass runs a page of a library's
documents at a time under the same lock document writes take, so an edit and a pass never miss
each other's work, and no transaction grows with the library. A column that cannot be scanned
(over its budget, or refused) keeps its values and is recorded as a problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from neo4j import Driver, ManagedTransaction

from worker import problems
from worker.bridge.columns import IdentifierColumn, identifier_columns
from worker.bridge.matcher import ValueMatcher
from worker.bridge.mentions import WRITE_BATCH, mention_rows, write_mentions
from worker.bridge.scan import ColumnValues, ValueScanner
from worker.exceptions import EngineUnavailable, LakegraphError
from worker.graph import document_text
from worker.graph.batches import chunks, drain
from worker.graph.document_text import NODE_TEXT
from worker.graph.locks import LIBRARY_NAMES, lock_libraries
from worker.graph.schema import DOCUMENT_TEXT_INDEX, Label, Rel
from worker.graph.stamps import SourceName, stamp
from worker.settings import Settings
from worker.task_names import REFRESH_BRIDGE

SOURCE: SourceName = "values"
# One record holding every pair: 100,000 records would cost a second in the driver alone.
STORED_VALUES = f"""
RETURN COLLECT {{ MATCH (:{Label.COLUMN} {{id: $column}})-[h:{Rel.HAS_VALUE}]->(v:{Label.VALUE}) RETURN [v.id, h.rows] }} AS stored
"""
UPSERT_VALUES = f"""
UNWIND $rows AS r
MATCH (c:{Label.COLUMN} {{id: $column}})
MERGE (v:{Label.VALUE} {{id: r.value}})
ON CREATE SET v.value = r.value, v.pending = true
MERGE (c)-[h:{Rel.HAS_VALUE}]->(v)
SET h.rows = r.rows, h.cut = $cut
"""
DROP_VALUES = f"""
UNWIND $values AS value
MATCH (:{Label.COLUMN} {{id: $column}})-[h:{Rel.HAS_VALUE}]->(:{Label.VALUE} {{id: value}})
DELETE h
"""
# The drains below change at most $batch each, as many rounds as it takes (worker/graph/batches.py).
DROP_OTHER_COLUMNS = f"""
MATCH (c:{Label.COLUMN}) WHERE NOT c.id IN $columns AND EXISTS {{ (c)-[:{Rel.HAS_VALUE}]->() }}
MATCH (c)-[h:{Rel.HAS_VALUE}]->()
WITH h LIMIT $batch
DELETE h
RETURN count(*) AS n
"""
DELETE_ORPHANS = f"""
MATCH (v:{Label.VALUE}) WHERE NOT EXISTS {{ (:{Label.COLUMN})-[:{Rel.HAS_VALUE}]->(v) }}
WITH v LIMIT $batch
DETACH DELETE v
RETURN count(*) AS n
"""
PENDING = f"MATCH (v:{Label.VALUE} {{pending: true}}) RETURN collect(v.id) AS values"
MARK_ALL_PENDING = f"""
MATCH (v:{Label.VALUE}) WHERE v.pending IS NULL
WITH v LIMIT $batch
SET v.pending = true
RETURN count(*) AS n
"""
SETTLE = f"UNWIND $values AS value MATCH (v:{Label.VALUE} {{id: value}}) REMOVE v.pending"
# A page of a library's documents in uri order, each as one record with its sections' texts (a
# record per section costs more in the driver than matching its text does).
LIBRARY_PAGE = f"""
MATCH (d:{Label.DOCUMENT} {{library: $library}}) WHERE d.uri > $after
WITH d ORDER BY d.uri LIMIT $page
RETURN d.uri AS uri, [[d.uri, {NODE_TEXT.format(node="d")}]]
       + COLLECT {{ MATCH (s:{Label.SECTION} {{doc_uri: d.uri}}) RETURN [s.uri, {NODE_TEXT.format(node="s")}] }} AS texts
"""
# The page's mentions of pending values, found by the pending mark: one scan, whatever their number.
DROP_PAGE_MENTIONS = f"""
UNWIND $documents AS uri
CALL (uri) {{
  MATCH (:{Label.DOCUMENT} {{uri: uri}})-[m:{Rel.MENTIONS}]->(:{Label.VALUE} {{pending: true}}) RETURN m
  UNION
  MATCH (:{Label.SECTION} {{doc_uri: uri}})-[m:{Rel.MENTIONS}]->(:{Label.VALUE} {{pending: true}}) RETURN m
}}
DELETE m
"""
DROP_LIBRARY_MENTIONS = f"""
MATCH (n)-[m:{Rel.MENTIONS}]->(:{Label.VALUE} {{pending: true}})
WHERE n.uri STARTS WITH $prefix
DELETE m
"""
DOCUMENTS_PER_PAGE = 500  # a page's texts and mentions in one transaction
DRAIN_BATCH = 10_000
# A few new values are looked up in the full-text index; many are matched in one read of the texts.
CANDIDATES = f"""
UNWIND $phrases AS phrase
CALL db.index.fulltext.queryNodes('{DOCUMENT_TEXT_INDEX}', phrase, {{limit: 1000000}}) YIELD node
WHERE node.uri STARTS WITH $prefix
RETURN DISTINCT node.uri AS uri, {NODE_TEXT.format(node="node")} AS text
"""
FULLTEXT_AT_MOST = 64


@dataclass
class BridgeReport:
    columns: int = 0
    values_added: int = 0  # (column, value) pairs new to the graph
    values_updated: int = 0  # pairs whose row count changed
    values_dropped: int = 0  # pairs gone from the warehouse
    values_deleted: int = 0  # Value nodes gone with their last column
    mentions_for: int = 0  # values given their mentions this run
    mentions: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # column id -> why it was not scanned
    stage_seconds: dict[str, float] = field(default_factory=dict)  # scan, values, prune, mentions

    def timed(self, stage: str, began: float) -> None:
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + time.perf_counter() - began

    def summary(self) -> str:
        skipped = f", {len(self.skipped)} columns skipped (see `lakegraph problems`)" if self.skipped else ""
        return (
            f"bridge: {self.columns} identifier columns, {self.values_added} column values added, {self.values_dropped} dropped, "
            f"mentions of {self.mentions_for} values written ({self.mentions}){skipped}"
        )


class BridgeRefresh:
    def __init__(self, settings: Settings, driver: Driver, database: str) -> None:
        self.settings = settings
        self.driver = driver
        self.database = database
        self.scanner = ValueScanner(settings)

    def refresh(self, schema: str | None = None, table: str | None = None, rebuild: bool = False) -> BridgeReport:
        """Every identifier column (or one table's), then the mentions of new values. With
        `rebuild`, every value's mentions are computed again."""
        report = BridgeReport()
        columns = identifier_columns(self.driver, self.database, self.settings.bridge)
        whole = schema is None and table is None
        chosen = [column for column in columns if whole or (column.schema, column.table) == (schema, table)]
        for column in chosen:
            self._refresh_column(column, report)
        began = time.perf_counter()
        self._prune([column.id for column in columns] if whole else None, report)
        if rebuild:
            drain(self.driver, self.database, MARK_ALL_PENDING, DRAIN_BATCH)
        report.timed("prune", began)
        report.columns = len(chosen)
        began = time.perf_counter()
        self.settle_pending(report)
        report.timed("mentions", began)
        return report

    def _refresh_column(self, column: IdentifierColumn, report: BridgeReport) -> None:
        key = f"values:{column.id}"
        began = time.perf_counter()
        try:
            found = self.scanner.scan(column)
        except EngineUnavailable:
            raise
        except LakegraphError as err:
            problems.record(self.driver, self.database, SOURCE, key, "skipped", str(err), REFRESH_BRIDGE, [column.schema, column.table])
            report.skipped[column.id] = str(err)
            return
        finally:
            report.timed("scan", began)
        problems.clear(self.driver, self.database, SOURCE, key, ("skipped",))
        began = time.perf_counter()
        self._write_column(found, report)
        report.timed("values", began)

    def _write_column(self, found: ColumnValues, report: BridgeReport) -> None:
        """The column's values made the warehouse's, WRITE_BATCH to a transaction, each with the stamp."""
        column = found.column.id
        stored = dict(self.driver.execute_query(STORED_VALUES, column=column, database_=self.database).records[0]["stored"])
        changed = [{"value": value, "rows": rows} for value, rows in found.rows.items() if stored.get(value) != rows]
        gone = sorted(set(stored) - set(found.rows))
        with self.driver.session(database=self.database) as session:
            for rows in chunks(changed, WRITE_BATCH):
                session.execute_write(_stamped, UPSERT_VALUES, {"rows": rows, "column": column, "cut": found.cut})
            for values in chunks(gone, WRITE_BATCH):
                session.execute_write(_stamped, DROP_VALUES, {"values": values, "column": column})
        report.values_added += sum(1 for row in changed if row["value"] not in stored)
        report.values_updated += sum(1 for row in changed if row["value"] in stored)
        report.values_dropped += len(gone)

    def _prune(self, columns: list[str] | None, report: BridgeReport) -> None:
        """Values of columns no longer bridged (a whole refresh only), and values no column holds."""
        if columns is not None:
            report.values_dropped += drain(self.driver, self.database, DROP_OTHER_COLUMNS, DRAIN_BATCH, {"columns": columns}, then=_stamp)
        report.values_deleted = drain(self.driver, self.database, DELETE_ORPHANS, DRAIN_BATCH, then=_stamp)

    def settle_pending(self, report: BridgeReport) -> None:
        """Give every pending value its mentions, library by library, then clear the mark."""
        pending = self.driver.execute_query(PENDING, database_=self.database).records[0]["values"]
        if not pending:
            return
        matcher = ValueMatcher(pending)
        libraries = [row["name"] for row in self.driver.execute_query(LIBRARY_NAMES, database_=self.database).records]
        with self.driver.session(database=self.database) as session:
            for library in libraries:
                if len(pending) <= FULLTEXT_AT_MOST:
                    report.mentions += session.execute_write(self._mentions_found_in_library, library, pending, matcher)
                    continue
                after: str | None = ""
                while after is not None:
                    found, after = session.execute_write(self._mentions_in_page, library, after, matcher)
                    report.mentions += found
            for start in range(0, len(pending), WRITE_BATCH):
                session.run(SETTLE, values=pending[start : start + WRITE_BATCH]).consume()
        report.mentions_for = len(pending)

    @staticmethod
    def _mentions_found_in_library(tx: ManagedTransaction, library: str, pending: list[str], matcher: ValueMatcher) -> int:
        """A few values: the sections that hold them found in the full-text index."""
        lock_libraries(tx, [library])
        prefix = f"{library}/"
        tx.run(DROP_LIBRARY_MENTIONS, prefix=prefix).consume()
        phrases = [document_text.scoped(f'"{_escaped(value)}"', prefix) for value in pending]
        rows = mention_rows(matcher, ((row["uri"], row["text"]) for row in tx.run(CANDIDATES, phrases=phrases, prefix=prefix)))
        write_mentions(tx, rows)
        return len(rows)

    @staticmethod
    def _mentions_in_page(tx: ManagedTransaction, library: str, after: str, matcher: ValueMatcher) -> tuple[int, str | None]:
        """Many values: the texts of the library's next page of documents (after `after`) matched;
        the mentions written and where the next page starts (None: the library is done)."""
        lock_libraries(tx, [library])
        page = list(tx.run(LIBRARY_PAGE, library=library, after=after, page=DOCUMENTS_PER_PAGE))
        if not page:
            return 0, None
        tx.run(DROP_PAGE_MENTIONS, documents=[record["uri"] for record in page]).consume()
        rows = mention_rows(matcher, ((uri, text) for record in page for uri, text in record["texts"]))
        write_mentions(tx, rows)
        return len(rows), page[-1]["uri"] if len(page) == DOCUMENTS_PER_PAGE else None


def _stamped(tx: ManagedTransaction, query: str, params: dict) -> None:
    tx.run(query, params).consume()
    _stamp(tx)


def _stamp(tx: ManagedTransaction) -> None:
    stamp(tx, SOURCE)


def _escaped(value: str) -> str:
    """A value inside a Lucene phrase: quotes and backslashes escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
