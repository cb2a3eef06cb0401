"""A call within its caller's grant (worker/shared/grants.py): the one place that decides whether a
shape may answer a grant at all, and the Cypher predicate every scoped query filters nodes by.

A shape declares what it needs of a grant in its spec: `capability` (raw Cypher, SQL) and
`scoped` (its queries filter by the grant). A restricted caller asking a shape that is not
scoped is denied rather than shown the whole graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapes.spec.exceptions import Denied

if TYPE_CHECKING:
    from shapes.spec import ShapeSpec
    from worker.shared.grants import Grant


def visible(node: str) -> str:
    """Cypher: `node`'s uri is seen by the grant passed as `Grant.cypher()`'s parameters — a granted
    prefix itself, or below one by whole segments (the rule of `Grant.sees_uri`)."""
    return f"($all_uris OR any(prefix IN $prefixes WHERE {node}.uri = prefix OR {node}.uri STARTS WITH prefix + '/' OR {node}.uri STARTS WITH prefix + '#'))"


def admit(spec: ShapeSpec, grant: Grant) -> None:
    """Refuse a call the grant cannot make at all, before anything is read."""
    if spec.capability is not None and not grant.may(spec.capability):
        raise Denied(f"{spec.name} needs the {spec.capability!r} capability, which your grants ({', '.join(grant.names)}) do not give")
    if not grant.everything and not spec.scoped:
        raise Denied(f"{spec.name} does not answer within a restricted grant ({', '.join(grant.names)})")
