"""Stable theme ids by membership overlap, and the change log between two runs."""

from __future__ import annotations

from worker.themes.identity import assign_ids, changes
from worker.themes.model import Theme


def members(*uris: str) -> frozenset[str]:
    return frozenset(uris)


def test_ids_follow_the_largest_overlap_and_new_themes_get_new_ids() -> None:
    previous = [Theme("T1", 0, members("a", "b", "c", "d"), 0.1), Theme("T2", 0, members("x", "y", "z"), 0.1)]
    named, next_number = assign_ids([members("x", "y", "z", "w"), members("a", "b", "c"), members("p", "q")], previous, 0.5, 3)
    assert named == {"T1": members("a", "b", "c"), "T2": members("w", "x", "y", "z"), "T3": members("p", "q")}
    assert next_number == 4


def test_an_overlap_below_the_threshold_keeps_no_id() -> None:
    named, _ = assign_ids([members("a", "x", "y", "z")], [Theme("T1", 0, members("a", "b", "c", "d"), 0.1)], 0.5, 7)
    assert named == {"T7": members("a", "x", "y", "z")}


def test_the_assignment_maximizes_total_overlap_where_greedy_would_lose_an_id() -> None:
    """Greedy takes the single best pair (new b..f with T2, 0.43), leaving a..g..h with T1 at 0.2:
    one id kept. The optimal assignment (0.33 + 0.33) keeps both."""
    previous = [Theme("T1", 0, members("a", "b", "c"), 0.1), Theme("T2", 0, members("d", "e", "f", "g", "h"), 0.1)]
    named, next_number = assign_ids([members("a", "g", "h"), members("b", "c", "d", "e", "f")], previous, 0.3, 3)
    assert named == {"T2": members("a", "g", "h"), "T1": members("b", "c", "d", "e", "f")} and next_number == 3


def test_ids_do_not_depend_on_the_order_communities_and_themes_arrive_in() -> None:
    previous = [Theme(f"T{n}", 0, members(*(f"{n}-{i}" for i in range(4))), 0.1) for n in range(1, 7)]
    communities = [members(*(f"{n}-{i}" for i in range(3)), f"{n + 1}-3") for n in range(1, 6)] + [members("x", "y")]
    first = assign_ids(communities, previous, 0.5, 7)
    assert first == assign_ids(list(reversed(communities)), list(reversed(previous)), 0.5, 7)
    assert set(first[0]) == {"T1", "T2", "T3", "T4", "T5", "T7"}


def test_split_merge_dissolve_grow_and_moves() -> None:
    before = {"T1": members("a", "b", "c", "d"), "T2": members("e", "f"), "T3": members("g", "h"), "T4": members("i", "j")}
    after = {
        "T1": members("a", "b"),
        "T5": members("c", "d"),  # T1 split
        "T2": members("e", "f", "g", "h"),  # T3 merged into T2 (T2 grew)
        "T6": members("k", "l"),  # born; T4 dissolved (its documents ungrouped)
    }
    found = changes(before, after)
    assert found.split == {"T1": ["T1", "T5"]}
    assert found.merged == {"T2": ["T2", "T3"]}
    assert found.born == ["T6"] and found.dissolved == ["T4"]  # T3 merged, it did not dissolve
    assert found.grew == {"T2": 2} and found.shrank == {"T1": 2}
    assert {"document": "c", "from": "T1", "to": "T5"} in found.moved
    assert {"document": "g", "from": "T3", "to": "T2"} in found.moved
    assert not [move for move in found.moved if move["document"] in "ijkl"]  # said by "born T6" and "dissolved T4"
    assert not changes(before, before).moved and changes(before, before).empty
