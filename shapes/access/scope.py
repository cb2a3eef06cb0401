"""A call within its caller's grant (worker/shared/grants.py): the one place that decides whether a
shape may answer a grant at all, and the Cypher predicate every scoped query filters nodes by.

A shape declares what it needs of a grant in its spec: `capability` (raw Cypher, SQL) and
`scoped` (its queries filter by the grant). A restricted caller asking a shape that is not
scoped is denied rather than shown the whole graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapes.spec.exceptions import Denied
from worker.exceptions import LakegraphError
from worker.graph import document_text
from worker.graph.schema import Label
from worker.shared.grants import Grant

if TYPE_CHECKING:
    from neo4j import Driver

    from shapes.spec import ShapeSpec
    from worker.settings import Settings


def visible(uri: str) -> str:
    """Cypher: the URI expression `uri` (`node.uri`, `u.source`) is seen by the grant passed as
    `Grant.cypher()`'s parameters — a granted prefix itself, or below one by whole segments (the
    rule of `Grant.sees_uri`). What lies below a prefix is given as its own starts (`Grant.cypher`),
    so a row costs a list lookup and a few STARTS WITH, no string built per row and prefix."""
    return f"($all_uris OR {uri} IN $prefixes OR any(start IN $below WHERE {uri} STARTS WITH start))"


TABLE_IDS = f"MATCH (t:{Label.TABLE}) RETURN t.id AS id"
LIBRARY_NAMES = f"MATCH (l:{Label.LIBRARY}) RETURN l.uri AS name"


def granted_tables(driver: Driver, database: str, grant: Grant) -> frozenset[str] | None:
    """The ids of the tables the grant sees (`Grant.sees_table` on each table the graph holds),
    folded as that rule folds them (`lower()`), so a check compares a query's tables without
    folding every id again; None for a grant that sees every table."""
    if grant.everything:
        return None
    return frozenset(row["id"].lower() for row in driver.execute_query(TABLE_IDS, database_=database).records if grant.sees_table(row["id"]))


def visible_table(table_id: str) -> str:
    """Cypher: the table id expression `table_id` is seen by the grant passed as `Grant.cypher()`'s
    parameters — its dataset, its dataset and name, or its whole id named by a pattern (the rule
    of `Grant.sees_table`), so a query filters its own rows without a list of every granted id.
    The id is folded and split once per row (bound by a one-element list), and each of the five
    forms a pattern may take is looked up in the patterns: a table shape filters hundreds of rows."""
    project, dataset, table = (f"coalesce(parts[{index}], '')" for index in (-3, -2, -1))
    forms = f"[{dataset}, {dataset} + '.' + {table}, {dataset} + '.*', {project} + '.' + {dataset} + '.' + {table}, {project} + '.' + {dataset} + '.*']"
    return f"($all_tables OR any(parts IN [split(toLower({table_id}), '.')] WHERE any(form IN {forms} WHERE form IN $table_patterns)))"


def admit(spec: ShapeSpec, grant: Grant) -> None:
    """Refuse a call the grant cannot make at all, before anything is read."""
    if spec.capability is not None and not grant.may(spec.capability):
        raise Denied(f"{spec.name} needs the {spec.capability!r} capability, which your grants ({', '.join(grant.names)}) do not give")
    if not grant.everything and not spec.scoped:
        raise Denied(f"{spec.name} does not answer within a restricted grant ({', '.join(grant.names)})")


def narrowed(lucene: str, under: str | None, grant: Grant, limit: int) -> tuple[str, dict[str, int]] | None:
    """The full-text query and index options for a search within `under` and the grant: Lucene
    narrows to the scope's phrase (or to the grant's prefixes), `visible` then decides. None: the
    grant shows no library, so nothing can match."""
    if under or grant.everything:
        return document_text.scoped(lucene, under), document_text.index_options(under, limit)
    if grant.libraries:
        return document_text.within(lucene, grant.libraries), {}
    return None


def check_grants(settings: Settings, driver: Driver, database: str) -> None:
    """At start: every library a grant names is configured or in the graph, and every table
    pattern matches a table the graph holds. A misspelt grant would silently show nothing (or,
    worse, show a library created later under that name): it is an error, said before serving."""
    libraries = {library.name for library in settings.documents.libraries}
    libraries |= {row["name"] for row in driver.execute_query(LIBRARY_NAMES, database_=database).records}
    tables = [row["id"] for row in driver.execute_query(TABLE_IDS, database_=database).records]
    for name, grant in sorted(settings.grants.items()):
        for prefix in grant.libraries:
            if prefix.split("/", 1)[0] not in libraries:
                known = ", ".join(sorted(libraries)) or "none yet"
                raise LakegraphError(f"grants.{name}: library {prefix!r} names no library (configured or loaded: {known})")
        for pattern in grant.tables:
            if not any(Grant((name,), tables=(pattern,)).sees_table(table) for table in tables):
                raise LakegraphError(f"grants.{name}: tables {pattern!r} match no table the graph holds ({len(tables)} tables; sync the warehouse first)")
