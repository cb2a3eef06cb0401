"""MENTIONS edges from documents and sections to the warehouse values they name.

A node's text for this purpose is what coverage reads — its display name, name and text — so the
bridge and the coverage shape always agree on what is mentioned. The document writer rewrites the
mentions of the nodes it changes in its own transaction (`MentionIndex.rewrite`), with a matcher
of every Value that it reloads only when the `values` source stamp moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from worker.bridge.matcher import ValueMatcher
from worker.graph.document_text import node_text
from worker.graph.schema import Label, Rel
from worker.graph.stamps import version_in

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

# When and how often the values last changed: a graph rebuilt from scratch restarts the count, not the clock.
ALL_VALUES = f"MATCH (v:{Label.VALUE}) RETURN collect(v.id) AS values"  # one record: 100,000 values in 0.1 s
MENTION_LABELS = (Label.DOCUMENT, Label.SECTION)
DROP_MENTIONS = {label: f"UNWIND $uris AS uri MATCH (:{label} {{uri: uri}})-[m:{Rel.MENTIONS}]->() DELETE m" for label in MENTION_LABELS}
WRITE_MENTIONS = {
    label: f"""
    UNWIND $rows AS r
    MATCH (n:{label} {{uri: r.uri}})
    MATCH (v:{Label.VALUE} {{id: r.value}})
    MERGE (n)-[m:{Rel.MENTIONS}]->(v)
    SET m.count = r.count
    """
    for label in MENTION_LABELS
}
WRITE_BATCH = 20_000


def label_of(uri: str) -> Label:
    """Sections are the nodes whose uri has a fragment."""
    return Label.SECTION if "#" in uri else Label.DOCUMENT


def mention_rows(matcher: ValueMatcher, nodes: Iterable[tuple[str, str]]) -> list[dict]:
    """(uri, text) pairs to MENTIONS rows."""
    return [{"uri": uri, "value": value, "count": count} for uri, text in nodes for value, count in sorted(matcher.mentions(text).items())]


def write_mentions(tx: ManagedTransaction, rows: list[dict]) -> None:
    for label in MENTION_LABELS:
        mine = [row for row in rows if label_of(row["uri"]) == label]
        for start in range(0, len(mine), WRITE_BATCH):
            tx.run(WRITE_MENTIONS[label], rows=mine[start : start + WRITE_BATCH]).consume()


class MentionIndex:
    """The edit side: every Value in one matcher, kept while the values stamp holds."""

    def __init__(self) -> None:
        self.version: tuple[str, ...] = ()
        self.matcher = ValueMatcher(())

    def current(self, tx: ManagedTransaction) -> ValueMatcher:
        version = version_in(tx, "values")
        if version != self.version:
            self.matcher = ValueMatcher(tx.run(ALL_VALUES).single(strict=True)["values"])
            self.version = version
        return self.matcher

    def rewrite(self, tx: ManagedTransaction, nodes: list[tuple[str, Mapping[str, object]]]) -> None:
        """Replace the mentions of these (uri, properties) nodes, just written in this transaction."""
        matcher = self.current(tx)
        if not len(matcher) or not nodes:
            return  # no values (their removal took their mentions with them)
        for label in MENTION_LABELS:
            uris = [uri for uri, _ in nodes if label_of(uri) == label]
            if uris:
                tx.run(DROP_MENTIONS[label], uris=uris).consume()
        write_mentions(tx, mention_rows(matcher, ((uri, node_text(props)) for uri, props in nodes)))
