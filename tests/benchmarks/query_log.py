"""Query-log benchmark (not a test): join inference throughput with and without fingerprint caching.

    python -m tests.benchmarks.query_log [--shapes 5000] [--executions 100000]

Generates analyst SQL in BigQuery dialect over a 60-table warehouse: `--shapes` distinct query
shapes (joins through aliases, USING, CTEs, derived tables, unions), each executed many times
with different literals. Prints distinct shapes parsed and resolved per second (both cores),
executions absorbed per second with the fingerprint cache, peak RSS, and the baseline measured
in the same run: parsing every execution without the cache (on a sample).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import time

from worker.warehouse.joins import SchemaIndex, extract
from worker.warehouse.query_log import Execution, absorb

TABLES = 60
BASELINE_SAMPLE = 1500


def schema() -> dict:
    return {"lake": {f"t{index}": {"id": "INT64", "parent_id": "INT64", "code": "STRING", "amount": "NUMERIC", "created": "DATE"} for index in range(TABLES)}}


def shape_sql(rng: random.Random, number: int) -> str:
    a, b, c = rng.sample(range(TABLES), 3)
    kind = number % 5
    if kind == 0:
        sql = f"SELECT x.code, SUM(y.amount) FROM lake.t{a} x JOIN lake.t{b} y ON y.parent_id = x.id WHERE x.code = '{{v}}' GROUP BY 1"
    elif kind == 1:
        sql = f"SELECT * FROM lake.t{a} JOIN lake.t{b} USING (id) WHERE t{a}.amount > {{n}}"
    elif kind == 2:
        sql = (
            f"WITH recent AS (SELECT id, parent_id FROM lake.t{a} WHERE created > '2024-01-{{d}}') "
            f"SELECT r.id FROM recent r JOIN lake.t{b} z ON z.id = r.parent_id JOIN lake.t{c} w ON w.parent_id = z.id"
        )
    elif kind == 3:
        sql = f"SELECT d.k FROM (SELECT parent_id AS k FROM lake.t{a} WHERE amount < {{n}}) d JOIN lake.t{b} q ON q.id = d.k"
    else:
        sql = f"SELECT u.id FROM (SELECT id FROM lake.t{a} UNION ALL SELECT id FROM lake.t{b}) u, lake.t{c} v WHERE v.parent_id = u.id AND v.code = '{{v}}'"
    return sql.replace("SELECT ", f"SELECT {number} AS shape_{number}, ", 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", type=int, default=5000)
    parser.add_argument("--executions", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(5)
    shapes = [shape_sql(rng, number) for number in range(args.shapes)]
    executions = []
    for index in range(args.executions):
        template = shapes[index % args.shapes]
        sql = template.format(v=f"C{rng.randrange(999)}", n=rng.randrange(10_000), d=f"{rng.randrange(1, 28):02d}")
        executions.append(Execution(f"job-{index}", sql, f"user{rng.randrange(40)}"))
    index = SchemaIndex(schema())

    began = time.monotonic()
    sample = executions[:BASELINE_SAMPLE]
    for execution in sample:
        extract(execution.sql, "bigquery", index)
    baseline = len(sample) / (time.monotonic() - began)

    cache: dict = {}
    began = time.monotonic()
    result = absorb(executions, "bigquery", index, cache=cache)
    seconds = time.monotonic() - began
    shapes_per_second = len(result.shapes) / seconds
    # The steady state of a live consumer: new executions of shapes it has already resolved.
    again = [Execution(f"again-{number}", execution.sql, execution.user) for number, execution in enumerate(executions)]
    began = time.monotonic()
    warm = absorb(again, "bigquery", index, cache=cache)
    executions_per_second = warm.executions / (time.monotonic() - began)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\nlakegraph query-log benchmark: {result.executions} executions of {len(result.shapes)} shapes, {os.cpu_count()} cores")
    print(f"  distinct shapes parsed + resolved  {shapes_per_second:,.0f}/s  (target >= 500/s; first pass, {seconds:.1f} s)")
    print(f"  executions absorbed (cached)       {executions_per_second:,.0f}/s  (target >= 20,000/s; known shapes)")
    print(f"  baseline: every execution parsed   {baseline:,.0f}/s on one core, {BASELINE_SAMPLE} executions")
    print(f"  ratio, cached vs baseline          {executions_per_second / baseline:.1f}x")
    print(f"  join pairs {len(result.pairs)}, unparsable {len(result.unparsable)}")
    print(f"  peak RSS: main {rss:.0f} MB, largest pool worker {children:.0f} MB")


if __name__ == "__main__":
    main()
