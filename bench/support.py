"""Claim support on SciFact: can the embedding score tell a cited abstract from an uncited one?

    uv run python -m bench.support [--claims N] [--offset K]   (needs ../shared and the extra)

SciFact's train claims (809) each cite one or more abstracts of its 5,183-abstract corpus,
labelled SUPPORT, CONTRADICT, or cited without evidence. For every claim we score:
    cited       each abstract it cites (truly cited: should be `related`)
    random      one abstract it does not cite, drawn at random (seeded)
    hard        the uncited abstract BM25 ranks nearest to the claim (same words, other work)
and print ROC AUC of cited vs random and cited vs hard, the share of cited abstracts called
`unrelated` (goal <= 5%), the mean support per SciFact label (what the score cannot tell apart),
the same with titles only (as when a registry gives no abstract), and the time to score
1,000 pairs from scratch (model loaded, nothing cached; goal <= 30 s), wall and CPU.
Goals: AUC >= 0.95 vs random, >= 0.85 vs hard.

Also a lexical signal, what BM25 picks hard negatives by: the rarity-weighted share of the claim's
words the abstract uses (`overlap`), alone and mixed into the support score. The evaluated set is
the first 200 claims; `--offset 200` runs on the rest, where any weight would be fit.

With the optional judge configured (CITEAUDIT_LLM_URL, CITEAUDIT_LLM_MODEL, CITEAUDIT_LLM_KEY),
also the judge's 3-way accuracy on the cited pairs: SciFact's SUPPORT, CONTRADICT, and cited
without evidence (NOT ENOUGH INFO); pairs labelled both ways are left out, and a pair the judge
gave no verdict counts as wrong. Without it, the benchmark says the judge is off.
"""

import argparse
import json
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from models.audit import Verdict
from tasks.lookup.checker import Checker
from tasks.registries import read_settings
from tasks.support.encoder import encoder
from tasks.support.relevance import UNRELATED_BELOW, Pair, overlap, score_pairs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "claims" / "scifact"
_WORD = re.compile(r"[a-z0-9]+")


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pos = np.asarray(positives)[:, None]
    neg = np.asarray(negatives)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=0, help="first N claims only (0: all)")
    parser.add_argument("--offset", type=int, default=0, help="skip the first K claims")
    args = parser.parse_args()
    corpus = {
        doc["doc_id"]: doc
        for doc in map(json.loads, (DATA / "corpus.jsonl").read_text().splitlines())
    }
    claims = [json.loads(line) for line in (DATA / "claims_train.jsonl").read_text().splitlines()]
    claims = claims[args.offset : args.offset + args.claims if args.claims else None]
    doc_ids = list(corpus)
    bm25 = BM25Okapi(
        [_words(corpus[d]["title"] + " " + " ".join(corpus[d]["abstract"])) for d in doc_ids]
    )
    rng = random.Random(13)

    def pair(claim: str, doc_id: int) -> Pair:
        doc = corpus[doc_id]
        return Pair(claim, doc["title"], " ".join(doc["abstract"]))

    kinds: list[tuple[str, str]] = []  # (kind, SciFact label) per pair
    pairs: list[Pair] = []
    for claim in claims:
        cites = set(claim["cited_doc_ids"])
        for doc_id in cites:
            labels = {e["label"] for e in claim["evidence"].get(str(doc_id), [])}
            kinds.append(("cited", "/".join(sorted(labels)) or "no evidence"))
            pairs.append(pair(claim["claim"], doc_id))
        kinds.append(("random", ""))
        pairs.append(pair(claim["claim"], rng.choice([d for d in doc_ids if d not in cites])))
        ranked = np.argsort(-bm25.get_scores(_words(claim["claim"])))
        hard = next(doc_ids[i] for i in ranked if doc_ids[i] not in cites)
        kinds.append(("hard", ""))
        pairs.append(pair(claim["claim"], hard))

    loading = time.perf_counter()
    model = encoder()
    print(
        f"model loaded (and quantized) in {time.perf_counter() - loading:.1f} s, once per process"
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    scores = [s.support or 0.0 for s in score_pairs(pairs, model)]
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    titles = [Pair(p.claim, p.title, p.title) for p in pairs]  # as if no abstract were given
    title_scores = [s.support or 0.0 for s in score_pairs(titles, model)]

    by_kind: dict[str, list[float]] = {"cited": [], "random": [], "hard": []}
    by_label: dict[str, list[float]] = {}
    for (kind, label), score in zip(kinds, scores, strict=True):
        by_kind[kind].append(score)
        if kind == "cited":
            by_label.setdefault(label, []).append(score)
    cited = by_kind["cited"]
    false_unrelated = sum(s < UNRELATED_BELOW for s in cited) / len(cited)
    caught_random = sum(s < UNRELATED_BELOW for s in by_kind["random"]) / len(by_kind["random"])
    caught_hard = sum(s < UNRELATED_BELOW for s in by_kind["hard"]) / len(by_kind["hard"])
    print(f"SciFact train: {len(claims)} claims, {len(cited)} cited pairs")
    print(f"  `unrelated` below {UNRELATED_BELOW}")
    print(f"  AUC cited vs random     {auc(cited, by_kind['random']):.3f}   (goal >= 0.95)")
    print(f"  AUC cited vs hard (BM25) {auc(cited, by_kind['hard']):.3f}   (goal >= 0.85)")
    print(f"  cited called unrelated  {false_unrelated:.3f}   (goal <= 0.05)")
    print(
        f"  random called unrelated {caught_random:.3f};  hard called unrelated {caught_hard:.3f}"
    )
    print(f"  5th percentile of cited support {np.percentile(cited, 5):.3f}")
    for label, values in sorted(by_label.items()):
        print(f"  mean support, cited {label:<20} {np.mean(values):.3f}  (n={len(values)})")
    cited_titles, random_titles = (
        [t for (kind, _), t in zip(kinds, title_scores, strict=True) if kind == wanted]
        for wanted in ("cited", "random")
    )
    missed = sum(t < UNRELATED_BELOW for t in cited_titles) / len(cited_titles)
    print("  title only (no abstract):")
    print(f"    AUC cited vs random    {auc(cited_titles, random_titles):.3f}")
    print(f"    cited called unrelated {missed:.3f}")
    lexical = [overlap(p.claim, f"{p.title} {p.abstract}") for p in pairs]
    print("  lexical overlap (what BM25 picked the hard negatives by):")
    for weight in (1.0, 0.5, 0.25, 0.1):
        mixed = [weight * w + (1 - weight) * s for w, s in zip(lexical, scores, strict=True)]
        cited_mix, random_mix, hard_mix = (
            [m for (kind, _), m in zip(kinds, mixed, strict=True) if kind == wanted]
            for wanted in ("cited", "random", "hard")
        )
        print(
            f"    {weight:.2f} overlap + {1 - weight:.2f} support: AUC vs random "
            f"{auc(cited_mix, random_mix):.3f}, vs hard {auc(cited_mix, hard_mix):.3f}"
        )
    per_1000, cpu_per_1000 = (s * 1000 / len(pairs) for s in (seconds, cpu_seconds))
    print(
        f"  scored {len(pairs)} pairs from scratch in {seconds:.1f} s: {per_1000:.1f} s per "
        f"1,000 (CPU {cpu_per_1000:.1f} s per 1,000)"
    )
    print("  (goal <= 30 s per 1,000)")
    gold = {"SUPPORT": "SUPPORT", "CONTRADICT": "CONTRADICT", "no evidence": "NOT ENOUGH INFO"}
    judged = [
        (pair, gold[label])
        for pair, (kind, label) in zip(pairs, kinds, strict=True)
        if kind == "cited" and label in gold
    ]
    judge_accuracy(judged)


def judge_accuracy(judged: Sequence[tuple[Pair, str]]) -> None:
    """The optional judge's verdicts against SciFact's labels (see the module docstring)."""
    with Checker(read_settings()) as checker:
        judge = checker.registries.judge if checker.registries else None
        if judge is None:
            print("  judge: off (set CITEAUDIT_LLM_URL and CITEAUDIT_LLM_MODEL to measure it)")
            return
        started = time.perf_counter()
        verdicts: list[Verdict | None] = judge.verdicts([p for p, _ in judged])
        seconds = time.perf_counter() - started
    right = sum(v == label for v, (_, label) in zip(verdicts, judged, strict=True))
    print(f"  judge: {len(judged)} labelled cited pairs in {seconds:.0f} s")
    print(f"    3-way accuracy {right / len(judged):.3f}  (no verdict: {verdicts.count(None)})")
    for wanted in ("SUPPORT", "CONTRADICT", "NOT ENOUGH INFO"):
        got = [v for v, (_, label) in zip(verdicts, judged, strict=True) if label == wanted]
        if got:
            share = got.count(wanted) / len(got)
            print(f"    recall {wanted:<16} {share:.3f}  (n={len(got)})")


if __name__ == "__main__":
    main()
