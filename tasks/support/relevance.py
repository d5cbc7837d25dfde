"""Is the cited work about what the claim says? Each claim–citation pair scored by meaning.

The claim, the cited work's title and the EVIDENCE_SENTENCES sentences of its abstract that share
the most of the claim's rare words are embedded with MiniLM (tasks/support/encoder.py); a pair's
`support` is the highest cosine similarity between the claim and any of them, in [0, 1] (a negative
similarity is no support), and the sentence that reaches it is the evidence shown in the report.
Embedding only those sentences is what makes scoring fast (the transformer's cost is per token:
a third of the tokens); on SciFact the AUCs stay as they were with every sentence, and a few more
truly cited abstracts fall below UNRELATED_BELOW (bench/RESULTS.md, "Claim support").

    label        when                               counts against the claim
    related      support >= UNRELATED_BELOW          no
    unrelated    support <  UNRELATED_BELOW          yes: the cited work is about something else
    no abstract  the registry gave no abstract       no (undecided, like `unverified`)

What the score does NOT mean: similarity is topic, not entailment. A cited abstract that
contradicts the claim is as similar as one that supports it (bench/support.py measures both);
telling them apart is the optional judge's (tasks/registries/judge.py): no stance model trained
so far met its goals (bench/train_stance_model.py). `UNRELATED_BELOW` is set on SciFact's train
claims so that a truly cited abstract is called unrelated in at most ~5% of pairs
(bench/support.py prints the rate).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

UNRELATED_BELOW = 0.35
MIN_WORDS = 4  # shorter fragments ("Methods.", "n = 12") match anything a little
EVIDENCE_SENTENCES = 2
Label = Literal["related", "unrelated", "no abstract"]

# A sentence ends at . ! ? followed by space and a capital, digit or bracket; "e.g." and "Fig."
# rarely precede a capital in abstracts, and a wrong split only costs a shorter sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
_MARKUP = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[a-z0-9]+")


class Embeds(Protocol):
    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


@dataclass(frozen=True)
class Pair:
    """One claim and what the registry holds of one work it cites."""

    claim: str
    title: str | None
    abstract: str | None


@dataclass(frozen=True)
class Support:
    support: float | None
    label: Label
    evidence: str | None  # the abstract sentence (or title) closest to the claim


def sentences(abstract: str) -> list[str]:
    """The abstract's sentences of MIN_WORDS words or more, markup removed."""
    text = " ".join(_MARKUP.sub(" ", abstract).split())
    return [s for s in _SENTENCE_END.split(text) if len(s.split()) >= MIN_WORDS]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") else word  # "cells" is "cell"


@cache
def _word_costs() -> tuple[dict[str, float], float]:
    """English words by frequency (wordninja's Wikipedia list, loaded once): the log of a word's
    rank, "the" 2.5, "protein" 10.6; and the rarest word's."""
    from wordninja import DEFAULT_LANGUAGE_MODEL

    costs: dict[str, float] = DEFAULT_LANGUAGE_MODEL._wordcost
    return costs, max(costs.values())


def _rarity(word: str) -> float:
    """How much sharing `word` says; a word not in the list (a gene name) counts as the rarest."""
    costs, rarest = _word_costs()
    return costs.get(word, rarest)


@lru_cache(maxsize=4096)
def _claim_words(claim: str) -> dict[str, float]:
    return {_stem(word): _rarity(word) for word in _WORD.findall(claim.lower())}


def overlap(claim: str, text: str) -> float:
    """The share of the claim's words, weighted by rarity, that `text` uses too: 0 to 1."""
    weights = _claim_words(claim)
    shared = {_stem(word) for word in _WORD.findall(text.lower())}
    total = sum(weights.values())
    return sum(weights[w] for w in shared if w in weights) / total if total else 0.0


def shortlist(claim: str, candidates: Sequence[str], keep: int) -> list[str]:
    """The `keep` candidates with the most overlap with the claim (ties: the earlier sentence),
    in their order in the abstract."""
    ranked = sorted(range(len(candidates)), key=lambda i: -overlap(claim, candidates[i]))
    return [candidates[i] for i in sorted(ranked[:keep])]


def score_pairs(pairs: Sequence[Pair], model: Embeds) -> list[Support]:
    """One Support per pair, in order. Every distinct text is embedded once, in one batch."""
    candidates = [
        ([pair.title] if pair.title else [])
        + shortlist(pair.claim, sentences(pair.abstract), EVIDENCE_SENTENCES)
        if pair.abstract
        else []
        for pair in pairs
    ]
    texts = sorted({p.claim for p in pairs} | {t for c in candidates for t in c})
    vectors = dict(zip(texts, model.embed(texts), strict=True))
    out: list[Support] = []
    for pair, texts_of_work in zip(pairs, candidates, strict=True):
        if not texts_of_work:
            out.append(Support(None, "no abstract", None))
            continue
        similarities = np.array([vectors[pair.claim] @ vectors[t] for t in texts_of_work])
        best = int(similarities.argmax())
        score = round(max(float(similarities[best]), 0.0), 4)  # opposite directions: no support
        label: Label = "related" if score >= UNRELATED_BELOW else "unrelated"
        out.append(Support(score, label, texts_of_work[best]))
    return out
