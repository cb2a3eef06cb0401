"""The bridge shape: where the document graph and the warehouse graph meet, in one call.

- a value (a fault code, a part number): the documents and sections that mention it, and the
  columns and tables it occurs in with how many rows carry it;
- a document, section or folder URI: the values mentioned there, with their columns;
- nothing: every bridged column, with its values and how many no document mentions;
- an identifier column: two-way coverage — its values no document mentions, most rows first, and
  the documented values of its domain (the columns it joins, declared or learned, or shares an
  identifier glossary term with) it never holds.

Mentions follow coverage's whole-token rule; the graph keeps them (worker/bridge), so an answer
is a read, never a scan of the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import Field

from shapes.access.scope import visible, visible_table
from shapes.access.versioned import Versioned
from shapes.freshness import versions
from shapes.spec import Params, ShapeSpec
from shapes.spec.exceptions import Conflict, NotFound
from worker.graph.schema import Label, Rel
from worker.graph.stamps import SourceName

if TYPE_CHECKING:
    from neo4j import Driver

    from worker.shared.grants import Grant

# Every answer reads only what these sources write: their stamps are the answers' version.
SOURCES: tuple[SourceName, ...] = ("values", "documents", "warehouse", "query-log")
KEPT_ANSWERS = 16
# Whether a value is mentioned somewhere the caller's grant shows (everywhere, for the local mode).
MENTIONED = f"EXISTS {{ MATCH (v)<-[:{Rel.MENTIONS}]-(n) WHERE {visible('n.uri')} }}"
BRIDGED = f"""
MATCH (t:{Label.TABLE})-[:{Rel.HAS_COLUMN}]->(c:{Label.COLUMN})-[h:{Rel.HAS_VALUE}]->(v:{Label.VALUE}) WHERE {visible_table("t.id")}
WITH t, c, count(v) AS values, sum(h.rows) AS rows, sum(CASE WHEN {MENTIONED} THEN 0 ELSE 1 END) AS unmentioned
RETURN c.id AS column, t.id AS table, values, rows, unmentioned ORDER BY column
"""
# A value, where it occurs and what mentions it, in one round trip.
VALUE = f"""
MATCH (v:{Label.VALUE} {{id: $value}})
CALL (v) {{
  MATCH (v)<-[h:{Rel.HAS_VALUE}]-(c:{Label.COLUMN})<-[:{Rel.HAS_COLUMN}]-(t:{Label.TABLE}) WHERE {visible_table("t.id")}
  WITH c, t, h ORDER BY h.rows DESC, c.id
  RETURN collect({{column: c.id, table: t.id, rows: h.rows}}) AS columns
}}
CALL (v) {{
  MATCH (n)-[m:{Rel.MENTIONS}]->(v) WHERE {visible("n.uri")}
  WITH n, m ORDER BY n.uri
  RETURN collect({{uri: n.uri, count: m.count}}) AS mentions
}}
RETURN v.id AS value, columns, mentions
"""
# Only when the exact spelling is not a value: this reads every value.
VALUE_ANY_CASE = f"MATCH (v:{Label.VALUE}) WHERE toLower(v.id) = toLower($value) RETURN v.id AS value ORDER BY value LIMIT 1"
NODE_EXISTS = f"""
OPTIONAL MATCH (n:{Label.LIBRARY}|{Label.FOLDER}|{Label.DOCUMENT}|{Label.SECTION} {{uri: $uri}}) WHERE {visible("n.uri")}
RETURN n IS NOT NULL AS found
"""
# The node and everything below it: a folder's documents (uri/…), a document's sections (uri#…),
# a section's subsections (uri/…).
VALUES_UNDER = f"""
CALL () {{
  MATCH (n:{Label.DOCUMENT} {{uri: $uri}}) RETURN n
  UNION MATCH (n:{Label.DOCUMENT}) WHERE n.uri STARTS WITH $uri + '/' RETURN n
  UNION MATCH (n:{Label.SECTION} {{uri: $uri}}) RETURN n
  UNION MATCH (n:{Label.SECTION}) WHERE n.uri STARTS WITH $uri + '/' RETURN n
  UNION MATCH (n:{Label.SECTION}) WHERE n.uri STARTS WITH $uri + '#' RETURN n
}}
MATCH (n)-[m:{Rel.MENTIONS}]->(v:{Label.VALUE}) WHERE {visible("n.uri")}
WITH v, sum(m.count) AS count, count(n) AS places
CALL (v) {{
  MATCH (v)<-[h:{Rel.HAS_VALUE}]-(c:{Label.COLUMN})<-[:{Rel.HAS_COLUMN}]-(t:{Label.TABLE}) WHERE {visible_table("t.id")}
  WITH c, t, h ORDER BY h.rows DESC, c.id
  RETURN collect({{column: c.id, table: t.id, rows: h.rows}}) AS columns
}}
RETURN v.id AS value, count, places, columns ORDER BY value
"""
FIND_COLUMN = f"""
MATCH (c:{Label.COLUMN}) WHERE (c.id = $column OR c.id ENDS WITH '.' + $column) AND {visible_table("c.table")}
RETURN c.id AS id ORDER BY id LIMIT 10
"""
# A column's domain: the columns it joins (declared or learned), and those an identifier term tags with it.
DOMAIN = f"""
MATCH (c:{Label.COLUMN} {{id: $column}})
CALL (c) {{
  MATCH (c)-[:{Rel.REFERENCES}|{Rel.JOINS_WITH}]-(other:{Label.COLUMN}) RETURN other
  UNION
  MATCH (c)-[:{Rel.TAGGED_WITH}]->(:{Label.BUSINESS_TERM} {{identifier: true}})<-[:{Rel.TAGGED_WITH}]-(other:{Label.COLUMN}) RETURN other
}}
WITH c, other WHERE other <> c AND EXISTS {{ (other)-[:{Rel.HAS_VALUE}]->() }} AND {visible_table("other.table")}
RETURN DISTINCT other.id AS column ORDER BY column
"""
UNMENTIONED = f"""
MATCH (:{Label.COLUMN} {{id: $column}})-[h:{Rel.HAS_VALUE}]->(v:{Label.VALUE})
WHERE NOT {MENTIONED}
RETURN v.id AS value, h.rows AS rows ORDER BY rows DESC, value
"""
UNSEEN = f"""
UNWIND $domain AS other
MATCH (:{Label.COLUMN} {{id: other}})-[:{Rel.HAS_VALUE}]->(v:{Label.VALUE})
WHERE NOT EXISTS {{ (:{Label.COLUMN} {{id: $column}})-[:{Rel.HAS_VALUE}]->(v) }}
WITH DISTINCT v
MATCH (v)<-[m:{Rel.MENTIONS}]-(n) WHERE {visible("n.uri")}
WITH v, count(m) AS mentions
MATCH (v)<-[:{Rel.HAS_VALUE}]-(c:{Label.COLUMN}) WHERE {visible_table("c.table")}
WITH v, mentions, c ORDER BY c.id
RETURN v.id AS value, mentions, collect(c.id) AS columns ORDER BY value
"""


@dataclass(frozen=True)
class ValueColumn:
    column: str
    table: str
    rows: int  # rows carrying the value (of those read, when the scan hit its row budget)


@dataclass(frozen=True)
class BridgedColumn:
    column: str
    table: str
    values: int  # distinct values bridged
    rows: int  # rows carrying them
    unmentioned: int  # of its values, those no document mentions


@dataclass(frozen=True)
class Mention:
    uri: str
    count: int  # whole-token occurrences in that node's own text


@dataclass(frozen=True)
class MentionedValue:
    value: str
    count: int  # occurrences under the URI asked about
    places: int  # documents and sections under it that mention the value
    columns: list[ValueColumn]


@dataclass(frozen=True)
class FieldValue:
    value: str
    rows: int


@dataclass(frozen=True)
class DocumentedValue:
    value: str
    mentions: int  # documents and sections that mention it
    columns: list[str]  # where it does occur


@dataclass(frozen=True)
class BridgeResult:
    asked: str  # value, uri, column, or nothing: the bridged columns
    subject: str  # the value, URI or column id the answer is about
    bridged: list[BridgedColumn] = field(default_factory=list)  # nothing asked: every bridged column
    domain: list[str] = field(default_factory=list)  # column: the joined columns its unseen values come from
    columns: list[ValueColumn] = field(default_factory=list)  # value: where it occurs
    mentions: list[Mention] = field(default_factory=list)  # value: what mentions it, in URI order
    values: list[MentionedValue] = field(default_factory=list)  # uri: the values mentioned there
    unmentioned: list[FieldValue] = field(default_factory=list)  # column: values no document mentions, most rows first
    unseen: list[DocumentedValue] = field(default_factory=list)  # column: documented values of its domain it never holds


def bridge(driver: Driver, database: str, value: str | None, uri: str | None, column: str | None, grant: Grant) -> BridgeResult:
    """Within a grant every part reads only what it shows: places it sees (`grant`), columns of
    the tables it sees (`tables`, None: all); a value is "mentioned nowhere" when no place it sees
    mentions it, and a value neither held by a column it sees nor mentioned where it sees is not
    found, in the same words as one that does not exist."""
    scope = grant.cypher()

    def run(query: str, **params: object) -> list:
        return driver.execute_query(query, {**params, **scope}, database_=database).records

    if not (value or uri or column):
        return BridgeResult("columns", "", bridged=[BridgedColumn(**row) for row in run(BRIDGED)])
    if value:
        found = run(VALUE, value=value) or [row for spelled in run(VALUE_ANY_CASE, value=value) for row in run(VALUE, value=spelled["value"])]
        found = [row for row in found if row["columns"] or row["mentions"]]
        if not found:
            raise NotFound(f"no warehouse value {value!r} is bridged (see `bridge --column` for a column's values)")
        row = found[0]
        columns = [ValueColumn(**found_in) for found_in in row["columns"] if not column or _names(found_in["column"], column)]
        if column and not columns:
            raise NotFound(f"{row['value']!r} does not occur in a column named {column!r}")
        if uri and not run(NODE_EXISTS, uri=uri)[0]["found"]:
            raise NotFound(f"no library, folder, document or section at {uri}")
        mentions = [Mention(**mention) for mention in row["mentions"] if not uri or _under(mention["uri"], uri)]
        return BridgeResult("value", row["value"], columns=columns, mentions=mentions)
    if uri:
        values = [
            MentionedValue(row["value"], row["count"], row["places"], [ValueColumn(**found_in) for found_in in row["columns"]])
            for row in run(VALUES_UNDER, uri=uri.rstrip("/"))
        ]
        if not values and not run(NODE_EXISTS, uri=uri)[0]["found"]:
            raise NotFound(f"no library, folder, document or section at {uri}")
        if column:
            values = [value for value in values if any(_names(found_in.column, column) for found_in in value.columns)]
        return BridgeResult("uri", uri, values=values)
    assert column is not None
    ids = [row["id"] for row in run(FIND_COLUMN, column=column)]
    if len(ids) != 1:
        raise NotFound(f"no column {column}") if not ids else Conflict(f"{column} is ambiguous: {', '.join(ids)}")
    domain = [row["column"] for row in run(DOMAIN, column=ids[0])]
    return BridgeResult(
        "column",
        ids[0],
        domain=domain,
        unmentioned=[FieldValue(**row) for row in run(UNMENTIONED, column=ids[0])],
        unseen=[DocumentedValue(**row) for row in run(UNSEEN, column=ids[0], domain=domain)],
    )


class BridgeShape:
    """Answers kept while the graph they read holds: a column's gaps are every value it has
    (100,000 rows on a large warehouse), which agents page through or ask for again."""

    def __init__(self, driver: Driver, database: str) -> None:
        self.driver = driver
        self.database = database
        self.answers: Versioned[BridgeResult] = Versioned(KEPT_ANSWERS)

    def __call__(self, value: str | None, uri: str | None, column: str | None, grant: Grant) -> BridgeResult:
        return self.answers.get(
            versions(self.driver, self.database, *SOURCES),
            (value, uri, column, grant.key),
            lambda: bridge(self.driver, self.database, value, uri, column, grant),
        )


def _names(column_id: str, name: str) -> bool:
    """Whether `name` is the column's id or a tail of it (service.work_orders.fault_code)."""
    return column_id == name or column_id.endswith(f".{name}")


def _under(node: str, uri: str) -> bool:
    scope = uri.rstrip("/")
    return node == scope or node.startswith((f"{scope}/", f"{scope}#"))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render(result: BridgeResult) -> str:
    if result.asked == "columns":
        lines = [f"{_n(len(result.bridged), 'identifier column')} bridged to the documents"]
        lines += [f"  {row.column}  {_n(row.values, 'value')} in {_n(row.rows, 'row')}, {row.unmentioned} mentioned nowhere" for row in result.bridged]
        return "\n".join(lines)
    if result.asked == "value":
        lines = [f"{result.subject}: in {_n(len(result.columns), 'column')}, mentioned in {_n(len(result.mentions), 'place')}"]
        lines += [f"  {row.column}  {_n(row.rows, 'row')}" for row in result.columns]
        lines += ["mentioned in:"] + [f"  {row.uri}" + (f"  ({row.count}x)" if row.count > 1 else "") for row in result.mentions] if result.mentions else []
        return "\n".join(lines)
    if result.asked == "uri":
        lines = [f"{result.subject}: mentions {_n(len(result.values), 'warehouse value')}"]
        for row in result.values:
            where = ", ".join(f"{column.column} ({_n(column.rows, 'row')})" for column in row.columns)
            lines.append(f"  {row.value}  {row.count}x in {_n(row.places, 'place')}  — {where}")
        return "\n".join(lines)
    domain = ", ".join(result.domain) or "no column joins it"
    lines = [f"{result.subject}: {_n(len(result.unmentioned), 'value')} no document mentions"]
    lines += [f"  {row.value}  {_n(row.rows, 'row')}" for row in result.unmentioned]
    lines.append(f"documented values it never holds (from {domain}): {len(result.unseen)}")
    lines += [f"  {row.value}  mentioned in {_n(row.mentions, 'place')}, in {', '.join(row.columns)}" for row in result.unseen]
    return "\n".join(lines)


class BridgeParams(Params):
    value: str | None = Field(None, description="A warehouse value (a fault code, a part number): what mentions it, where it occurs")
    uri: str | None = Field(None, description="A library, folder, document or section URI: the warehouse values mentioned there")
    column: str | None = Field(
        None, description="An identifier column (full id or tail: service.work_orders.fault_code): its values no document mentions, and the reverse"
    )


SPEC = ShapeSpec(
    name="bridge",
    purpose="Documents ↔ warehouse values: what mentions a value and where it occurs, what a document names, and two-way coverage of a column.",
    guide="Ask about a value, a uri or a column; none lists the bridged columns. With a value, a uri scopes its mentions and a column "
    "narrows where it occurs; with a uri, a column narrows its values. A column's gaps are ranked by rows in the field.",
    params=BridgeParams,
    output=BridgeResult,
    refers={"uri": "outline", "table": "table"},
    run=lambda shapes, p, grant: shapes.bridge(p.value or None, p.uri or None, p.column or None, grant),
    render=render,
    rows=("bridged", "columns", "mentions", "values", "unmentioned", "unseen"),
    needs="values",
    scoped=True,
)
