"""Claim support's second pass: a cross-encoder that reads the claim and the cited work together.

The bi-encoder (encoder.py, relevance.py) embeds claim and abstract apart: it tells a cited
abstract from a random one but hardly from an uncited one on the same topic, and not at all
whether the abstract supports or contradicts the claim. This model reads both in one input,
"[CLS] claim [SEP] title + the abstract's sentences [SEP]", so each text's tokens read the
other's, then compares the claim's tokens' mean with the passage's as the bi-encoder compares its
two texts, and answers twice: a relevance logit (is this the work the claim rests on, or a
neighbour?) and three stance logits (SUPPORT, CONTRADICT, NOT ENOUGH INFO). It scores only the
works a claim cites, so its cost is one forward pass per citation.

The model is all-MiniLM-L6-v2's weights fine-tuned on SciFact's train claims by
bench/train_support_model.py (which says how, and prints the held-out figures), exported to ONNX
with int8 matrix products (support_cross_int8.onnx beside this module, ~23 MB, shipped with the
package and checked against MODEL_SHA256 before use). No model has been good enough to ship yet
(bench/RESULTS.md): without the file, claims.py skips this pass. Its tokenizer is the bi-encoder's
(BERT uncased WordPiece over minilm_vocab.txt), with the pair's second text truncated to
MAX_TOKENS. Pairs run one at a time: int8 products scale activations by the whole input, so a
batch would make a pair's scores depend on the pairs beside it.

    stance          when
    supports        P(SUPPORT) >= STANCE_CONFIDENT
    contradicts     P(CONTRADICT) >= STANCE_CONFIDENT
    undetermined    neither (not enough information, or the model is unsure)
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tasks.errors import MissingExtra
from tasks.support.encoder import VOCABULARY, SupportUnavailable, available
from tasks.support.relevance import sentences, shortlist

MODEL = Path(__file__).with_name("support_cross_int8.onnx")
MODEL_SHA256 = ""  # the shipped file's, set when a trained model is committed beside this module
MAX_TOKENS = 128
PASSAGE_SENTENCES = 3  # the abstract sentences the model reads: those sharing most of the claim
STANCE_CONFIDENT = 0.5
# Relevance under which a cited work is `unrelated`: to be set with the shipped model from the
# 5th percentile of its training folds' cited pairs (bench/train_support_model.py prints it).
UNRELATED_BELOW = 0.5
STANCES = ("SUPPORT", "CONTRADICT", "NOT ENOUGH INFO")
Stance = Literal["supports", "contradicts", "undetermined"]


def passage(title: str | None, chosen: Sequence[str]) -> str:
    """The text the model reads beside the claim: the title, then the chosen sentences."""
    return " ".join([title or "", *chosen]).strip()


def evidence(claim: str, abstract: str) -> list[str]:
    """The abstract's PASSAGE_SENTENCES sentences sharing most of the claim's rare words, in
    their order (relevance.shortlist), as the model saw them in training."""
    return shortlist(claim, sentences(abstract), PASSAGE_SENTENCES)


def tokenizer() -> Any:
    """BERT uncased WordPiece over the model's vocabulary, truncating the passage only."""
    from tokenizers import BertWordPieceTokenizer

    tokens = BertWordPieceTokenizer(
        str(VOCABULARY),
        lowercase=True,
        strip_accents=None,
        clean_text=True,
        handle_chinese_chars=True,
    )
    tokens.enable_truncation(MAX_TOKENS, strategy="only_second")
    return tokens


@dataclass(frozen=True)
class Judged:
    relevance: float  # P(the claim rests on this work), 0 to 1
    stance: Stance
    probabilities: tuple[float, float, float]  # SUPPORT, CONTRADICT, NOT ENOUGH INFO


def judged(logits: Sequence[float]) -> Judged:
    """The model's four logits read as relevance and stance."""
    relevance = float(1 / (1 + np.exp(-logits[0])))
    raw = np.asarray(logits[1:4], np.float64)
    probabilities = np.exp(raw - raw.max())
    probabilities /= probabilities.sum()
    stance: Stance = "undetermined"
    if probabilities[0] >= STANCE_CONFIDENT:
        stance = "supports"
    elif probabilities[1] >= STANCE_CONFIDENT:
        stance = "contradicts"
    p = tuple(round(float(x), 4) for x in probabilities)
    return Judged(round(relevance, 4), stance, (p[0], p[1], p[2]))


class CrossEncoder:
    """Loaded once per process (`cross_encoder()`); `judge` is thread-safe."""

    def __init__(self, onnx_file: Path) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = tokenizer()

    def logits(self, claim: str, text: str) -> list[float]:
        encoding = self.tokenizer.encode(claim, text)
        feed = {
            "input_ids": np.array([encoding.ids], np.int64),
            "attention_mask": np.array([encoding.attention_mask], np.int64),
            "token_type_ids": np.array([encoding.type_ids], np.int64),
        }
        return [float(x) for x in self.session.run(None, feed)[0][0]]

    def judge(self, claim: str, title: str | None, abstract: str) -> Judged:
        return judged(self.logits(claim, passage(title, evidence(claim, abstract))))


def shipped() -> bool:
    """The model file is in the package (the trained model is committed beside this module)."""
    return MODEL.is_file()


def _checked(onnx_file: Path) -> Path:
    if not available() or not onnx_file.is_file():
        raise MissingExtra("support", "claim support")
    if hashlib.sha256(onnx_file.read_bytes()).hexdigest() != MODEL_SHA256:
        raise SupportUnavailable(f"{onnx_file} is not the model claim support was measured with")
    return onnx_file


@cache
def cross_encoder() -> CrossEncoder:
    """The model, loaded once per process."""
    return CrossEncoder(_checked(MODEL))
