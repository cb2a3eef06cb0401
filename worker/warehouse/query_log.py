"""Absorbing a query log: executions grouped by fingerprint, each distinct shape parsed once.

Parsing and resolving a shape costs milliseconds; absorbing another execution of a known shape
is a dictionary lookup — so a log of 100,000 executions of 5,000 shapes costs 5,000 parses.
Distinct shapes are parsed in a process pool across the cores.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from worker.exceptions import LakegraphError
from worker.warehouse.joins import (
    Extraction,
    JoinPair,
    SchemaIndex,
    extract,
    fingerprint,
)

POOL_THRESHOLD = 200  # below this many shapes a pool costs more than it saves
POOL_CHUNK = 64


@dataclass(frozen=True)
class Execution:
    id: str
    sql: str
    user: str = ""
    dialect: str = ""


@dataclass
class PairStats:
    queries: set[str] = field(default_factory=set)
    executions: int = 0
    users: set[str] = field(default_factory=set)


@dataclass
class Absorbed:
    executions: int = 0
    duplicates: int = 0  # the same execution id seen again: counted once
    shapes: dict[str, Extraction] = field(default_factory=dict)
    pairs: dict[JoinPair, PairStats] = field(default_factory=lambda: defaultdict(PairStats))

    samples: dict[str, str] = field(default_factory=dict)  # shape -> the SQL of its first execution

    @property
    def unparsable(self) -> dict[str, str]:
        return {shape: result.error for shape, result in self.shapes.items() if result.error}

    @property
    def unresolved(self) -> dict[str, list[str]]:
        """Shape -> the columns its tables lack (schema drift or typos: never counted as joins)."""
        return {shape: sorted(result.unresolved) for shape, result in self.shapes.items() if result.unresolved}


def read_queries(path: Path) -> tuple[list[Execution], list[tuple[int, str]]]:
    """Executions from a JSONL file of {"id", "sql"[, "user", "dialect"]}; bad lines with the reason."""
    executions, rejected = [], []
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError as error:
        raise LakegraphError(f"cannot read {path}: {error.strerror}") from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                executions.append(
                    Execution(
                        id=str(row["id"]),
                        sql=str(row["sql"]),
                        user=str(row.get("user") or ""),
                        dialect=str(row.get("dialect") or ""),
                    )
                )
            except (ValueError, KeyError, TypeError) as error:
                rejected.append((number, f"{type(error).__name__}: {error}"))
    return executions, rejected


def _extract(job: tuple[str, str, SchemaIndex]) -> Extraction:
    sql, dialect, schema = job
    return extract(sql, dialect, schema)


def absorb(
    executions: Iterable[Execution],
    dialect: str,
    schema: SchemaIndex,
    workers: int | None = None,
    cache: dict[str, Extraction] | None = None,
) -> Absorbed:
    """Group executions by shape and resolve each new shape once; `cache` carries resolved shapes
    across calls (a long-running consumer keeps one), and is filled with the new ones."""
    cache = {} if cache is None else cache
    result = Absorbed()
    seen_ids: set[str] = set()
    grouped: dict[str, list[Execution]] = defaultdict(list)
    samples: dict[str, tuple[str, str]] = {}
    for execution in executions:
        if execution.id in seen_ids:
            result.duplicates += 1
            continue
        seen_ids.add(execution.id)
        shape = fingerprint(execution.sql)
        grouped[shape].append(execution)
        if shape not in cache:
            samples.setdefault(shape, (execution.sql, execution.dialect or dialect))
    jobs = [(sql, shape_dialect, schema) for sql, shape_dialect in samples.values()]
    workers = workers or os.cpu_count() or 1
    if workers > 1 and len(jobs) >= POOL_THRESHOLD:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            extractions = list(pool.map(_extract, jobs, chunksize=POOL_CHUNK))
    else:
        extractions = [_extract(job) for job in jobs]
    cache.update(zip(samples, extractions, strict=True))
    result.shapes = {shape: cache[shape] for shape in grouped}
    result.samples = {shape: runs[0].sql for shape, runs in grouped.items()}
    for shape, runs in grouped.items():
        result.executions += len(runs)
        for pair in result.shapes[shape].pairs:
            stats = result.pairs[pair]
            stats.queries.add(shape)
            stats.executions += len(runs)
            stats.users.update(run.user for run in runs if run.user)
    return result
