"""Stable theme ids and the change log: new communities matched to the previous run's themes by
membership overlap, and what happened between the two runs."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from scipy.optimize import linear_sum_assignment

from worker.graph.theme_store import theme_id, theme_number
from worker.themes.model import Theme, ThemeChanges


def assign_ids(
    communities: list[frozenset[str]],
    previous: list[Theme],
    threshold: float,
    next_number: int,
) -> tuple[dict[str, frozenset[str]], int]:
    """Each previous theme lends its id to at most one new community: the assignment that maximizes
    the total Jaccard overlap (Hungarian method), keeping only pairs at or above `threshold`.

    An optimal assignment, unlike a greedy one, does not let one large overlap take an id that two
    other pairs needed. Communities are ordered by their first member and themes by id first, so
    the same inputs always give the same ids; new communities get fresh numbers in that order.
    A community with exactly a previous theme's members keeps its id at once (Jaccard 1 is the
    best any pair can do): after an update most do, and only the rest are matched."""
    same = {theme.members: theme.id for theme in previous}
    kept = {same[members]: members for members in communities if members in same}
    ordered = sorted((members for members in communities if members not in same), key=min)
    olds = sorted((theme for theme in previous if theme.id not in kept), key=lambda theme: theme_number(theme.id))
    overlap = np.zeros((len(ordered), len(olds)))
    owners: dict[str, list[int]] = defaultdict(list)
    for column, old in enumerate(olds):
        for uri in old.members:
            owners[uri].append(column)
    for row, new in enumerate(ordered):
        shared = Counter(column for uri in new for column in owners.get(uri, ()))
        for column, count in shared.items():
            overlap[row, column] = count / (len(new) + len(olds[column].members) - count)
    named: dict[int, str] = {}
    if overlap.size:
        for row, column in zip(*linear_sum_assignment(overlap, maximize=True), strict=True):
            if overlap[row, column] >= threshold:
                named[row] = olds[column].id
    themes = dict(kept)
    for row, members in enumerate(ordered):
        if row not in named:
            named[row] = theme_id(next_number)
            next_number += 1
        themes[named[row]] = members
    return themes, next_number


def changes(previous: dict[str, frozenset[str]], current: dict[str, frozenset[str]], share: float = 0.25) -> ThemeChanges:
    """Level-0 changes. A theme split when at least two new themes each took `share` of it; a new
    theme merged when it took that share of two or more old ones."""
    found = ThemeChanges()
    old_of = {uri: theme for theme, members in previous.items() for uri in members}
    new_of = {uri: theme for theme, members in current.items() for uri in members}
    flows: dict[str, Counter[str]] = defaultdict(Counter)  # old -> new -> documents
    for uri, old in old_of.items():
        if uri in new_of:
            flows[old][new_of[uri]] += 1
    for old, members in previous.items():
        big = sorted(new for new, count in flows[old].items() if count >= max(1, share * len(members)))
        if old not in current and not flows[old]:
            found.dissolved.append(old)
        elif len(big) >= 2:
            found.split[old] = big
        elif old not in current:
            found.dissolved.append(old)
    for new, members in current.items():
        sources = sorted(old for old in previous if flows[old][new] >= max(1, share * len(previous[old])))
        if len(sources) >= 2:
            found.merged[new] = sources
        elif new not in previous and not sources:
            found.born.append(new)
        if new in previous:
            delta = len(members) - len(previous[new])
            if delta > 0:
                found.grew[new] = delta
            elif delta < 0:
                found.shrank[new] = -delta
    absorbed = {old for sources in found.merged.values() for old in sources}
    found.dissolved = sorted(old for old in found.dissolved if old not in absorbed)  # merged, not dissolved
    found.born.sort()
    for uri in sorted(set(old_of) | set(new_of)):
        before, after = old_of.get(uri), new_of.get(uri)
        if before == after or (before is None and after in found.born) or (after is None and before in found.dissolved):
            continue  # a theme's birth or dissolution already says it
        found.moved.append({"document": uri, "from": before, "to": after})
    return found
