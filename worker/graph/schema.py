"""Every label, relationship type, constraint and index name of lakegraph's graph, in one place.

The document-structure graph keys nodes by a hierarchical `uri`; the warehouse metadata graph
(Neocarta-compatible) keys them by a dotted `id`. `apply()` creates what is missing and reports
what it did, so running it twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neo4j import Driver


class Label(StrEnum):
    LIBRARY = "Library"
    FOLDER = "Folder"
    DOCUMENT = "Document"
    SECTION = "Section"
    DATABASE = "Database"
    SCHEMA = "Schema"
    TABLE = "Table"
    COLUMN = "Column"
    BUSINESS_TERM = "BusinessTerm"
    QUERY = "Query"
    QUERY_RUN = "QueryRun"
    THEME = "Theme"
    THEME_RUN = "ThemeRun"
    # Theme versions of a run not yet current (or not yet settled), and versions a run replaced,
    # awaiting deletion; a run's node until it is current (worker/graph/theme_store.py).
    THEME_DRAFT = "ThemeDraft"
    THEME_RETIRED = "ThemeRetired"
    THEME_RUN_DRAFT = "ThemeRunDraft"
    UNRESOLVED_LINK = "UnresolvedLink"
    PROBLEM = "Problem"
    SOURCE = "Source"
    VALUE = "Value"
    # On a Document whose outgoing links changed since the last themes run: the run finds the
    # changed documents through the label's index instead of comparing every document's signature.
    LINKS_CHANGED = "LinksChanged"


class Rel(StrEnum):
    HAS = "HAS"
    NEXT_SECTION = "NEXT_SECTION"
    LINKS_TO = "LINKS_TO"
    HAS_UNRESOLVED = "HAS_UNRESOLVED"
    HAS_SCHEMA = "HAS_SCHEMA"
    HAS_TABLE = "HAS_TABLE"
    HAS_COLUMN = "HAS_COLUMN"
    REFERENCES = "REFERENCES"
    JOINS_WITH = "JOINS_WITH"
    TAGGED_WITH = "TAGGED_WITH"
    USES = "USES"
    IN_THEME = "IN_THEME"
    HAS_VALUE = "HAS_VALUE"
    MENTIONS = "MENTIONS"


DOCUMENT_LABELS = (Label.LIBRARY, Label.FOLDER, Label.DOCUMENT, Label.SECTION)
METADATA_LABELS = (
    Label.DATABASE,
    Label.SCHEMA,
    Label.TABLE,
    Label.COLUMN,
    Label.BUSINESS_TERM,
    Label.QUERY,
    Label.QUERY_RUN,
    Label.THEME,
    Label.THEME_RUN,
    Label.UNRESOLVED_LINK,
    Label.PROBLEM,
    Label.SOURCE,
    Label.VALUE,
)

DOCUMENT_TEXT_INDEX = "document_text"
# Words are looked up in the text fields; `uri` narrows a scoped query inside Lucene (worker/graph/document_text.py).
DOCUMENT_TEXT_FIELDS = ("displayName", "name", "text")
DOCUMENT_SCOPE_FIELD = "uri"
# The metadata graph's index names follow Neocarta's conventions, so its MCP server (and anything
# else written for a Neocarta graph) finds them: `<labels>_full_text_index`, `<label>_vector_index`.
TABLE_TEXT_INDEX = "table_full_text_index"
# A table's words, written by worker/warehouse/table_search.py: its schema and name, its columns,
# their descriptions, and the business terms tagged on it or its columns. Indexed beside Neocarta's
# `name` and `description` with Lucene's English analyzer (stop words, Porter stems: "vehicles"
# meets "vehicle"), measured over Neo4j's default on Spider 2.0-lite (docs/shapes.md).
TABLE_SEARCH_FIELDS = ("search_name", "search_columns", "search_notes", "search_terms")
TABLE_TEXT_ANALYZER = "english"
DEFAULT_ANALYZER = "standard-no-stop-words"  # Neo4j's own default, the other full-text indexes'
COLUMN_TEXT_INDEX = "column_full_text_index"
BUSINESS_TERM_INDEX = "businessterm_full_text_index"
# Vector indexes, present only when an embedder is configured (their size is the model's).
VECTOR_INDEXES = {
    Label.TABLE: "table_vector_index",
    Label.BUSINESS_TERM: "businessterm_vector_index",
}
EMBEDDING_PROPERTY = "embedding"
# Names this graph used before it followed Neocarta's; `apply` drops them where they remain.
RETIRED_INDEXES = (
    "table_text",
    "business_term_text",
    "table_embedding",
    "column_embedding",
    "business_term_embedding",
    "document_doc_id",
    "column_vector_index",  # a column is found through its table's text and vector
)
# The singleton node Neocarta's connectors write and its MCP server checks: the conventions the
# metadata graph follows are those of this Neocarta version.
NEOCARTA_GRAPH_LABEL = "__neocarta_graph__"
NEOCARTA_VERSION = "0.8.0"


@dataclass(frozen=True)
class SchemaItem:
    name: str
    kind: str  # "constraint" or "index"
    create: str
    properties: tuple[str, ...] = ()  # a full-text index's: one indexing others is rebuilt
    analyzer: str = DEFAULT_ANALYZER  # a full-text index's: one analysing otherwise is rebuilt


def _unique(label: Label, key: str) -> SchemaItem:
    name = f"{label.lower()}_{key}_unique"
    return SchemaItem(
        name,
        "constraint",
        f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{key} IS UNIQUE",
    )


def _range(label: Label, key: str, name: str = "") -> SchemaItem:
    name = name or f"{label.lower()}_{key}"
    return SchemaItem(name, "index", f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n.{key})")


def _fulltext(name: str, labels: tuple[Label, ...], properties: tuple[str, ...], analyzer: str = DEFAULT_ANALYZER) -> SchemaItem:
    on = ", ".join(f"n.{prop}" for prop in properties)
    return SchemaItem(
        name,
        "index",
        f"CREATE FULLTEXT INDEX {name} IF NOT EXISTS FOR (n:{'|'.join(labels)}) ON EACH [{on}] OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{analyzer}'}}}}",
        properties,
        analyzer,
    )


SCHEMA: tuple[SchemaItem, ...] = (
    *(_unique(label, "uri") for label in DOCUMENT_LABELS),
    *(_unique(label, "id") for label in METADATA_LABELS),
    _range(Label.DOCUMENT, "path_key"),
    _range(Label.DOCUMENT, "doc_key"),
    _range(Label.DOCUMENT, "stem_key"),
    _range(Label.SECTION, "doc_uri"),
    _range(Label.UNRESOLVED_LINK, "key"),
    _range(Label.UNRESOLVED_LINK, "source"),  # links --broken --under: a prefix seek
    _range(Label.QUERY_RUN, "query"),  # a query's runs, credited once its tables exist
    _range(Label.PROBLEM, "key"),
    *(_range(label, "id") for label in (Label.THEME_DRAFT, Label.THEME_RETIRED)),  # a theme's versions found by id
    _fulltext(DOCUMENT_TEXT_INDEX, (Label.DOCUMENT, Label.SECTION), (*DOCUMENT_TEXT_FIELDS, DOCUMENT_SCOPE_FIELD)),
    # Neocarta's catalog tools look schemas, tables and columns up by name
    *(_range(label, "name", f"{label.lower()}_name_index") for label in (Label.SCHEMA, Label.TABLE, Label.COLUMN)),
    _fulltext(TABLE_TEXT_INDEX, (Label.TABLE,), ("name", "description", *TABLE_SEARCH_FIELDS), TABLE_TEXT_ANALYZER),
    _fulltext(COLUMN_TEXT_INDEX, (Label.COLUMN,), ("name", "description")),
    _fulltext(BUSINESS_TERM_INDEX, (Label.BUSINESS_TERM,), ("name", "description", "synonyms")),
)


def _vector(name: str, label: Label, dimensions: int) -> SchemaItem:
    return SchemaItem(
        name,
        "index",
        f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n.{EMBEDDING_PROPERTY}) "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dimensions}, `vector.similarity_function`: 'cosine'}}}}",
    )


EXISTING_CONSTRAINTS = "SHOW CONSTRAINTS YIELD name RETURN name"
EXISTING_INDEXES = "SHOW INDEXES YIELD name RETURN name"
VECTOR_SIZES = "SHOW VECTOR INDEXES YIELD name, options RETURN name, options.indexConfig['vector.dimensions'] AS dimensions"
FULLTEXT_PROPERTIES = "SHOW FULLTEXT INDEXES YIELD name, properties, options RETURN name, properties, options.indexConfig['fulltext.analyzer'] AS analyzer"
DROP_INDEX = "DROP INDEX {name} IF EXISTS"  # index names cannot be parameters; ours are constants
AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"


@dataclass(frozen=True)
class SchemaReport:
    created: list[str]
    existing: list[str]


def apply(driver: Driver, database: str, vector_dimensions: int | None = None, await_seconds: int = 300) -> SchemaReport:
    """Create every missing constraint and index, then wait until they are online.

    With `vector_dimensions` the vector indexes exist at that size (one of another size — the
    model changed — is rebuilt); without, they are dropped, so no tool offers a vector search
    nothing feeds. A full-text index on other properties than declared (an older version's) is
    rebuilt, as is one with another analyzer: about two minutes at two million sections, during
    which its shapes are not offered.
    """
    sizes = {row["name"]: row["dimensions"] for row in driver.execute_query(VECTOR_SIZES, database_=database).records}
    for name, size in sizes.items():
        if name in VECTOR_INDEXES.values() and size != vector_dimensions:
            driver.execute_query(DROP_INDEX.format(name=name), database_=database)
    declared = {item.name: (item.properties, item.analyzer) for item in SCHEMA if item.properties}
    for row in driver.execute_query(FULLTEXT_PROPERTIES, database_=database).records:
        if row["name"] in declared and (tuple(row["properties"]), row["analyzer"]) != declared[row["name"]]:
            driver.execute_query(DROP_INDEX.format(name=row["name"]), database_=database)
    for name in RETIRED_INDEXES:
        driver.execute_query(DROP_INDEX.format(name=name), database_=database)
    present = {record["name"] for query in (EXISTING_CONSTRAINTS, EXISTING_INDEXES) for record in driver.execute_query(query, database_=database).records}
    wanted = SCHEMA
    if vector_dimensions:
        wanted += tuple(_vector(name, label, vector_dimensions) for label, name in VECTOR_INDEXES.items())
    created = []
    for item in wanted:
        if item.name not in present:
            driver.execute_query(item.create, database_=database)
            created.append(item.name)
    driver.execute_query(AWAIT_INDEXES, seconds=await_seconds, database_=database)
    return SchemaReport(created=created, existing=[item.name for item in wanted if item.name in present])
