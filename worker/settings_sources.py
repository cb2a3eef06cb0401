"""The settings' raw input: the defaults file, a user file, LAKEGRAPH_* variables and call overrides,
merged key by key into one dict for the settings model to check.

Read here with tomllib and json rather than through pydantic-settings, whose import alone is
40-70 ms of every command's start (tests/benchmarks/cli_start.py).
"""

from __future__ import annotations

import json
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

NESTING = "__"  # LAKEGRAPH_<SECTION>__<KEY>


def merged(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Later layers win key by key; a table in two layers is merged, any other value replaced."""
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            below = result.get(key)
            result[key] = merged(below, value) if isinstance(below, dict) and isinstance(value, Mapping) else value
    return result


def toml_file(path: Path) -> dict[str, Any]:
    """A TOML file's tables; an unparsable file raises ValueError naming it."""
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: {err}") from None


def environment(model: type[BaseModel], prefix: str, names: Mapping[str, str]) -> dict[str, Any]:
    """`LAKEGRAPH_KEY` and `LAKEGRAPH_SECTION__KEY` variables (any case) as nested keys. A list,
    table or section value is JSON (`LAKEGRAPH_WAREHOUSE__BIGQUERY_DATASETS='["sales"]'`); a whole
    section given as JSON is merged under its keys given one by one."""
    layers = []
    for variable, text in names.items():
        value: Any = text
        path = variable[len(prefix) :].lower().split(NESTING)
        annotation = _annotation(model, path)
        if annotation is None:
            continue  # not a key (LAKEGRAPH_CONFIG); unknown names are refused before this
        if _structured(annotation):
            try:
                value = json.loads(value)
            except ValueError as err:
                raise ValueError(f"environment variable {variable} must be JSON here ({err})") from None
        for part in reversed(path):
            value = {part: value}
        layers.append((len(path), value))
    return merged(*(layer for _, layer in sorted(layers, key=lambda pair: pair[0])))


def variables(prefix: str) -> dict[str, str]:
    """The environment's variables that start with `prefix`, in any case."""
    return {name: value for name, value in os.environ.items() if name.upper().startswith(prefix)}


def _annotation(model: type[BaseModel], path: list[str]) -> Any:
    for depth, part in enumerate(path):
        field = model.model_fields.get(part)
        if field is None:
            return None
        if depth == len(path) - 1:
            return field.annotation
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return None
        model = field.annotation
    return None


def _structured(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (list, dict) or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
