"""The page authors watch: the current themes and a picture of the theme graph, updated by itself
(server-sent events) whenever a themes run changes anything, with the change shown as it lands.

`/themes` serves the page (opened once with `?token=`, it keeps the token as an HttpOnly cookie),
`/themes/events` streams one event per new run (the themes shape's JSON plus that run's changes),
`/themes/graph.svg` draws themes as circles sized by documents, joined by their crossover links.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from html import escape

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from shapes.http_api import COOKIE, PAGE_PATH
from shapes.service import Shapes
from shapes.themes import ThemesResult, theme_changes
from worker.graph.schema import Label

LATEST_RUN_ID = f"MATCH (r:{Label.THEME_RUN}) RETURN r.id AS id ORDER BY r.started DESC LIMIT 1"
POLL_SECONDS = 1.0
KEEPALIVE_SECONDS = 15.0
SIZE = 640


def svg(result: ThemesResult) -> str:
    """Themes on a circle, area proportional to size; lines weighted by crossover links."""
    count = max(len(result.themes), 1)
    centre, ring = SIZE / 2, SIZE / 2 - 90
    place = {
        view.id: (centre + ring * math.cos(2 * math.pi * index / count - math.pi / 2), centre + ring * math.sin(2 * math.pi * index / count - math.pi / 2))
        for index, view in enumerate(result.themes)
    }
    largest = max((view.size for view in result.themes), default=1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" height="{SIZE}" font-family="sans-serif" font-size="13">']
    drawn = set()
    for view in result.themes:
        for crossover in view.crossovers:
            pair = tuple(sorted((view.id, crossover["theme"])))
            if pair in drawn or crossover["theme"] not in place:
                continue
            drawn.add(pair)
            (x1, y1), (x2, y2) = place[view.id], place[crossover["theme"]]
            width = 1 + math.log1p(crossover["links"])
            parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#999" stroke-width="{width:.1f}"/>')
    for view in result.themes:
        x, y = place[view.id]
        radius = 12 + 48 * math.sqrt(view.size / largest)
        shade = int(60 + 150 * min(view.conductance, 1.0))
        parts.append(f'<g class="theme" data-id="{escape(view.id)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="rgb({shade},{shade + 20},220)" stroke="#335"/>'
                     f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{escape(view.id)} · {view.size}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lakegraph themes</title>
<style>
 body { font-family: sans-serif; margin: 2rem; color: #223; }
 #layout { display: flex; gap: 2rem; align-items: flex-start; }
 #change { padding: .6rem 1rem; background: #fff6d6; border: 1px solid #e7c75b; margin-bottom: 1rem; }
 .theme-card { border: 1px solid #ccd; padding: .5rem 1rem; margin-bottom: .6rem; }
 .uri { font-family: monospace; font-size: 90%; }
</style></head>
<body>
<h1>Themes</h1>
<div id="header">waiting for the first themes run…</div>
<div id="change" hidden></div>
<div id="layout"><div id="themes"></div><img id="graph" alt="theme graph" src="/themes/graph.svg"></div>
<script>
const text = (tag, content, cls) => { const el = document.createElement(tag); el.textContent = content; if (cls) el.className = cls; return el; };
function describe(changes) {
  const parts = [];
  if (changes.born && changes.born.length) parts.push("born " + changes.born.join(", "));
  if (changes.dissolved && changes.dissolved.length) parts.push("dissolved " + changes.dissolved.join(", "));
  for (const [old, into] of Object.entries(changes.split || {})) parts.push(old + " split into " + into.join(", "));
  for (const [theme, from] of Object.entries(changes.merged || {})) parts.push(theme + " merged from " + from.join(", "));
  for (const [theme, n] of Object.entries(changes.grew || {})) parts.push(theme + " grew by " + n);
  for (const [theme, n] of Object.entries(changes.shrank || {})) parts.push(theme + " shrank by " + n);
  for (const move of (changes.moved || [])) parts.push("moved " + move.document + ": " + (move.from || "ungrouped") + " → " + (move.to || "ungrouped"));
  return parts;
}
function show(data) {
  const t = data.themes;
  document.getElementById("header").textContent =
    t.documents + " documents = " + t.grouped + " grouped + " + t.ungrouped + " ungrouped; " + t.themes.length + " themes" +
    (t.run ? " (run " + t.run.id + ", " + t.run.engine + ")" : "");
  const list = document.getElementById("themes");
  list.replaceChildren();
  for (const theme of t.themes) {
    const card = document.createElement("div");
    card.className = "theme-card"; card.dataset.id = theme.id;
    card.append(text("h3", theme.id + " — " + theme.size + " documents (" + Math.round(theme.share * 100) + "%), cohesion " + theme.conductance.toFixed(2) + " (" + theme.cohesion + ")"));
    card.append(text("div", "converge on: " + theme.top_targets.map(x => x.uri + " (" + x.cited_by + ")").join(", "), "uri"));
    card.append(text("div", "central: " + theme.central.map(x => x.uri + " (" + x.links + ")").join(", "), "uri"));
    for (const c of theme.crossovers) card.append(text("div", "↔ " + c.theme + " via " + c.document + " (" + c.links + " links)", "uri"));
    list.append(card);
  }
  const parts = data.changes ? describe(data.changes) : [];
  const banner = document.getElementById("change");
  banner.hidden = parts.length === 0;
  banner.textContent = parts.length ? "Latest change: " + parts.join("; ") : "";
  document.getElementById("graph").src = "/themes/graph.svg?run=" + encodeURIComponent(t.run ? t.run.id : "none");
}
const events = new EventSource("/themes/events");
events.addEventListener("themes", (event) => show(JSON.parse(event.data)));
</script>
</body></html>
"""


def routes(shapes: Shapes) -> list[Route]:
    async def page(request: Request) -> Response:
        token = request.query_params.get("token")
        if token:  # the middleware checked it: keep it as a cookie and drop it from the address bar
            response = RedirectResponse(PAGE_PATH, status_code=303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        return Response(PAGE, media_type="text/html")

    def latest_run() -> str | None:
        rows = shapes.driver.execute_query(LATEST_RUN_ID, database_=shapes.database).records
        return rows[0]["id"] if rows else None

    def snapshot() -> dict:
        answer = shapes.themes(0)
        run = answer.result.run
        changes = None
        if run is not None:
            runs = theme_changes(shapes.driver, shapes.database, run["started"]).runs
            changes = runs[-1]["changes"] if runs else None
        return {"themes": answer.data(), "changes": changes}

    async def events(request: Request) -> StreamingResponse:
        async def stream() -> AsyncIterator[str]:
            shown: object = object()
            quiet = 0.0
            while not await request.is_disconnected():
                # Each second only the latest run's id is read; the themes shape (which reads every
                # link) is built only when a new run has landed.
                run = await anyio.to_thread.run_sync(latest_run)
                if run != shown:
                    shown = run
                    quiet = 0.0
                    data = await anyio.to_thread.run_sync(snapshot)
                    yield f"event: themes\ndata: {json.dumps(data, default=str)}\n\n"
                elif quiet >= KEEPALIVE_SECONDS:
                    quiet = 0.0
                    yield ": keep-alive\n\n"
                await anyio.sleep(POLL_SECONDS)
                quiet += POLL_SECONDS

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    async def graph(request: Request) -> Response:
        result = (await anyio.to_thread.run_sync(lambda: shapes.themes(0))).result
        return Response(svg(result), media_type="image/svg+xml", headers={"Cache-Control": "no-store"})

    return [Route(PAGE_PATH, page), Route(f"{PAGE_PATH}/events", events), Route(f"{PAGE_PATH}/graph.svg", graph)]
