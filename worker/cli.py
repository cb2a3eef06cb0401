"""The `lakegraph` command line: the group, and one handler for what goes wrong. The commands live
in worker/commands/ (the read commands are made from the shapes' specs there, when one is run).
Expected failures print one line and exit 1; no tracebacks."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from shapes.spec.index import COMMANDS as SHAPE_COMMANDS
from worker.cli_support import Context, err
from worker.commands import audit, demo, engines, extract_joins, load, problems, serve, stack
from worker.exceptions import LakegraphError

if TYPE_CHECKING:
    from worker.commands.shapes import CommandExtra

COMMAND_SOURCE = "command"  # the source of a command's failures in `lakegraph errors`
# Each command imports what it runs when it runs: `--help`, `--version` and a shape call start
# without the engines' clients (tests/unit/test_cli_start.py, tests/benchmarks/cli_start.py).


def command_extras() -> dict[str, CommandExtra]:
    """Worker-side options of generated read commands: each refreshes through the worker's own code path."""
    from worker.commands import bridge_refresh, themes_refresh

    return {"themes": themes_refresh.REFRESH, "bridge": bridge_refresh.REFRESH}


class LakegraphGroup(click.Group):
    """The read commands are listed from the generated catalog and made from their spec only when
    one is run (or its help shown), so `--version` and `--help` never import the shapes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *SHAPE_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SHAPE_COMMANDS and cmd_name not in self.commands:
            from shapes.spec.registry import SPECS
            from worker.commands.shapes import shape_command

            spec = SPECS.for_command(cmd_name)
            self.add_command(shape_command(spec, command_extras().get(spec.name)))
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """One row per command; a shape's row is its catalog purpose."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name)
            if command is not None and command.hidden:
                continue
            rows.append((name, SHAPE_COMMANDS[name] if command is None else command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LakegraphGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lakegraph", message="%(prog)s %(version)s")
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="User settings file (TOML).")
@click.pass_context
def cli(ctx: click.Context, config_file: Path | None) -> None:
    """lakegraph: a live graph of your lakehouse's context, served to agents."""
    ctx.obj = Context(config_file)


for _command in (
    engines.config,
    engines.init,
    engines.neo4j,
    engines.doctor,
    stack.up,
    stack.watch,
    stack.subscribe,
    load.load,
    load.forget,
    problems.errors,
    audit.audit,
    serve.serve_command,
    demo.demo_command,
    extract_joins.extract_joins_command,
):
    cli.add_command(_command)


def main() -> None:
    # The driver's notices (a transaction retried) are not the terminal's: a command's outcome is
    # its answer or its one error line. Processes that log (`up`, the worker) give the logs a home.
    logging.getLogger("neo4j").addHandler(logging.NullHandler())
    try:
        cli.main(standalone_mode=False)
    except LakegraphError as error:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False)
        sys.exit(1)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:
        from worker.graph.engine_errors import explain

        line = explain(error)
        if line is None:
            raise
        _record_failure(line)
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
        sys.exit(1)


def _record_failure(line: str) -> None:
    """An engine's refusal the command met, recorded for `lakegraph errors` (the command is the key;
    nothing replays a command: its line says what to change first)."""
    from worker import problems

    if Context.last is not None and Context.last.loaded:
        problems.park_from_command(Context.last.settings, COMMAND_SOURCE, " ".join(sys.argv[1:])[:200], line)


if __name__ == "__main__":
    main()
