"""What one caller may see and do: the union of the grants its token matches (`[grants]` in the
settings), or everything for the local single-user mode.

Every check of a grant is a method here, and the shapes' queries take the grant's prefixes as one
Cypher parameter, so there is one rule for "may see": a URI is seen when it is a granted prefix or
lies below one, by whole segments (`manuals` shows `manuals/engine.md` and `manuals#intro`, never
`manuals-old/x.md`). Below a seen node everything is seen, so counts of a seen node's children
never count something hidden. Tables follow the same rule on dotted ids: a dataset (`sales`)
shows its tables (`sales.orders`), and a table is named whole (`proj.sales.orders`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from worker.graph.document_text import SEGMENT_ENDS

if TYPE_CHECKING:
    from worker.settings import Capability, GrantSettings


@dataclass(frozen=True)
class Grant:
    """`names`: the grants it is made of (for the audit). `everything`: the local mode's grant."""

    names: tuple[str, ...]
    libraries: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    capabilities: frozenset[str] = field(default_factory=frozenset)
    everything: bool = False

    def sees_uri(self, uri: str) -> bool:
        return self.everything or any(uri == prefix or uri.startswith(tuple(prefix + end for end in SEGMENT_ENDS)) for prefix in self.libraries)

    def touches(self, uri: str) -> bool:
        """Whether a change to `uri` may move what the grant sees: `uri` is seen, or a granted
        prefix lies below it (a section granted within a changed document)."""
        return self.sees_uri(uri) or any(Grant((), (uri,)).sees_uri(prefix) for prefix in self.libraries)

    def sees_table(self, table_id: str) -> bool:
        """A table id (`project.dataset.table`) is seen when a pattern names its dataset (`sales`),
        the table in its dataset (`sales.orders`, `sales.*`) or the whole id (`proj.sales.orders`,
        `proj.sales.*`). Compared case-insensitively: a warehouse that folds case must not let
        `SALES.Orders` past a grant or around it (`lower()`, as Cypher's `toLower` in the same
        rule's twin, `shapes/access/scope.py:visible_table`)."""
        if self.everything:
            return True
        project, dataset, table = (["", "", "", *table_id.lower().split(".")])[-3:]
        for pattern in self.table_patterns:
            parts = pattern.split(".")
            if parts == [dataset] or parts in ([dataset, table], [dataset, "*"]) or parts in ([project, dataset, table], [project, dataset, "*"]):
                return True
        return False

    def may(self, capability: Capability) -> bool:
        return self.everything or capability in self.capabilities

    @property
    def table_patterns(self) -> tuple[str, ...]:
        return tuple(pattern.lower() for pattern in self.tables)

    @property
    def key(self) -> str:
        """Answers computed for one grant are kept under this key, never served to another."""
        if self.everything:
            return "*"
        text = json.dumps([sorted(self.libraries), sorted(self.table_patterns), sorted(self.capabilities)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def cypher(self) -> dict[str, Any]:
        """The grant as the parameters of `visible(...)` and `visible_table(...)` (shapes/access/scope.py)."""
        return {
            "all_uris": self.everything,
            "prefixes": list(self.libraries),
            "below": [prefix + end for prefix in self.libraries for end in SEGMENT_ENDS],  # a segment or a section below a prefix
            "all_tables": self.everything,
            "table_patterns": list(self.table_patterns),
        }


EVERYTHING = Grant(names=("local",), everything=True)


def matched(grants: Mapping[str, GrantSettings], groups: Iterable[str], scopes: Iterable[str]) -> Grant | None:
    """The union of the grants naming any of the caller's groups or scopes; None when none does."""
    groups, scopes = set(groups), set(scopes)
    chosen = {name: grant for name, grant in grants.items() if groups & set(grant.groups) or scopes & set(grant.scopes)}
    if not chosen:
        return None
    return Grant(
        names=tuple(sorted(chosen)),
        libraries=outermost({prefix for grant in chosen.values() for prefix in grant.libraries}),
        tables=tuple(sorted({pattern for grant in chosen.values() for pattern in grant.tables})),
        capabilities=frozenset(capability for grant in chosen.values() for capability in grant.capabilities),
    )


def outermost(prefixes: Iterable[str]) -> tuple[str, ...]:
    """The prefixes not below another one (a grant of `manuals` and `manuals/engine` is `manuals`)."""
    found = sorted(set(prefixes))
    return tuple(prefix for prefix in found if not any(other != prefix and Grant((), (other,)).sees_uri(prefix) for other in found))
