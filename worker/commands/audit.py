"""`lakegraph audit`: the access audit of the served calls, filtered, newest last."""

from __future__ import annotations

import click

from worker.cli_support import Context, emit_json, out, pass_context

OUTCOMES = ("ok", "refused", "denied", "rejected", "error")


@click.command()
@click.option("--subject", help="Only calls by this subject (a token's sub, or a client id).")
@click.option("--outcome", type=click.Choice(OUTCOMES), multiple=True, help="Only these outcomes (repeatable): denied and rejected are the refusals.")
@click.option("--since", help="Only calls at or after this time (ISO 8601, UTC): 2026-12-05 or 2026-12-05T18:00.")
@click.option("--last", "last", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many entries, the newest.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as one JSON list.")
@pass_context
def audit(ctx: Context, subject: str | None, outcome: tuple[str, ...], since: str | None, last: int, as_json: bool) -> None:
    """Who asked what, when, with which grants, and what was refused — from the access audit
    `serve` writes (auth.audit_file under state_dir, rotated; never a token)."""
    from shapes.serving.audit import entries

    path = ctx.settings.access_audit_path
    found = [
        entry
        for entry in entries(path)
        if (subject is None or subject in (entry.get("subject"), entry.get("client")))
        and (not outcome or entry.get("outcome") in outcome)
        and (since is None or str(entry.get("at", "")) >= since)
    ][-last:]
    if as_json:
        emit_json(found)
        return
    out.print(f"{len(found)} audited call(s) in {path}", highlight=False, markup=False)
    for entry in found:
        who = entry.get("subject") or "(no valid token)"
        grants = ",".join(entry.get("grants") or []) or "-"
        reason = f"  — {entry['reason']}" if entry.get("reason") else ""
        params = " ".join(f"{name}={value!r}" for name, value in (entry.get("params") or {}).items())
        out.print(
            f"{entry.get('at')}  {entry.get('outcome'):<8} {who} [{grants}] {entry.get('surface')} {entry.get('action')} {params}{reason}",
            highlight=False,
            markup=False,
        )
