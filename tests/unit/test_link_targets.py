"""What a link points at, from the href alone."""

from __future__ import annotations

import pytest

from worker.documents.links import LinkTarget, target

SCHEMES = ("doc", "kb")


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("../manuals/engine.md#Coil-Test", LinkTarget("path", "lib/manuals/engine", "coil-test")),
        ("engine.md", LinkTarget("path", "lib/bulletins/engine", "")),
        ("/Manuals/Engine.MD", LinkTarget("path", "lib/manuals/engine", "")),
        ("..\\manuals\\engine.md#x", LinkTarget("path", "lib/manuals/engine", "x")),
        ("../manuals/TSB%2021-114.md", LinkTarget("path", "lib/manuals/tsb 21-114", "")),
        ("../manuals/engine", LinkTarget("path", "lib/manuals/engine", "")),
        ("../manuals/engine.html?x=1#y", LinkTarget("path", "lib/manuals/engine", "y")),
        ("#Local-Anchor", LinkTarget("anchor", "", "local-anchor")),
        ("doc://MAN-ENG#coil-test", LinkTarget("id", "man-eng", "coil-test")),
        ("doc://man_eng", LinkTarget("id", "man-eng", "")),  # ids match ignoring case and punctuation
        ("kb://KB%201", LinkTarget("id", "kb-1", "")),
        ("https://example.com/x", LinkTarget("external", "https://example.com/x")),
        ("mailto:someone@example.com", LinkTarget("external", "mailto:someone@example.com")),
    ],
)
def test_targets(href: str, expected: LinkTarget) -> None:
    assert target(href, "lib", "bulletins/tsb-1.md", SCHEMES) == expected


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("", "empty link"),
        ("../../outside.md", "points outside library 'lib'"),
        ("../manuals/", "points at a folder"),
        ("doc://", "no document id"),
        ("doc://--#x", "no document id"),
    ],
)
def test_invalid_links_carry_a_reason(href: str, reason: str) -> None:
    found = target(href, "lib", "bulletins/tsb-1.md", SCHEMES)
    assert found.kind == "invalid" and reason in found.reason
