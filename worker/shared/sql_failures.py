"""What parsing a query with sqlglot can raise: its own errors, and what its parser and optimizer
raise internally on input they were not written for (the fuzz campaign found `CREATE TABLE t AS
USING (id)` in Snowflake raising TypeError, and `FROM NULL GROUP BY 1` failing an assertion in
qualify). The join extractor and the run_sql gate both treat any of them as unparsable SQL."""

from __future__ import annotations

from sqlglot.errors import SqlglotError

PARSER_FAILURES = (SqlglotError, TypeError, KeyError, ValueError, AttributeError, IndexError, AssertionError, RecursionError)
