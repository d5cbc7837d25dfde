"""Claim support's cross-encoder, as bench/train_support_model.py trains and measures it: not
part of the package.

The bi-encoder (tasks/support/encoder.py, relevance.py) embeds claim and abstract apart. This
model reads both in one input, "[CLS] claim [SEP] title + the abstract's sentences [SEP]", so each
text's tokens read the other's, then compares the claim's tokens' mean with the passage's as the
bi-encoder compares its two texts, and answers twice: a relevance logit (is this the work the
claim rests on, or a neighbour?) and three stance logits (SUPPORT, CONTRADICT, NOT ENOUGH INFO).

No model trained so far beats the bi-encoder on both of SciFact's AUCs (cited against the
BM25-nearest uncited abstract and against a random one; bench/RESULTS.md, `cross-*`), so claim
support does not run it: this module is what the trainer exports and scores (int8 ONNX, one pair
at a time, as a run would). Its tokenizer is the bi-encoder's (BERT uncased WordPiece over
tasks/support/minilm_vocab.txt), with the pair's second text truncated to MAX_TOKENS.

    stance          when
    supports        P(SUPPORT) >= STANCE_CONFIDENT
    contradicts     P(CONTRADICT) >= STANCE_CONFIDENT
    undetermined    neither (not enough information, or the model is unsure)
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tasks.support.encoder import VOCABULARY
from tasks.support.relevance import sentences, shortlist

MAX_TOKENS = 128
PASSAGE_SENTENCES = 3  # the abstract sentences the model reads: those sharing most of the claim
STANCE_CONFIDENT = 0.5
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
    """The exported model on onnxruntime's CPU build."""

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
