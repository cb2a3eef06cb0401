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

Labels keep naive readers (raw Cypher, `MATCH (t:Theme)`) on one run too: `Theme` holds the
current versions, `ThemeDraft` a run's versions until it is current and settled, `ThemeRetired`
the versions it replaced until the next run deletes them (see worker/themes/write.py)."""

from __future__ import annotations

from worker.graph.schema import Label

ID_PREFIX = "T"


def theme_id(number: int) -> str:
    return f"{ID_PREFIX}{number}"


def theme_number(theme: str) -> int:
    return int(theme.removeprefix(ID_PREFIX))


VERSIONS = f"{Label.THEME}|{Label.THEME_DRAFT}|{Label.THEME_RETIRED}"
# Themes and runs written before versions existed count as run 0's.
SEQ = "coalesce({node}.seq, 0)"
# The versions a reader at run $run sees.
VISIBLE = "coalesce({node}.since, 0) <= $run AND ({node}.until IS NULL OR {node}.until > $run)"


def visible(node: str) -> str:
    return VISIBLE.format(node=node)
