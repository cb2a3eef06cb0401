"""Precision and recall of join inference (`joins extract`'s code path) on public query sets.

    python -m tests.benchmarks.join_precision

Each set in tests/fixtures/query-sets holds real SQL from a public source, its schema, and the
joins its queries really make (hand-labelled: declared keys plus the join conditions the queries
intend). Printed against a baseline in the same run: the same queries without a schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from worker.warehouse.joins import SchemaIndex
from worker.warehouse.query_log import Execution, absorb

SETS = Path(__file__).resolve().parents[1] / "fixtures" / "query-sets"


@dataclass(frozen=True)
class Score:
    learned: int
    correct: int
    truth: int
    unresolved: int

    @property
    def precision(self) -> float:
        return self.correct / self.learned if self.learned else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.truth if self.truth else 1.0


def score(path: Path, with_schema: bool = True) -> Score:
    """Learned pairs against the labelled truth, summed over the set's databases (names compared lower-cased)."""
    data = json.loads(path.read_text())
    learned = correct = truth_size = unresolved = 0
    for name, database in data["databases"].items():
        schema = SchemaIndex(database["schema"] if with_schema else {})
        executions = [Execution(f"{name}-{index}", sql) for index, sql in enumerate(database["queries"])]
        result = absorb(executions, data["dialect"], schema, workers=1)
        found = {tuple(sorted((str(pair.left).lower(), str(pair.right).lower()))) for pair in result.pairs}
        truth = {tuple(sorted(pair)) for pair in database["truth"]}
        learned += len(found)
        correct += len(found & truth)
        truth_size += len(truth)
        unresolved += len(result.unresolved)
    return Score(learned, correct, truth_size, unresolved)


def query_sets() -> list[Path]:
    return sorted(SETS.glob("*.json"))


def main() -> None:
    print(f"{'set':<14}{'queries':>8}  {'precision':>9} {'recall':>7} {'learned':>8}  |  baseline without schema: precision, recall, learned")
    for path in query_sets():
        queries = sum(len(database["queries"]) for database in json.loads(path.read_text())["databases"].values())
        now, base = score(path), score(path, with_schema=False)
        print(
            f"{path.stem:<14}{queries:>8}  {now.precision:>9.2f} {now.recall:>7.2f} {now.learned:>8}  |  "
            f"{base.precision:.2f}, {base.recall:.2f}, {base.learned}  (precision ratio {now.precision / base.precision:.2f}x)"
        )


if __name__ == "__main__":
    main()
