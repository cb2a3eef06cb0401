"""Theme updates move the frontier and nothing else: documents away from changed links keep their
theme, documents at a changed link go where their links now are, and no change gives the same
membership back — on small graphs whose answer is known."""

from __future__ import annotations

import random

import pytest

from worker.themes import frontier
from worker.themes.model import DocumentGraph, LinkChange
from worker.themes.projection import conductance
from worker.themes.summary import summarize


def graph_of(links: list[tuple[str, str]]) -> DocumentGraph:
    directed: dict[tuple[str, str], int] = {}
    for source, target in links:
        directed[(source, target)] = directed.get((source, target), 0) + 1
    edges: dict[tuple[str, str], int] = {}
    for (source, target), count in directed.items():
        pair = (min(source, target), max(source, target))
        edges[pair] = edges.get(pair, 0) + count
    documents = sorted({uri for link in links for uri in link})
    return DocumentGraph(documents, edges, directed)


def clique(prefix: str, size: int) -> list[tuple[str, str]]:
    return [(f"{prefix}{a}", f"{prefix}{b}") for a in range(size) for b in range(size) if a != b]


def update(graph: DocumentGraph, previous: dict[str, int], moving: set[str], gamma: float, random_seed: int) -> dict[str, int]:
    """The frontier's labels as a membership (uri -> community)."""
    return dict(zip(graph.linked, frontier.labels(graph, previous, moving, gamma, random_seed).tolist(), strict=True))


def groups(membership: dict[str, int]) -> set[frozenset[str]]:
    found: dict[int, set[str]] = {}
    for uri, community in membership.items():
        found.setdefault(community, set()).add(uri)
    return {frozenset(members) for members in found.values()}


TWO = clique("a", 6) + clique("b", 6) + [("a0", "b0")]
SPLIT = {f"a{i}": 1 for i in range(6)} | {f"b{i}": 2 for i in range(6)}


def test_no_change_gives_the_same_membership_back() -> None:
    graph = graph_of(TWO)
    assert groups(update(graph, SPLIT, set(), 1.0, 42)) == groups(SPLIT)


def test_documents_off_the_frontier_keep_their_theme_even_when_another_would_score_better() -> None:
    merged = dict.fromkeys(SPLIT, 7)  # a poor partition: both cliques as one theme
    assert groups(update(graph_of(TWO), merged, set(), 1.0, 42)) == groups(merged)


def test_a_document_whose_links_moved_follows_them() -> None:
    rewired = [link for link in TWO if "a5" not in link] + [("a5", f"b{i}") for i in range(6)] + [(f"b{i}", "a5") for i in range(6)]
    moved = update(graph_of(rewired), SPLIT, {"a5"} | {f"a{i}" for i in range(5)} | {f"b{i}" for i in range(6)}, 1.0, 42)
    assert groups(moved) == {frozenset(f"a{i}" for i in range(5)), frozenset({f"b{i}" for i in range(6)} | {"a5"})}


def test_new_documents_find_their_theme_or_form_one() -> None:
    grown = TWO + [("a6", f"a{i}") for i in range(6)] + clique("c", 4)
    moved = update(graph_of(grown), SPLIT, {"a6"}, 1.0, 42)
    assert moved["a6"] == moved["a0"]
    assert len({moved[f"c{i}"] for i in range(4)}) == 1 and moved["c0"] not in {moved["a0"], moved["b0"]}


def test_the_frontier_is_the_ends_of_changed_links_only() -> None:
    links = [*TWO, ("a1", "b3")]
    graph = DocumentGraph(
        graph_of(links).documents,
        graph_of(links).edges,
        graph_of(links).directed,
        {"a1": LinkChange("new", {f"a{i}": 1 for i in range(6) if i != 1} | {"b4": 1}), "a2": LinkChange("same", {f"a{i}": 1 for i in range(6) if i != 2})},
    )
    assert graph.frontier == {"a1", "b3", "b4"}  # a1 swapped b4 for b3; a2's signature moved, its document links did not


def test_summaries_match_a_plain_count_on_a_random_graph() -> None:
    rng = random.Random(3)
    names = [f"d{index:02d}" for index in range(40)]
    graph = graph_of([(a, b) for a in names for b in rng.sample(names, 4) if a != b])
    themes = {f"T{number}": frozenset(names[number * 10 : number * 10 + 10]) for number in range(1, 4)}  # d00-d09 ungrouped
    summaries = summarize(graph, themes)
    for theme, members in themes.items():
        cited: dict[str, int] = {}
        for source, target in graph.directed:
            if source in members:
                cited[target] = cited.get(target, 0) + 1
        expected = sorted(cited.items(), key=lambda item: (-item[1], item[0]))[:5]
        assert [(row["uri"], row["cited_by"]) for row in summaries[theme].top_targets] == expected
        inside = {uri: sum(count for pair, count in graph.directed.items() if uri in pair and set(pair) <= members) for uri in members}
        assert [row["uri"] for row in summaries[theme].central] == sorted(members, key=lambda uri: (-inside[uri], uri))[:3]
        for row in summaries[theme].crossovers:
            other = themes[row["theme"]]
            between = sum(count for (a, b), count in graph.directed.items() if {a, b} & members and {a, b} & other and not {a, b} <= members)
            assert row["links"] == between and row["document"] in members


def test_themes_whose_documents_lost_every_link_are_no_obstacle() -> None:
    gone = {f"gone-{index}": 100 + index for index in range(50)}  # no longer in the link graph
    assert groups(update(graph_of(TWO), SPLIT | gone, {"a0", "b0"}, 1.0, 42)) == groups(SPLIT)


def test_conductance_is_the_weight_leaving_over_the_weight_touching_each_community() -> None:
    rng = random.Random(11)
    names = [f"d{index:02d}" for index in range(30)]
    graph = graph_of([(a, b) for a in names for b in rng.sample(names, 3) if a != b])
    membership = {uri: rng.randrange(4) for uri in names[5:]}  # d00-d04 in no community
    expected = {}
    for community in set(membership.values()):
        touching = leaving = 0
        for (a, b), weight in graph.edges.items():
            ends = [membership.get(a), membership.get(b)]
            touching += weight * ends.count(community)
            leaving += weight * ends.count(community) * (ends[0] != ends[1])
        if touching:
            expected[community] = round(leaving / touching, 6)
    assert conductance(graph, membership) == expected


def test_summaries_of_some_themes_equal_those_of_all() -> None:
    rng = random.Random(4)
    names = [f"d{index:02d}" for index in range(60)]
    graph = graph_of([(a, b) for a in names for b in rng.sample(names, 5) if a != b])
    themes = {f"T{number}": frozenset(names[number * 10 : number * 10 + 10]) for number in range(1, 6)}
    every = summarize(graph, themes)
    for only in ({"T2"}, {"T1", "T5"}, set(themes)):
        assert summarize(graph, themes, only) == {theme: every[theme] for theme in only}


def edge_rows(graph: DocumentGraph) -> list[tuple[str, str, float]]:
    """The arrays as named rows, in their order (the GDS projection's order)."""
    arrays = graph.arrays
    return [(graph.linked[a], graph.linked[b], weight) for a, b, weight in zip(arrays.a.tolist(), arrays.b.tolist(), arrays.weight.tolist(), strict=True)]


def test_the_arrays_are_the_edges_as_positions_among_the_linked_documents() -> None:
    rng = random.Random(8)
    names = [f"d{index:02d}" for index in range(50)]
    graph = graph_of([(a, b) for a in names[5:] for b in rng.sample(names[5:], 3) if a != b])
    assert graph.linked == sorted({uri for pair in graph.edges for uri in pair})
    assert edge_rows(graph) == [(a, b, float(weight)) for (a, b), weight in sorted(graph.edges.items())]


def test_a_graph_with_some_documents_links_replaced_equals_one_built_from_scratch() -> None:
    rng = random.Random(9)
    names = [f"d{index:02d}" for index in range(40)]
    links = {name: rng.sample([other for other in names if other != name], 3) for name in names}
    known = graph_of([(source, target) for source, targets in links.items() for target in targets])
    known.directed_arrays  # noqa: B018  (computed, as a run leaves it, so the patch reuses it)
    for _ in range(20):
        edited = rng.sample(names, 3)
        changes = {name: LinkChange("new", dict.fromkeys(links[name], 1)) for name in edited}
        for name in edited:
            links[name] = rng.sample([other for other in names if other != name], rng.randint(0, 4))
        outgoing = {name: [(target, 1) for target in links[name]] for name in edited}
        patched = known.replaced(changes, outgoing, set(names), {})
        fresh = graph_of([(source, target) for source, targets in links.items() for target in targets])
        assert patched.directed == fresh.directed and patched.edges == fresh.edges
        assert "directed_arrays" in patched.__dict__  # patched, not built again
        assert patched.linked == fresh.linked and edge_rows(patched) == edge_rows(fresh)
        # the changed documents' links picked from the arrays equal a scan of every link
        assert patched.changed_links == {name: {t: n for (s, t), n in fresh.directed.items() if s == name} for name in edited}
        asked = [*rng.sample(names, 10), "not-a-document"]
        assert sorted(patched.linked_places(asked).tolist()) == sorted(patched.linked.index(uri) for uri in asked if uri in patched.linked)
        known = patched


def test_the_collapsed_edges_are_the_same_summed_by_key_or_by_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(12)
    names = [f"d{index:02d}" for index in range(80)]
    graph = graph_of([(a, b) for a in names for b in rng.sample(names, 4) if a != b])
    previous = {uri: rng.randrange(6) for uri in names if rng.random() < 0.8}
    moving = set(rng.sample(names, 10))
    by_key = update(graph, previous, moving, 1.0, 42)
    monkeypatch.setattr(frontier, "BINCOUNT_LIMIT", 0)  # every collapsed graph summed by a sort instead
    assert update(graph, previous, moving, 1.0, 42) == by_key
