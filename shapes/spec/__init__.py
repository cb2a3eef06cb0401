"""What a shape is, declared once: from a `ShapeSpec` come its CLI command, its MCP tool, its
HTTP endpoint (with OpenAPI) and its row of the README's shapes table.

A spec names the shape (snake_case: the MCP tool; the CLI command and the HTTP path use the same
words with hyphens), says in one line what it is for and when an agent should reach for it, and
holds its parameters as a pydantic model — types, defaults, limits and descriptions live there
and nowhere else. Every surface validates through that model, so a limit is enforced, and its
refusal worded, the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, create_model

from shapes.spec.exceptions import ShapeError
from worker.graph.theme_store import THEME_ID_FORM

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from worker.settings import Capability

# What must exist for a shape to answer (the MCP server offers a tool only then).
Needs = Literal["graph", "documents", "themes", "tables", "warehouse", "values"]
# What a field of an answer names, so the answer can link to its resource: a place in the library
# (a library, folder, document or section: its outline), a table, a column (its table) or a theme.
Refers = Literal["outline", "table", "column", "theme"]
MIN_TOKENS, MAX_TOKENS = 200, 1_000_000
# Forms a text parameter must have, each with what a refusal says (the OpenAPI and MCP schemas carry
# the patterns, and the model refuses what they refuse, in these words).
WORDS = r"\S"  # at least one character that is not a space
CURSOR_FORM = r"^[A-Za-z0-9_-]+$"  # base64url, as every page's next_cursor is written
PATTERN_WORDS = {
    WORDS: "should hold more than spaces",
    CURSOR_FORM: "should be a next_cursor as a page gave it",
    THEME_ID_FORM: "should be a theme id such as T12",
}
Words = Annotated[str, StringConstraints(pattern=WORDS)]
# What every shape takes besides its own parameters: the answer's budget and the cursor that continues it.
PAGING: dict[str, Any] = {
    "cursor": (
        str | None,
        Field(None, pattern=CURSOR_FORM, description="Continue an answer that was cut: the next_cursor of its page, with the same other parameters"),
    ),
    "max_tokens": (
        int | None,
        Field(None, ge=MIN_TOKENS, le=MAX_TOKENS, description="The answer's size budget in tokens (4 characters each); default shapes.answer_tokens"),
    ),
}


class Params(BaseModel):
    """A shape's parameters: unknown names are refused, not ignored. Each model's validator is
    built when it first validates, so a call builds only its own shape's (tests/benchmarks/cli_start.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


@dataclass(frozen=True)
class ShapeSpec:
    name: str
    purpose: str  # one line: CLI help, HTTP summary, README
    guide: str  # for agents: when to reach for it and how to read the answer (MCP description)
    params: type[Params]
    output: type  # the result dataclass (its JSON schema is the answer's, with freshness added)
    run: Callable[[Any, Any, Any], Any]  # (the Shapes service, params, the caller's Grant) -> the whole result
    render: Callable[[Any], str]
    rows: tuple[str, ...]  # the result's fields holding rows, cut to the budget in this order (shapes/spec/budget.py)
    overview: Callable[[Any, int], Any] | None = None  # (the whole result, characters) -> a summary that fits, or None
    needs: Needs = "graph"
    arguments: tuple[str, ...] = ()  # fields the CLI takes positionally, in this order
    method: Literal["GET", "POST"] = "GET"  # POST where a parameter is a query text or an object
    # Answer fields, at any depth, whose values name something with a resource (shapes/serving/resources.py)
    refers: Mapping[str, Refers] = field(default_factory=dict, hash=False)
    # What it asks of a caller's grant (shapes/access/scope.py): a capability beyond reading, and
    # whether its queries answer within a restricted grant (a shape that does not is denied to one).
    capability: Capability | None = None
    scoped: bool = False

    @property
    def command(self) -> str:
        return self.name.replace("_", "-")

    @property
    def path(self) -> str:
        return f"/v1/{self.command}"

    @property
    def description(self) -> str:
        return f"{self.purpose} {self.guide}"

    @cached_property
    def model(self) -> type[Params]:
        """The shape's parameters followed by the paging ones every shape takes."""
        return create_model(self.params.__name__, __base__=self.params, **PAGING)

    def fields(self) -> dict[str, FieldInfo]:
        return self.model.model_fields

    def validate(self, raw: dict[str, Any]) -> Params:
        """The parameters from any surface, checked by the one model; a refusal names the field."""
        try:
            return self.model.model_validate(raw)
        except ValidationError as invalid:
            problems = []
            for error in invalid.errors():
                where = ".".join(str(part) for part in error["loc"]) or "parameters"
                message = "unknown parameter" if error["type"] == "extra_forbidden" else error["msg"]
                if error["type"] == "string_pattern_mismatch":
                    message = PATTERN_WORDS.get(error.get("ctx", {}).get("pattern", ""), message)
                problems.append(f"{where}: {message}")
            takes = ", ".join(self.fields()) or "no parameters"
            raise ShapeError(f"{self.name}: {'; '.join(problems)} ({self.name} takes {takes})") from None


BOUND_WORDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "min_length": "length ≥", "max_length": "length ≤"}


def value_kind(field: FieldInfo) -> Any:
    """What a field takes, as a surface reads it: `str | None` -> str, `list[str]` -> list."""
    annotation = field.annotation
    if get_origin(annotation) in (Union, UnionType):
        annotation = next(member for member in get_args(annotation) if member is not type(None))
    return get_origin(annotation) or annotation


def limits(field: FieldInfo) -> dict[str, Any]:
    """A field's numeric and length bounds, by their JSON-schema names (ge, le, min_length...)."""
    found: dict[str, Any] = {}
    for rule in field.metadata:
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            value = getattr(rule, name, None)
            if value is not None:
                found[name] = value
    return found
