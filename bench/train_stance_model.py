"""Train claim support's stance head: does a cited abstract SUPPORT or REFUTE the claim, or
neither (NEUTRAL)?

    uv run python -m bench.train_stance_model --part states          # the project's env
    nice -n 19 /tmp/stance-venv/bin/python -m bench.train_stance_model --part cv   # torch's

(`python3 -m venv /tmp/stance-venv && /tmp/stance-venv/bin/pip install torch==2.13.0 numpy`:
torch is for training only, never a project dependency; bench/train_support_model.py says why.)

Data. SciFact's train claims (809; `../shared/data/claims/scifact`) and Check-COVID's (1,068
train, 207 dev, 229 test: composed + extracted; `../shared/data/claims/check_covid`, MIT). A pair
is a claim and one abstract:
    SciFact cited    SUPPORT / REFUTE (SciFact's CONTRADICT) by its evidence, NEUTRAL when cited
                     without evidence (NOT ENOUGH INFO); labelled both ways: left out
    SciFact hard     the uncited abstract BM25 ranks nearest the claim: NEUTRAL
    SciFact random   an uncited abstract drawn at random (seeded): NEUTRAL
    Check-COVID      its claim and its abstract: SUPPORT / REFUTE / NEUTRAL (NOTENOUGHINFO)
The head reads sentences, as the run time does: the abstract's STANCE_SENTENCES sentences that
share most of the claim's rare words (relevance.shortlist, the bi-encoder's own shortlist). A
sentence is labelled with its pair's stance when the data set marks it as evidence (SciFact's
rationale sentences; Check-COVID's PRIMARY ones; its SUPPLEMENTARY ones are left out of
training) and NEUTRAL otherwise; in training, a cited pair's evidence sentences are read even
when the shortlist misses them. A pair's stance: the sentence with the largest P(SUPPORT) or
P(REFUTE) decides it, when that probability reaches CALL_AT; else NEUTRAL.

What the head reads (`--part states`, once): each claim's and each sentence's token outputs from
the bi-encoder the package runs (tasks/support/encoder.py: all-MiniLM-L6-v2, int8 ONNX, each text
alone): the run time computes them anyway, so a head over them costs next to nothing per pair.
Two heads (RECIPES): "pooled", an MLP over [u, v, u * v, |u - v|] of the two texts' mean vectors;
"align", an attention head (decomposable attention, ESIM's comparison): each token of one text is
compared with its soft alignment in the other, and the comparisons pooled (mean and max) per side.
Trained with AdamW, classes weighted by inverse frequency, seed SEED.

Selection (`--part cv`): SciFact's 5 folds by claim (train_support_model.folds_of); fold k's head
is trained on the other four folds' pairs and Check-COVID train, scored on fold k's cited pairs
(3 classes: SUPPORT, REFUTE, NEUTRAL = NOT ENOUGH INFO) and on its hard and random ones; the head
trained on all of SciFact and Check-COVID train is scored on Check-COVID dev, and on its test set,
kept apart. Each recipe's epoch counts and CALL_AT get both figures; each run's logits are kept in
WORK/runs as it finishes (a rerun skips what is done; `--only K` runs one fold, or dev, so runs can
go side by side). `--part report` prints them and picks recipe, epochs and CALL_AT by the mean of
SciFact's CV macro-F1 and Check-COVID dev's; `--part test --recipe R --epochs E --call-at P`
prints that head's test figure, once.

Cost: one thread (two threads spin against each other on a loaded machine). What the states
and each run cost, and the figures: bench/RESULTS.md, "Claim support's stance".
"""

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import train_support_model as support

WORK = Path("/tmp/stance-train")
COVID = support.DATA.parent / "check_covid"
SEED = 13
CLASSES = ("SUPPORT", "REFUTE", "NEUTRAL")
NEUTRAL = 2
STANCE_SENTENCES = 3
COVID_LABELS = {"SUPPORT": 0, "REFUTE": 1, "NOTENOUGHINFO": NEUTRAL}
SCIFACT_LABELS = {"SUPPORT": 0, "CONTRADICT": 1, "NOT ENOUGH INFO": NEUTRAL}
BATCH = 32
HEAD_TOKENS = 96  # of each text's token outputs, the align head reads the first (99 % are shorter)
RECIPES: dict[str, dict[str, Any]] = {
    "pooled": {"lr": 1e-3, "epochs": (5, 10, 20), "hidden": 256},
    "align": {"lr": 1e-3, "epochs": (3, 5), "hidden": 128},
}
CALL_AT = (0.3, 0.4, 0.5, 0.6, 0.7)

Pair = dict[str, Any]


# ---- data: claim-abstract pairs, their sentences and labels (the project's env) ----


def _pair(
    source: str,
    split: str,
    claim: str,
    kind: str,
    sentences_: Sequence[str],
    stance: int,
    evidence: Sequence[int],
    skipped: Sequence[int] = (),
) -> Pair:
    """`sentences_`: the abstract's; `evidence`: the indices labelled with `stance`."""
    from tasks.support.relevance import MIN_WORDS, shortlist

    usable = [s for s in sentences_ if len(s.split()) >= MIN_WORDS]
    shown = shortlist(claim, usable, STANCE_SENTENCES)
    marked = {sentences_[i] for i in evidence}
    trained = list(dict.fromkeys(shown + [s for s in usable if s in marked]))
    ignored = {sentences_[i] for i in skipped} - marked
    return {
        "source": source,
        "split": split,
        "claim": claim,
        "kind": kind,
        "stance": stance,
        "shown": shown,
        "trained": [s for s in trained if s not in ignored],
        "labels": [stance if s in marked else NEUTRAL for s in trained if s not in ignored],
    }


def scifact_pairs() -> tuple[list[Pair], list[int]]:
    """SciFact's cited, hard and random pairs (with the claim's fold), and the folds."""
    from rank_bm25 import BM25Okapi

    corpus, claims = support.load()
    fold = support.folds_of(claims)
    doc_ids = list(corpus)
    bm25 = BM25Okapi(
        [
            support._words(corpus[d]["title"] + " " + " ".join(corpus[d]["abstract"]))
            for d in doc_ids
        ]
    )
    rng = random.Random(SEED)
    out: list[Pair] = []
    for index, claim in enumerate(claims):
        text, cites, first = claim["claim"], set(claim["cited_doc_ids"]), len(out)
        for doc_id in claim["cited_doc_ids"]:
            evidence = claim["evidence"].get(str(doc_id), [])
            labels = {e["label"] for e in evidence} or {"NOT ENOUGH INFO"}
            if len(labels) > 1:
                continue
            stance = SCIFACT_LABELS[labels.pop()]
            rationale = sorted({s for e in evidence for s in e["sentences"]})
            out.append(
                _pair(
                    "scifact", "train", text, "cited", corpus[doc_id]["abstract"], stance, rationale
                )
            )
        ranked = np.argsort(-bm25.get_scores(support._words(text)))
        hard = next(doc_ids[i] for i in ranked if doc_ids[i] not in cites)
        drawn = rng.choice([d for d in doc_ids if d not in cites and d != hard])
        for kind, doc_id in (("hard", hard), ("random", drawn)):
            out.append(
                _pair("scifact", "train", text, kind, corpus[doc_id]["abstract"], NEUTRAL, ())
            )
        for pair in out[first:]:
            pair["fold"] = fold[index]
    return out, fold


def covid_pairs() -> list[Pair]:
    corpus = {
        d["cord_id"]: d for d in map(json.loads, (COVID / "corpus.json").read_text().splitlines())
    }
    files = {
        "train": ["covidCheck_train_composed+extracted.json"],
        "dev": ["covidCheck_dev_composed+extracted.json"],
        "test": ["covidCheck_test_composed.json", "covidCheck_test_extracted.json"],
    }
    out = []
    for split, names in files.items():
        for name in names:
            for row in map(json.loads, (COVID / name).read_text().splitlines()):
                stance = COVID_LABELS[row["label"]]
                marked = [e["sent_index"] for e in row["evidence_set"]]
                primary = [e["sent_index"] for e in row["evidence_set"] if e["type"] == "PRIMARY"]
                out.append(
                    _pair(
                        "check_covid",
                        split,
                        row["claim"].strip(),
                        "cited",
                        corpus[row["cord_id"]]["abstract"],
                        stance,
                        primary if stance != NEUTRAL else (),
                        marked if stance != NEUTRAL else (),
                    )
                )
    return out


def states() -> None:
    """Every pair, and the bi-encoder's token outputs of every claim and sentence, written to
    WORK (pairs.json, states.npy of float16 rows, texts.json: each text's first row and count)."""
    from tasks.support import encoder

    started = time.perf_counter()
    scifact, _ = scifact_pairs()
    pairs = scifact + covid_pairs()
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "pairs.json").write_text(json.dumps(pairs))
    texts = sorted(
        {p["claim"] for p in pairs} | {s for p in pairs for s in p["trained"] + p["shown"]}
    )
    print(
        f"{len(pairs)} pairs, {len(texts)} texts ({time.perf_counter() - started:.0f} s)",
        flush=True,
    )
    model = encoder.encoder()
    rows: list[np.ndarray] = []
    where: dict[str, list[int]] = {}
    at = 0
    for n, encoding in enumerate(model.tokenizer.encode_batch(texts)):
        tokens = np.array([encoding.ids], np.int64)
        feed = {
            "input_ids": tokens,
            "attention_mask": np.ones_like(tokens),
            "token_type_ids": np.zeros_like(tokens),
        }
        out = np.asarray(model.session.run(None, feed)[0][0], np.float16)
        where[texts[n]] = [at, len(out)]
        rows.append(out)
        at += len(out)
        if n % 2000 == 0:
            print(f"  {n} texts, {time.perf_counter() - started:.0f} s", flush=True)
    np.save(WORK / "states.npy", np.concatenate(rows))
    (WORK / "texts.json").write_text(json.dumps(where))
    print(f"states: {at} tokens, {time.perf_counter() - started:.0f} s", flush=True)


# ---- the heads (torch's env) ----


class Texts:
    """The texts' token outputs from WORK's states, as tensors: each text's first HEAD_TOKENS
    token outputs, padded, and its mean vector over all of them (the bi-encoder's pooling)."""

    def __init__(self) -> None:
        import torch

        flat = np.load(WORK / "states.npy")
        where = json.loads((WORK / "texts.json").read_text())
        self.index = {text: i for i, text in enumerate(where)}
        padded = np.zeros((len(where), HEAD_TOKENS, flat.shape[1]), np.float16)
        means = np.zeros((len(where), flat.shape[1]), np.float32)
        for i, (start, count) in enumerate(where.values()):
            kept = min(count, HEAD_TOKENS)
            padded[i, :kept] = flat[start : start + kept]
            means[i] = flat[start : start + count].astype(np.float32).mean(0)
        self.padded, self.means = torch.from_numpy(padded), torch.from_numpy(means)
        self.lengths = torch.tensor([min(count, HEAD_TOKENS) for _, count in where.values()])

    def inputs(self, recipe: str, claims: Sequence[str], sentences_: Sequence[str]) -> list[Any]:
        """What `recipe`'s head reads of each claim and sentence."""
        import torch

        out: list[Any] = []
        for texts in (claims, sentences_):
            ids = torch.tensor([self.index[t] for t in texts])
            if recipe == "pooled":
                out.append(self.means[ids])
                continue
            lengths = self.lengths[ids]
            width = int(lengths.max())
            out.append(self.padded[ids, :width].float())
            out.append((torch.arange(width)[None, :] < lengths[:, None]).float())
        return out


def _Head(recipe: str) -> Any:  # noqa: N802 - builds a torch module (torch is imported late)
    import torch

    hidden = RECIPES[recipe]["hidden"]
    width = 384

    def mean(x: Any, mask: Any) -> Any:
        return (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlp = torch.nn.Sequential(
                torch.nn.LayerNorm(4 * width),
                torch.nn.Dropout(0.1),
                torch.nn.Linear(4 * width, hidden),
                torch.nn.GELU(),
                torch.nn.Dropout(0.1),
                torch.nn.Linear(hidden, len(CLASSES)),
            )

        def forward(self, u: Any, v: Any) -> Any:
            return self.mlp(torch.cat([u, v, u * v, (u - v).abs()], -1))

    class Align(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.project = torch.nn.Sequential(
                torch.nn.LayerNorm(width), torch.nn.Linear(width, hidden), torch.nn.GELU()
            )
            self.compare = torch.nn.Sequential(
                torch.nn.Dropout(0.1), torch.nn.Linear(4 * hidden, hidden), torch.nn.GELU()
            )
            self.out = torch.nn.Sequential(
                torch.nn.Dropout(0.1),
                torch.nn.Linear(4 * hidden, hidden),
                torch.nn.GELU(),
                torch.nn.Linear(hidden, len(CLASSES)),
            )

        def side(self, x: Any, aligned: Any, mask: Any) -> Any:
            compared = self.compare(torch.cat([x, aligned, x - aligned, x * aligned], -1))
            masked = compared.masked_fill(mask[..., None] == 0, -1e4)
            return torch.cat([mean(compared, mask), masked.max(1).values], -1)

        def forward(self, a: Any, a_mask: Any, b: Any, b_mask: Any) -> Any:
            x, y = self.project(a), self.project(b)
            scores = x @ y.transpose(1, 2) / hidden**0.5
            to_b = scores.masked_fill(b_mask[:, None, :] == 0, -1e4).softmax(-1)
            to_a = scores.masked_fill(a_mask[:, :, None] == 0, -1e4).softmax(1)
            a_side = self.side(x, to_b @ y, a_mask)
            b_side = self.side(y, to_a.transpose(1, 2) @ x, b_mask)
            return self.out(torch.cat([a_side, b_side], -1))

    return Pooled() if recipe == "pooled" else Align()


def train(
    recipe: str, rows: Sequence[Pair], held: Sequence[Pair], texts: Texts
) -> dict[int, list[list[list[float]]]]:
    """Train `recipe`'s head on `rows`' sentences; after each epoch in its list, the held pairs'
    shown sentences' logits (per pair, per sentence)."""
    import torch

    settings = RECIPES[recipe]
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    examples = [
        (p["claim"], s, label)
        for p in rows
        for s, label in zip(p["trained"], p["labels"], strict=True)
    ]
    counts = np.bincount([e[2] for e in examples], minlength=len(CLASSES))
    weights = torch.tensor(len(examples) / (len(CLASSES) * counts), dtype=torch.float32)
    head = _Head(recipe)
    last = max(settings["epochs"])
    steps = last * ((len(examples) + BATCH - 1) // BATCH)
    optimizer = torch.optim.AdamW(head.parameters(), lr=settings["lr"], weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings["lr"], total_steps=steps, pct_start=0.1, anneal_strategy="linear"
    )
    out: dict[int, list[list[list[float]]]] = {}
    for epoch in range(1, last + 1):
        started = time.perf_counter()
        head.train()
        total = 0.0
        for batch in support.shuffled_batches(examples, rng, BATCH):
            feed = texts.inputs(recipe, [e[0] for e in batch], [e[1] for e in batch])
            loss = torch.nn.functional.cross_entropy(
                head(*feed), torch.tensor([e[2] for e in batch]), weight=weights
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(batch)
        print(
            f"    {recipe} epoch {epoch}: loss {total / len(examples):.4f}, "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )
        if epoch in settings["epochs"]:
            out[epoch] = score(recipe, head, held, texts)
    return out


def score(recipe: str, head: Any, pairs: Sequence[Pair], texts: Texts) -> list[list[list[float]]]:
    import torch

    head.eval()
    flat = [(p["claim"], s) for p in pairs for s in p["shown"]]
    logits: list[list[float]] = []
    with torch.no_grad():
        for i in range(0, len(flat), 256):
            chunk = flat[i : i + 256]
            logits += head(
                *texts.inputs(recipe, [c for c, _ in chunk], [s for _, s in chunk])
            ).tolist()
    out, at = [], 0
    for p in pairs:
        out.append(logits[at : at + len(p["shown"])])
        at += len(p["shown"])
    return out


def called(logits: Sequence[Sequence[float]], call_at: float) -> int:
    """A pair's stance from its sentences' logits: the sentence most sure of SUPPORT or REFUTE
    decides, if that probability reaches `call_at`."""
    if not logits:
        return NEUTRAL
    raw = np.asarray(logits, np.float64)
    p = np.exp(raw - raw.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    sure = p[:, :NEUTRAL]
    row, k = np.unravel_index(int(sure.argmax()), sure.shape)
    return int(k) if sure[row, k] >= call_at else NEUTRAL


def either(logits: Sequence[Sequence[float]]) -> int:
    """SUPPORT or REFUTE, whichever some sentence gives the larger probability (the two-way
    figure reported before, for pairs known to be one of them)."""
    raw = np.asarray(logits, np.float64)
    p = np.exp(raw - raw.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return int(p[:, 1].max() > p[:, 0].max())


def f1(gold: Sequence[int], calls: Sequence[int], classes: int = len(CLASSES)) -> dict[str, float]:
    """F1 of the first `classes` classes and their mean (macro-F1)."""
    out: dict[str, float] = {}
    for k, name in enumerate(CLASSES[:classes]):
        tp = sum(g == k and c == k for g, c in zip(gold, calls, strict=True))
        wrong = sum((g == k) != (c == k) for g, c in zip(gold, calls, strict=True))
        out[name] = 2 * tp / max(1, 2 * tp + wrong)
    out["macro"] = float(np.mean([out[name] for name in CLASSES[:classes]]))
    return out


def _fmt(figure: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in figure.items())


def run_cv(recipes: Sequence[str], threads: int, only: str | None = None) -> None:
    """Per recipe: 5 SciFact folds, then the head trained on all of SciFact on Check-COVID dev;
    each run's logits saved in WORK/runs as it finishes. The last head scores Check-COVID test
    too, kept apart (WORK/runs/RECIPE-test.json) and read only by `--part test`."""
    import torch

    torch.set_num_threads(threads)
    pairs = json.loads((WORK / "pairs.json").read_text())
    texts = Texts()
    covid = {
        split: [p for p in pairs if p["source"] == "check_covid" and p["split"] == split]
        for split in ("train", "dev", "test")
    }
    scifact = [p for p in pairs if p["source"] == "scifact"]
    (WORK / "runs").mkdir(exist_ok=True)
    for recipe in recipes:
        for k in [*map(str, range(support.FOLDS)), "dev"]:
            target = WORK / "runs" / f"{recipe}-{k}.json"
            if target.exists() or only not in (None, k):
                continue
            held = covid["dev"] + covid["test"] if k == "dev" else []
            held = held or [p for p in scifact if str(p["fold"]) == k]
            rest = [p for p in scifact if str(p["fold"]) != k] + covid["train"]
            started = time.perf_counter()
            print(f"{recipe} {k}: train {len(rest)} pairs, score {len(held)}", flush=True)
            logits = train(recipe, rest, held, texts)
            if k == "dev":
                cut = len(covid["dev"])
                _save(WORK / "runs" / f"{recipe}-test.json", held[cut:], logits, slice(cut, None))
                held = held[:cut]
            _save(target, held, logits, slice(0, len(held)))
            print(f"{recipe} {k}: {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    report()


def _save(
    target: Path, held: Sequence[Pair], logits: dict[int, list[list[list[float]]]], part: slice
) -> None:
    saved = {
        "gold": [p["stance"] for p in held],
        "kind": [p["kind"] for p in held],
        "logits": {epoch: rows[part] for epoch, rows in logits.items()},
    }
    target.write_text(json.dumps(saved))


def _figures(
    saved: dict[str, Any], epoch: str, call_at: float, kinds: set[str]
) -> dict[str, float]:
    keep = [i for i, kind in enumerate(saved["kind"]) if kind in kinds]
    return f1(
        [saved["gold"][i] for i in keep],
        [called(saved["logits"][epoch][i], call_at) for i in keep],
    )


def _two_way(saved: dict[str, Any], epoch: str) -> dict[str, float]:
    keep = [
        i
        for i, (kind, gold) in enumerate(zip(saved["kind"], saved["gold"], strict=True))
        if kind == "cited" and gold != NEUTRAL and saved["logits"][epoch][i]
    ]
    return f1(
        [saved["gold"][i] for i in keep], [either(saved["logits"][epoch][i]) for i in keep], 2
    )


def report() -> None:
    """Each recipe, epoch count and CALL_AT: SciFact CV (cited pairs, mean of folds) and
    Check-COVID dev; the choice by their mean macro-F1."""
    best: tuple[float, str, str, float, int] | None = None
    for recipe in RECIPES:
        runs = {
            k: WORK / "runs" / f"{recipe}-{k}.json"
            for k in [*map(str, range(support.FOLDS)), "dev"]
        }
        done = {k: json.loads(f.read_text()) for k, f in runs.items() if f.exists()}
        if not done:
            continue
        folds = [k for k in done if k != "dev"]
        print(f"{recipe}: folds done {folds}, dev {'dev' in done}")
        for epoch in map(str, RECIPES[recipe]["epochs"]):
            two = [_two_way(done[k], epoch) for k in folds]
            if two:
                mean_two = {n: float(np.mean([f[n] for f in two])) for n in two[0]}
                print(f"  epochs {epoch}: SciFact CV, SUPPORT vs REFUTE only: {_fmt(mean_two)}")
            for call_at in CALL_AT:
                cv = [_figures(done[k], epoch, call_at, {"cited"}) for k in folds]
                mean = {n: float(np.mean([f[n] for f in cv])) for n in cv[0]} if cv else {}
                negatives = [_figures(done[k], epoch, call_at, {"hard", "random"}) for k in folds]
                wrongly = float(np.mean([1 - f["NEUTRAL"] for f in negatives])) if negatives else 0
                line = f"  epochs {epoch} call_at {call_at}: SciFact CV {_fmt(mean)}"
                line += f"; uncited called a stance ~{wrongly:.3f}"
                if "dev" in done:
                    dev = _figures(done["dev"], epoch, call_at, {"cited"})
                    line += f"; Check-COVID dev {_fmt(dev)}"
                    if folds:
                        chosen = (mean["macro"] + dev["macro"]) / 2
                        if best is None or chosen > best[0]:
                            best = (chosen, recipe, epoch, call_at, len(folds))
                print(line)
    if best:
        print(
            f"chosen: {best[1]}, {best[2]} epochs, call_at {best[3]} (mean macro {best[0]:.3f}; "
            f"SciFact folds done: {best[4]} of {support.FOLDS})"
        )


def test(recipe: str, epochs: int, call_at: float) -> None:
    """The chosen head (trained on all of SciFact and Check-COVID train) on Check-COVID test."""
    saved = json.loads((WORK / "runs" / f"{recipe}-test.json").read_text())
    figure = _figures(saved, str(epochs), call_at, {"cited"})
    print(f"Check-COVID test ({len(saved['gold'])} pairs): {_fmt(figure)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["states", "cv", "report", "test"], default="cv")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--recipe", action="append", choices=list(RECIPES))
    parser.add_argument("--epochs", type=int, default=0, help="--part test")
    parser.add_argument("--only", help="--part cv: only this run (a fold's number, or dev)")
    parser.add_argument("--call-at", type=float, default=0.5, help="--part test")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.part == "states":
        states()
    if args.part == "cv":
        run_cv(args.recipe or list(RECIPES), args.threads, args.only)
    if args.part == "report":
        report()
    if args.part == "test":
        test(args.recipe[0], args.epochs, args.call_at)
    print(f"wall time {(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
