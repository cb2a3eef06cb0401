"""`lakegraph errors`: the recorded problems, and replaying one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from worker.cli_support import Context, emit_json, out, pass_context, say
from worker.exceptions import EngineUnavailable, LakegraphError

if TYPE_CHECKING:
    from worker.problems import Problem
    from worker.settings import Settings


@click.command()
@click.option("--replay", "replay_id", help="Run the task that repairs this problem's key again.")
@click.option("--source", help="Only problems of this source (documents, warehouse, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_context
def errors(ctx: Context, replay_id: str | None, source: str | None, as_json: bool) -> None:
    """Recorded problems: skipped inputs, warnings, failed work; --replay ID re-runs one.
    Problems held in Redis while the graph was down are listed too (marked "held")."""
    from worker import problems
    from worker.graph.connection import connect

    held = [problem for problem in _held_problems(ctx.settings) if source is None or problem.source == source]
    try:
        driver, where = connect(ctx.settings)
    except EngineUnavailable:
        if replay_id or as_json or not held:
            raise
        _print_problems(held, [])
        raise
    with driver:
        if replay_id:
            problem = problems.get(driver, where.database, replay_id) or next((p for p in held if p.id == replay_id), None)
            if problem is None:
                raise LakegraphError(f"no recorded problem {replay_id!r}; `lakegraph errors` lists them")
            from worker.replay import replay

            replay(ctx.settings, problem, say)
            return
        found = problems.listing(driver, where.database, source)
    if as_json:
        emit_json([{**problem.__dict__, "held": True} for problem in held] + [{**problem.__dict__, "held": False} for problem in found])
        return
    _print_problems(held, found)


def _print_problems(held: list[Problem], found: list[Problem]) -> None:
    out.print(f"{len(held) + len(found)} recorded problem(s)" + (f", {len(held)} held in Redis until the worker moves them to the graph" if held else ""))
    for problem, mark in [*((problem, " (held)") for problem in held), *((problem, "") for problem in found)]:
        out.print(
            f"{problem.id}  {problem.kind:<8} {problem.source}  {problem.key}{mark}\n"
            f"    {problem.reason} (seen {problem.occurrences}x, last {problem.last_seen})",
            highlight=False,
            markup=False,
        )


def _held_problems(settings: Settings) -> list[Problem]:
    """Problems held in Redis (the graph was down when they happened); none if Redis is unreachable."""
    from redis.exceptions import RedisError

    from worker import problems
    from worker.runtime import redis_server

    try:
        return problems.held(redis_server.broker_client(settings, timeout=2))
    except (RedisError, LakegraphError):
        return []
