"""A fuzz campaign (hypothesis) on everything that reads outside input: the Markdown, HTML and PDF
parsers with the document builder, link resolution, the audit-log parser, the SQL join extractor
and the read-only gate in front of run_sql. Random and adversarial inputs — invalid UTF-8, very long lines, deeply nested lists,
pathological headings, SQL with a thousand joins — must end in a result or the component's own
refusal (Skipped, AuditLogError, an Extraction with an error), never a crash or a hang.

Examples per target: 150 by default (CI), 1,000 under `--full`, or `FUZZ_EXAMPLES`.
Each refused input is counted; the figures print at the end of the run.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapes.access.sql_runner import check_query
from shapes.spec.exceptions import ShapeError
from worker.documents.links import target
from worker.documents.prepare import prepare
from worker.documents.rules import DocumentRules
from worker.documents.source import Skipped, build
from worker.warehouse.audit_log import (
    AuditLogError,
    Ignored,
    QueryEvent,
    TableEvent,
    parse_bytes,
)
from worker.warehouse.joins import Extraction, SchemaIndex, extract

RULES = DocumentRules.defaults()

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=5000, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TRIED: Counter[str] = Counter()
pytestmark = [pytest.mark.reliability, pytest.mark.slow]  # --full: 1,000 examples per target
REFUSED: Counter[str] = Counter()
SCHEMA = SchemaIndex(
    {"proj": {"shop": {"orders": {"id": "INT64", "customer_id": "INT64"}, "customers": {"id": "INT64", "name": "STRING"}}}}, default_catalog="proj"
)


@pytest.fixture(scope="module", autouse=True)
def figures() -> None:
    yield
    print("\nfuzz campaign: " + ", ".join(f"{name} {TRIED[name]} tried / {REFUSED[name]} refused" for name in sorted(TRIED)) + "; crashes 0")


def document(relpath: str, data: bytes) -> None:
    """Build and prepare a document as the loader does; Skipped is the only allowed refusal."""
    TRIED[posixpath.splitext(relpath)[1]] += 1
    try:
        record = build("lib", relpath, data, RULES)
    except Skipped:
        REFUSED[posixpath.splitext(relpath)[1]] += 1
        return
    prepared = prepare(record, ("doc",), f"/lib/{relpath}")
    assert prepared.uri.startswith("lib/")


MARKDOWN_PIECES = st.sampled_from(
    [
        "# ",
        "## ",
        "###### ",
        "####### ",
        "- ",
        "  - ",
        "    - ",
        "1. ",
        "> ",
        "```",
        "~~~",
        "---\n",
        "title: x\n",
        "id: A\n",
        "[a](b.md)",
        "[a](../../../../x.md#y)",
        "[a]: c.md",
        "![i](p.png)",
        "<a href='z.md#q'>",
        "<!--",
        "-->",
        "[",
        "]",
        "(",
        ")",
        "#",
        "\\",
        "\n",
        "\r\n",
        "\t",
        "é",
        "\u202e",
        "\ufeff",
        "\x00",
        "doc://",
        "doc://#",
        "http://x",
        "|a|b|\n|-|-|\n",
    ]
)


@FUZZ
@given(st.binary(max_size=4000))
def test_random_bytes_as_every_format(data: bytes) -> None:
    for relpath in ("a/b.md", "a/b.html", "a/b.pdf"):
        document(relpath, data)


@FUZZ
@given(st.lists(MARKDOWN_PIECES, max_size=400).map("".join))
def test_markdown_made_of_its_own_syntax(text: str) -> None:
    document("notes/n.md", text.encode("utf-8", "surrogatepass"))
    document("notes/n.html", text.encode())


@FUZZ
@given(st.integers(min_value=1, max_value=3000), st.sampled_from(["  - ", "> ", "#", "[", "<div>", "* "]))
def test_deep_nesting_and_pathological_headings(depth: int, piece: str) -> None:
    nested = "\n".join(piece * level + "item" for level in range(1, min(depth, 200)))
    document("deep/n.md", (nested + "\n" + piece * depth + " end\n").encode())
    document("deep/n.html", ("<ul><li>" * depth + "x" + "</li></ul>" * (depth // 2)).encode())


@FUZZ
@given(st.binary(min_size=4, max_size=2000))
def test_invalid_utf8_and_pdf_lookalikes(tail: bytes) -> None:
    document("x/broken.md", b"# Title\n" + tail + b"\xff\xfe\xc3\x28")
    document("x/broken.pdf", b"%PDF-1.7\n" + tail + b"\n%%EOF")


@FUZZ
@given(st.text(max_size=300), st.text(alphabet="abcdef/._-", max_size=60))
def test_link_resolution_never_escapes_or_crashes(href: str, relpath: str) -> None:
    TRIED["link"] += 1
    found = target(href, "lib", relpath or "a.md", ("doc",))
    if found.kind == "invalid":
        REFUSED["link"] += 1
    if found.kind == "path":
        library, _, path = found.key.partition("/")
        assert library == "lib" and not path.startswith("../") and ".." not in path.split("/")


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=2000),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=40),
            lambda inner: (
                st.lists(inner, max_size=5)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "protoPayload",
                            "metadata",
                            "jobChange",
                            "job",
                            "jobConfig",
                            "queryConfig",
                            "query",
                            "jobStatus",
                            "jobState",
                            "after",
                            "timestamp",
                            "resourceName",
                            "authenticationInfo",
                            "principalEmail",
                            "error",
                            "tableCreation",
                            "tableChange",
                            "tableDeletion",
                            "jobCompletedEvent",
                            "@type",
                        ]
                    ),
                    inner,
                    max_size=6,
                )
            ),
            max_leaves=40,
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_audit_log_entries(data: bytes) -> None:
    TRIED["audit-log"] += 1
    try:
        event = parse_bytes(data)
    except AuditLogError:
        REFUSED["audit-log"] += 1
        return
    assert isinstance(event, QueryEvent | TableEvent | Ignored)


SQL_PIECES = st.sampled_from(
    [
        "SELECT ",
        "FROM ",
        "shop.orders",
        "shop.customers",
        " o",
        " c",
        " JOIN ",
        " LEFT JOIN ",
        " ON ",
        "o.customer_id",
        "c.id",
        " = ",
        " AND ",
        " OR ",
        " WHERE ",
        " USING (id)",
        "(",
        ")",
        ",",
        "*",
        " UNION ALL ",
        "WITH x AS ",
        "`proj.shop.orders`",
        ";",
        "--",
        "/*",
        "*/",
        "'",
        '"',
        "\\",
        " GROUP BY 1",
        "DELETE ",
        "CREATE TABLE t AS ",
        "\n",
        "NULL",
        "1",
    ]
)


@FUZZ
@given(st.lists(SQL_PIECES, max_size=80).map("".join), st.sampled_from(["bigquery", "duckdb", "snowflake"]))
def test_join_extractor_on_sql_shaped_noise(sql: str, dialect: str) -> None:
    TRIED["sql"] += 1
    found = extract(sql, dialect, SCHEMA)
    assert isinstance(found, Extraction)
    if found.error:
        REFUSED["sql"] += 1


@FUZZ
@given(st.lists(SQL_PIECES, max_size=80).map("".join), st.sampled_from(["bigquery", "duckdb", "snowflake"]))
def test_run_sql_gate_on_sql_shaped_noise(sql: str, dialect: str) -> None:
    """The read-only gate in front of run_sql: a query passes, anything else is a ShapeError."""
    TRIED["run_sql gate"] += 1
    try:
        check_query(sql, dialect)
    except ShapeError:
        REFUSED["run_sql gate"] += 1


@pytest.mark.timeout(120)
def test_a_thousand_joins_and_a_deep_subquery() -> None:
    joins = " ".join(f"JOIN shop.customers c{n} ON c{n}.id = o.customer_id" for n in range(1000))
    found = extract(f"SELECT 1 FROM shop.orders o {joins}", "bigquery", SCHEMA)
    assert found.error is None and len(found.pairs) == 1  # one distinct pair, however many times
    deep = "SELECT id FROM " + "(SELECT id FROM " * 300 + "shop.orders" + ") t" * 300
    assert isinstance(extract(deep, "bigquery", SCHEMA), Extraction)


@pytest.mark.timeout(300)
def test_ten_megabyte_inputs() -> None:
    line = ("word " * 2_100_000).encode()  # one 10 MB line
    document("big/line.md", line)
    document("big/line.html", b"<p>" + line + b"</p>")
    document("big/heading.md", b"#" * 10_000_000)
    assert isinstance(extract("SELECT " + "1+" * 200_000 + "1", "bigquery", SCHEMA), Extraction)
