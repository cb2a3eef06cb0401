"""A sentence-transformers BERT model (all-MiniLM-L6-v2 and kin) run with ONNX Runtime, no torch.

The model folder is the one sentence-transformers itself loads (config.json, model.safetensors,
tokenizer.json, 1_Pooling/config.json); mean pooling and normalisation as its modules.json says,
in the graph onnx_graph.py writes from the weights. Keeping torch (gigabytes) out of a metadata
service that embeds a few thousand short texts, and a question in about 12 ms.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worker.embedding.onnx_graph import ATTENTION_MASK, EMBEDDING, GRAPH_VERSION, INPUT_IDS, bert_graph
from worker.exceptions import LakegraphError

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# Texts are cut at 128 word pieces, the length all-MiniLM-L6-v2 was trained on: a wide table's
# text past it adds little, and costs twice the time per text (measured on Spider 2.0's catalogues).
MAX_TOKENS = 128
# A question is cut at 48: on Spider 2.0-lite's questions (63 word pieces on average) recall held
# within about two points of 64's on every engine (32 lost 3 to 6 at 3 and 5) while the call's
# p95 over HTTP fell under 50 ms (tests/benchmarks/table_retrieval.py); the full-text arms read
# every word of it.
MAX_QUESTION_TOKENS = 48


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


class BertEmbedder:
    """`built`: a folder where the model's ONNX graph is kept once written (writing it imports the
    onnx package: 1.6 s; loading it again 0.2 s)."""

    def __init__(self, folder: Path, batch_size: int = 32, built: Path | None = None) -> None:
        missing = [name for name in REQUIRED_FILES if not (folder / name).exists()]
        if missing:
            raise LakegraphError(f"embedding model folder {folder} lacks {', '.join(missing)}")
        import onnxruntime
        from tokenizers import Tokenizer

        self.config = BertConfig.read(folder)
        options = onnxruntime.SessionOptions()
        # One core, and no spinning threads: beside a busy core (the graph answering the same
        # question's full-text arms, or loading) more threads cost far more than they give on
        # these small matrices, and the other cores stay free for the graph.
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(self._graph(folder, built), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(min(self.config.max_seq_length, MAX_TOKENS))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.question_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.question_tokenizer.enable_truncation(min(self.config.max_seq_length, MAX_QUESTION_TOKENS))
        self.question_tokenizer.no_padding()  # the file's own padding may be fixed-length
        self.batch_size = batch_size
        self.name = f"bert:{folder.name if folder.name != 'model' else folder.parent.name}"
        self.dimensions = self.config.hidden_size

    def _graph(self, folder: Path, built: Path | None) -> bytes:
        """The model as ONNX: read from `built` when written there for these weights, else written."""
        weights = (folder / "model.safetensors").stat()
        key = f"{folder.resolve()}:{weights.st_size}:{weights.st_mtime_ns}:{GRAPH_VERSION}"
        kept = built / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx" if built is not None else None
        if kept is not None and kept.exists():
            return kept.read_bytes()
        from safetensors.numpy import load_file

        graph = bert_graph(load_file(folder / "model.safetensors"), self.config)
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(f".{os.getpid()}.partial")
            partial.write_bytes(graph)
            partial.replace(kept)  # whole or absent, whoever else writes it at the same time
        return graph

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Batches of texts of like length (sorted by it), so short texts are not padded to a long one's size."""
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        vectors: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            for index, vector in zip(batch, self._pooled(self.tokenizer.encode_batch([texts[index] for index in batch])).tolist(), strict=True):
                vectors[index] = vector
        return vectors

    def embed_question(self, text: str) -> list[float]:
        return self._pooled(self.question_tokenizer.encode_batch([text]))[0].tolist()

    def _pooled(self, encodings: list) -> np.ndarray:
        ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
        mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.float32)
        return self.session.run([EMBEDDING], {INPUT_IDS: ids, ATTENTION_MASK: mask})[0]
