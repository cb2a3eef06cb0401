"""What every embedder offers: a name, a dimension, and unit vectors for a batch of texts."""

from __future__ import annotations

from typing import Protocol


class Embedder(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""
        ...

    def embed_question(self, text: str) -> list[float]:
        """A question's vector, its text cut shorter than a stored text's: it is waited for."""
        ...
