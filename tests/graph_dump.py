"""A comparable dump of the document graph: every node and edge with its properties, minus clocks
and minus what themes runs derive from it (memberships), which a live stack may add at any moment."""

from __future__ import annotations

from neo4j import Driver

from worker.documents.loader import load
from worker.documents.sync import DocumentSync
from worker.graph import schema
from worker.settings import Settings

VOLATILE = {"updated_at", "since", "first_seen", "last_seen", "occurrences"}
THEMES_DERIVED = {"themed_signature", "themed_links"}  # the links a document had at the last themes run
DOCUMENT_LABELS = ["Library", "Folder", "Document", "Section", "UnresolvedLink"]
THEMES_DERIVED_LABELS = {schema.Label.LINKS_CHANGED.value}  # on documents whose links changed since the last themes run

NODES = """
MATCH (n) WHERE any(label IN labels(n) WHERE label IN $labels)
RETURN labels(n) AS labels, properties(n) AS props
"""
EDGES = """
MATCH (a)-[r]->(b) WHERE any(label IN labels(a) WHERE label IN $labels) AND any(label IN labels(b) WHERE label IN $labels)
RETURN type(r) AS type, coalesce(a.uri, a.id) AS start, coalesce(b.uri, b.id) AS end, properties(r) AS props
"""
WIPE = "MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"


def _clean(props: dict) -> tuple:
    return tuple(sorted((key, repr(value)) for key, value in props.items() if key not in VOLATILE and key not in THEMES_DERIVED))


def dump(driver: Driver) -> tuple[list, list]:
    nodes = sorted(
        (tuple(sorted(set(row["labels"]) - THEMES_DERIVED_LABELS)), _clean(row["props"])) for row in driver.execute_query(NODES, labels=DOCUMENT_LABELS).records
    )
    edges = sorted((row["type"], row["start"], row["end"], _clean(row["props"])) for row in driver.execute_query(EDGES, labels=DOCUMENT_LABELS).records)
    return nodes, edges


def wipe(driver: Driver) -> None:
    with driver.session() as session:
        session.run(WIPE).consume()


def differences_from_files(driver: Driver, settings: Settings) -> tuple[int, int]:
    """(documents in the graph, differences against a fresh load of the same files). Leaves the
    graph as the fresh load made it."""
    recovered = dump(driver)
    documents = sum(1 for labels, _ in recovered[0] if labels == ("Document",))
    wipe(driver)
    schema.apply(driver, "neo4j")
    load(DocumentSync(settings, driver, "neo4j"), workers=1)
    fresh = dump(driver)
    return documents, len(set(recovered[0]) ^ set(fresh[0]) | set(recovered[1]) ^ set(fresh[1]))
