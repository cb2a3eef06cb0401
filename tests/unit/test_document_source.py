"""From bytes to a document record: slugs, heading paths, display names, bad input."""

from __future__ import annotations

import pytest

from worker.documents.rules import DocumentRules
from worker.documents.slugs import heading_slug, name_slug
from worker.documents.source import Skipped, build

RULES = DocumentRules.defaults()


def test_github_slugs_and_duplicates_make_unique_heading_paths() -> None:
    record = build("lib", "Bulletins/TSB 21-114.md", b"# Cause\n## Coil failure\n# Fix\n## Steps\n# Fix\n## Steps\n", RULES)
    assert record.uri == "lib/bulletins/tsb-21-114"
    assert [section.path for section in record.sections] == [
        "cause",
        "cause/coil-failure",
        "fix",
        "fix/steps",
        "fix-1",
        "fix-1/steps-1",
    ]
    assert [section.parent for section in record.sections] == [None, "cause", None, "fix", None, "fix-1"]
    assert [section.position for section in record.sections] == list(range(6))


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Coil Failure", "coil-failure"),
        ("P0301: Cylinder 1 misfire!", "p0301-cylinder-1-misfire"),
        ("`code` and **bold** [link](x.md)", "code-and-bold-link"),
        ("Über Größe", "über-größe"),
        ("snake_case-and-dash", "snake_case-and-dash"),
        ("???", "section"),
    ],
)
def test_heading_slugs_follow_github(heading: str, slug: str) -> None:
    assert heading_slug(heading) == slug


def test_name_slugs() -> None:
    assert name_slug("Service Bulletins") == "service-bulletins"
    assert name_slug("TSB 21-114 (rev. 2)") == "tsb-21-114-rev.-2"


def test_display_name_prefers_front_matter_then_first_heading_then_file_name() -> None:
    assert build("lib", "a.md", b"---\ntitle: From front matter\n---\n# Heading\n", RULES).display_name == "From front matter"
    assert build("lib", "a.md", b"# From heading\n", RULES).display_name == "From heading"
    assert build("lib", "Plain Name.md", b"no headings", RULES).display_name == "Plain Name"


def test_invalid_utf8_is_decoded_with_replacement_and_flagged() -> None:
    record = build("lib", "a.md", b"# Title\ncaf\xe9 cr\xe8me\n", RULES)
    assert "caf\ufffd cr\ufffdme" in record.sections[0].text
    assert record.problems and "not valid UTF-8" in record.problems[0]


def test_binary_content_is_skipped() -> None:
    with pytest.raises(Skipped, match="binary"):
        build("lib", "a.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", RULES)


def test_unreadable_pdf_is_skipped() -> None:
    with pytest.raises(Skipped, match="unreadable PDF"):
        build("lib", "a.pdf", b"%PDF-1.4 this is not really a pdf", RULES)


def test_front_matter_id_and_path_key() -> None:
    record = build("lib", "Manuals/Engine.MD", b"---\nid: MAN-ENG\n---\n# Engine\n", RULES)
    assert record.doc_id == "MAN-ENG"
    assert record.path_key == "lib/manuals/engine"
