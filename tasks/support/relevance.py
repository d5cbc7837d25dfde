"""Is the cited work about what the claim says? Each claim–citation pair scored by meaning.

The claim and each sentence of the cited work's abstract (and its title) are embedded with
MiniLM (tasks/support/encoder.py); a pair's `support` is the highest cosine similarity between the
claim and any of them, in [0, 1] (a negative similarity is no support), and the sentence that
reaches it is the evidence shown in the report.

    label        when                               counts against the claim
    related      support >= UNRELATED_BELOW          no
    unrelated    support <  UNRELATED_BELOW          yes: the cited work is about something else
    no abstract  the registry gave no abstract       no (undecided, like `unverified`)

What the score does NOT mean: similarity is topic, not entailment. A cited abstract that
contradicts the claim is as similar as one that supports it (bench/support.py measures both);
telling them apart needs the optional judge (tasks/registries/judge.py). `UNRELATED_BELOW` is set
on SciFact's train claims so that a truly cited abstract is called unrelated in at most ~5% of
pairs (bench/support.py prints the rate).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

UNRELATED_BELOW = 0.35
MIN_WORDS = 4  # shorter fragments ("Methods.", "n = 12") match anything a little
Label = Literal["related", "unrelated", "no abstract"]

# A sentence ends at . ! ? followed by space and a capital, digit or bracket; "e.g." and "Fig."
# rarely precede a capital in abstracts, and a wrong split only costs a shorter sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
_MARKUP = re.compile(r"<[^>]+>")


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


def score_pairs(pairs: Sequence[Pair], model: Embeds) -> list[Support]:
    """One Support per pair, in order. Every distinct text is embedded once, in one batch."""
    candidates = [
        ([pair.title] if pair.title else []) + sentences(pair.abstract) if pair.abstract else []
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
