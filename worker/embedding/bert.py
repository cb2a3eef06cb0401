"""A sentence-transformers BERT model (all-MiniLM-L6-v2 and kin) run with numpy alone.

The model folder is the one sentence-transformers itself loads (config.json, model.safetensors,
tokenizer.json, 1_Pooling/config.json); mean pooling and normalisation as its modules.json says.
Running the forward pass in numpy keeps torch (gigabytes) out of a metadata service that embeds
a few thousand short texts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from worker.exceptions import LakegraphError

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# Texts are cut at 128 word pieces, the length all-MiniLM-L6-v2 was trained on: a wide table's
# text past it adds little, and costs twice the time per text (measured on Spider 2.0's catalogues).
MAX_TOKENS = 128
# A question is cut at 64: on Spider 2.0-lite's questions (63 word pieces on average) recall at 5
# and 10 held within a point while the call's p95 fell from 83 to 58 ms (tests/benchmarks/table_retrieval.py).
MAX_QUESTION_TOKENS = 64


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_attention_heads: int
    num_hidden_layers: int
    layer_norm_eps: float
    max_seq_length: int
    pooling: str  # "mean" or "cls"

    @classmethod
    def read(cls, folder: Path) -> BertConfig:
        config = json.loads((folder / "config.json").read_text())
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise LakegraphError(f"{folder}: not a BERT model with GELU activations (model_type {config.get('model_type')!r})")
        sentence = folder / "sentence_bert_config.json"
        max_seq = json.loads(sentence.read_text())["max_seq_length"] if sentence.exists() else 256
        pooling_file = folder / "1_Pooling" / "config.json"
        pooling = json.loads(pooling_file.read_text()) if pooling_file.exists() else {"pooling_mode_mean_tokens": True}
        return cls(
            hidden_size=config["hidden_size"],
            num_attention_heads=config["num_attention_heads"],
            num_hidden_layers=config["num_hidden_layers"],
            layer_norm_eps=config["layer_norm_eps"],
            max_seq_length=min(max_seq, config["max_position_embeddings"]),
            pooling="cls" if pooling.get("pooling_mode_cls_token") else "mean",
        )


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (error below 1.5e-7): numpy has no erf, and scipy is not needed for one."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU that BERT was trained with."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


class BertEmbedder:
    def __init__(self, folder: Path, batch_size: int = 32) -> None:
        missing = [name for name in REQUIRED_FILES if not (folder / name).exists()]
        if missing:
            raise LakegraphError(f"embedding model folder {folder} lacks {', '.join(missing)}")
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.config = BertConfig.read(folder)
        # The encoder's projection weights (its only matrices) are kept transposed and contiguous:
        # `x @ w.T` on a strided view falls off BLAS (7 ms a projection instead of 0.1).
        self.weights = {
            key: np.ascontiguousarray(value.astype(np.float32).T) if key.startswith("encoder.") and value.ndim == 2 else value.astype(np.float32)
            for key, value in load_file(folder / "model.safetensors").items()
        }
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(min(self.config.max_seq_length, MAX_TOKENS))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.question_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.question_tokenizer.enable_truncation(min(self.config.max_seq_length, MAX_QUESTION_TOKENS))
        self.question_tokenizer.no_padding()  # the file's own padding may be fixed-length
        self.batch_size = batch_size
        self.blas = ThreadpoolController()  # found once: looking the libraries up costs 0.3 ms a call
        self.name = f"bert:{folder.name if folder.name != 'model' else folder.parent.name}"
        self.dimensions = self.config.hidden_size

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Batches of texts of like length (sorted by it), so short texts are not padded to a long
        one's size. BLAS on one thread: beside a busy core (the graph answering the same question's
        full-text arms, or loading) its threads spin and cost far more than they give on these
        small matrices (a question: 10 ms instead of 30-250 ms; 256 short texts: 1.9 s instead of
        4.3 s), and the other cores stay free for the graph."""
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        vectors: list[list[float]] = [[] for _ in texts]
        with self.blas.limit(limits=1, user_api="blas"):
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                for index, vector in zip(batch, self._embed_batch([texts[index] for index in batch]).tolist(), strict=True):
                    vectors[index] = vector
        return vectors

    def embed_question(self, text: str) -> list[float]:
        with self.blas.limit(limits=1, user_api="blas"):
            return self._pooled(self.question_tokenizer.encode_batch([text]))[0].tolist()

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._pooled(self.tokenizer.encode_batch(texts))

    def _pooled(self, encodings: list) -> np.ndarray:
        ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
        mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.float32)
        hidden = self._encode(ids, mask)
        if self.config.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pooled = (hidden * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def _encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, cfg = self.weights, self.config
        positions = np.arange(ids.shape[1])
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], cfg.layer_norm_eps)
        heads, size = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
        attention_bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(cfg.num_hidden_layers):
            p = f"encoder.layer.{layer}."

            def project(name: str, value: np.ndarray, p: str = p) -> np.ndarray:
                flat = value.reshape(-1, value.shape[-1]) @ w[f"{p}{name}.weight"] + w[f"{p}{name}.bias"]
                return flat.reshape(*value.shape[:-1], flat.shape[-1])

            def split(value: np.ndarray) -> np.ndarray:
                return value.reshape(value.shape[0], value.shape[1], heads, size).transpose(0, 2, 1, 3)

            q, k, v = (split(project(f"attention.self.{name}", x)) for name in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + attention_bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(x.shape)
            x = _layer_norm(
                x + project("attention.output.dense", context),
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
                cfg.layer_norm_eps,
            )
            inner = _gelu(project("intermediate.dense", x))
            x = _layer_norm(x + project("output.dense", inner), w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"], cfg.layer_norm_eps)
        return x
