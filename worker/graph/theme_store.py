"""How themes are stored: their ids, and the versions that let a run be written in many
transactions while readers never see a mixture.

A theme's id is `T` and a number that no other theme ever had (`theme_id`, `theme_number`); a run
matches new communities to the old ids by overlap, so the id outlives its members.

Each themes run has a sequence number (`ThemeRun.seq`). A theme's node is one version of it: made
by the run `since`, replaced by the run `until` (none while it stands), never changed in between —
a run that changes a theme writes a new version. A reader first reads the current run's number,
then only the versions visible at it (VISIBLE): a run's versions, written before it became current,
are invisible until then, and the versions it replaced stay visible to whoever still reads at the
previous run. Neo4j reads committed data only, not snapshots; comparing numbers fixed before the
read makes each answer one run's whole.

A run that changes a theme's score or summary but not its members writes no new version: it
changes those properties (PROPS) in place in the transaction that makes it current, keeping the
values before beside them (`prev_*`) with the run that changed them (`props_since`), so a reader
still at the run before reads those (`props_at`). Only a change of members costs a version.

Labels keep naive readers (raw Cypher, `MATCH (t:Theme)`) on one run too: `Theme` holds the
current versions, `ThemeDraft` a run's versions until it is current and settled, `ThemeRetired`
the versions it replaced until the next run deletes them (see worker/themes/write.py)."""

from __future__ import annotations

from worker.graph.schema import Label

ID_PREFIX = "T"
THEME_ID_FORM = rf"^{ID_PREFIX}[0-9]+$"


def theme_id(number: int) -> str:
    return f"{ID_PREFIX}{number}"


def theme_number(theme: str) -> int:
    return int(theme.removeprefix(ID_PREFIX))


VERSIONS = f"{Label.THEME}|{Label.THEME_DRAFT}|{Label.THEME_RETIRED}"
# Themes and runs written before versions existed count as run 0's.
SEQ = "coalesce({node}.seq, 0)"
# The versions a reader at run $run sees.
VISIBLE = "coalesce({node}.since, 0) <= $run AND ({node}.until IS NULL OR {node}.until > $run)"
PROPS = ("name", "size", "conductance", "top_targets", "central", "crossovers")
PREVIOUS = "prev_"


def visible(node: str) -> str:
    return VISIBLE.format(node=node)


def props_at(node: str) -> str:
    """Cypher for a theme's PROPS as a reader at run $run sees them, each under its own name."""
    return ", ".join(f"CASE WHEN coalesce({node}.props_since, 0) <= $run THEN {node}.{name} ELSE {node}.{PREVIOUS}{name} END AS {name}" for name in PROPS)
