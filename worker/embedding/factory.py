"""The configured embedder, or None: with `embeddings.provider = "none"` everything works without vectors."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from worker.embedding.base import Embedder
from worker.embedding.bert import BertConfig, BertEmbedder
from worker.settings import Settings

# all-MiniLM-L6-v2 in float16, shipped inside the package (its NOTICE.md says whence and how).
SHIPPED_MODEL = Path(__file__).resolve().parent / "all-MiniLM-L6-v2"


def model_folder(settings: Settings) -> Path:
    if settings.embeddings.model_dir:
        return Path(settings.embeddings.model_dir).expanduser().resolve()
    return SHIPPED_MODEL


def dimensions(settings: Settings) -> int | None:
    """The vector size, read from the model's config without loading it (None: no embedder)."""
    if settings.embeddings.provider == "none":
        return None
    return BertConfig.read(model_folder(settings)).hidden_size


def embedder(settings: Settings) -> Embedder | None:
    if settings.embeddings.provider == "none":
        return None
    return _load(model_folder(settings), settings.embeddings.batch_size, settings.cache_path / "embedding")


@lru_cache(maxsize=2)
def _load(folder: Path, batch_size: int, built: Path) -> BertEmbedder:
    return BertEmbedder(folder, batch_size, built)
