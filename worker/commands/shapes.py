"""The read commands of `lakegraph`, made from the shape specs (text by default, one JSON document
with `--json`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import click

from shapes.serving import running_server
from shapes.spec import BOUND_WORDS, ShapeSpec, budget, limits, value_kind
from worker.cli_support import Context, out, pass_context

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

WATCH_INTERVAL = 2.0  # seconds between looks with --watch
METAVARS = {int: "INTEGER", float: "NUMBER", dict: "JSON"}


class JsonObject(click.ParamType):
    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, dict):
            return value
        try:
            return json.loads(value)
        except ValueError as error:
            self.fail(f"not JSON: {error}", param, ctx)


@dataclass(frozen=True)
class CommandExtra:
    """Options a command adds to its shape, and what runs with them before the answer (the
    worker side declares these, e.g. `themes --refresh`)."""

    options: tuple[click.Option, ...]
    before: Callable[..., None]  # (settings, driver, database, as_json, **the options' values)


def flag(name: str) -> str:
    return f"-{name}" if len(name) == 1 else f"--{name.replace('_', '-')}"


def _help(field: FieldInfo) -> str:
    bounds = ", ".join(f"{BOUND_WORDS[rule]} {value}" for rule, value in limits(field).items())
    return f"{field.description} ({bounds})" if bounds else field.description or ""


def cli_parameter(spec: ShapeSpec, name: str, field: FieldInfo) -> click.Parameter:
    """A field as a click argument (the spec's `arguments`) or option with the model's default.
    Values reach the model as typed (JSON for objects), so the model alone converts and bounds
    them and a refusal reads as it does over MCP and HTTP."""
    kind = value_kind(field)
    many = kind is list
    if name in spec.arguments:
        return click.Argument([name], nargs=-1 if many else 1, required=field.is_required())
    default = None if field.is_required() or field.default in (None, [], {}) else field.default
    if kind is bool:
        return click.Option([flag(name), name], is_flag=True, default=default, help=field.description)
    return click.Option(
        [flag(name), name],
        type=JsonObject() if kind is dict else click.STRING,
        metavar=METAVARS.get(kind),
        multiple=many,
        default=default,
        required=field.is_required() and not many,
        show_default=default is not None,
        help=_help(field),
    )


def shape_command(spec: ShapeSpec, extra: CommandExtra | None = None) -> click.Command:
    """The shape's CLI command: its fields as arguments and options, --json, --watch, and any extra."""
    fields = spec.fields()
    parameters = [cli_parameter(spec, name, fields[name]) for name in (*spec.arguments, *(name for name in fields if name not in spec.arguments))]
    parameters += [
        click.Option(["--json", "as_json"], is_flag=True, help="Print the answer as one JSON document."),
        click.Option(["--watch"], is_flag=True, help="Print again whenever the answer changes (Ctrl-C stops)."),
        *(extra.options if extra else ()),
    ]

    @pass_context
    def run(ctx: Context, as_json: bool, watch: bool, **values: Any) -> None:
        extras = {option.name: values.pop(option.name) for option in (extra.options if extra else ()) if option.name}
        raw = {name: list(value) if isinstance(value, tuple) else value for name, value in values.items() if value not in (None, ())}
        spec.validate(raw)  # refused before any engine is needed
        if not watch and not any(extras.values()) and _answered_by_server(ctx, spec, raw, as_json):
            return
        from shapes.serving.service import Shapes
        from worker.graph.connection import connect

        driver, where = connect(ctx.settings)
        with driver:
            if extra:
                extra.before(ctx.settings, driver, where.database, as_json, **extras)
            shapes = Shapes(ctx.settings, driver, where.database, counted=False)
            shown = None
            while True:
                answer = shapes.ask(spec.name, **raw)
                seen = json.dumps(asdict(answer.result), default=str, sort_keys=True) if watch else None
                if seen is None or seen != shown:
                    if as_json:
                        click.echo(budget.printed(answer.data()))
                    else:
                        out.print(answer.text(), highlight=False, markup=False)
                    shown = seen
                if not watch:
                    return
                time.sleep(WATCH_INTERVAL)

    return click.Command(spec.command, callback=run, params=parameters, help=spec.purpose, short_help=spec.purpose)


def _answered_by_server(ctx: Context, spec: ShapeSpec, raw: dict[str, Any], as_json: bool) -> bool:
    """True once a running `serve --http` with these settings took the call and its answer is
    printed (shapes/serving/running_server.py); False leaves the call to this process. A watch or a
    worker-side option (`--refresh`) always runs here."""
    server = running_server.find(ctx.settings)
    token = running_server.stored_token(ctx.settings) if server else None
    if server is None or token is None:
        return False
    try:
        answer = running_server.ask(server, token, spec, raw, as_json)
    except running_server.ServerGone:
        return False
    if as_json:
        click.echo(budget.printed(json.loads(answer)))
    else:
        out.print(answer, highlight=False, markup=False)
    return True
