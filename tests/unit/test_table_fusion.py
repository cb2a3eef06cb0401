"""How table_context fuses its arms: by reciprocal rank, each arm by its weight; between tables
fused to the same score, the one the question's own words rank higher first."""

from __future__ import annotations

from shapes.table_context import DEFAULT_RANKING, fuse


def ranked(rankings: dict[str, list[str]]) -> list[str]:
    fused, _, order = fuse(rankings, DEFAULT_RANKING)
    return sorted(fused, key=order)


def test_a_tie_between_the_words_and_the_vectors_goes_to_the_words() -> None:
    # text: a first, z second; vectors: z first, a second. Both fuse to the same score.
    assert ranked({"text": ["shop.a", "shop.z"], "vector": ["shop.z", "shop.a"]}) == ["shop.a", "shop.z"]
    assert ranked({"text": ["shop.z", "shop.a"], "vector": ["shop.a", "shop.z"]}) == ["shop.z", "shop.a"]  # not by id


def test_a_table_the_words_never_found_comes_after_one_they_did_at_the_same_score() -> None:
    fused, arms, order = fuse({"text": ["shop.b"], "vector": ["shop.a"]}, DEFAULT_RANKING)
    assert fused["shop.a"] == fused["shop.b"] and sorted(fused, key=order) == ["shop.b", "shop.a"]
    assert arms == {"shop.b": ["text"], "shop.a": ["vector"]}


def test_two_arms_agreeing_beat_one_arm_alone() -> None:
    assert ranked({"text": ["shop.a", "shop.b"], "term": ["shop.b"], "vector": ["shop.c", "shop.b"]})[0] == "shop.b"
