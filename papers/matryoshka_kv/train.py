"""MatryoshkaKV experiment: ``python -m papers.matryoshka_kv.train [scale=...] [key=value ...]``.

Per seed: pre-train the toy teacher (or load a local checkpoint), collect post-RoPE key and
value statistics and build the PCA projections (brief Sec. 3.2). Per (method, seed): PCA as
is, or projections trained from PCA with a random rank per head each step (Matryoshka, Sec.
3.4) or at one fixed rank (ablation), through the shared loop with the base model frozen.
Then KL(teacher || compressed) and cross-entropy at every uniform rank, and for MatryoshkaKV
the greedy heterogeneous rank search at the configured budget (Sec. 3.5).

``scale=real`` (configs/matryoshka_kv/real.yaml): the teacher is the pretrained SmolLM2-135M
(``shared.pretrained``), the text the pinned docutils documentation cut into fixed-length
segments: PCA statistics and projection training on the train documents, KL and next-token
top-1 accuracy (relative to the full cache) on the test documents.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from papers.matryoshka_kv.claims import LABELS, REAL_LABELS, REAL_PLOT, SEARCHED
from papers.matryoshka_kv.config import Config, CorpusConfig, rank_problems
from papers.matryoshka_kv.data import load_texts, make_batch, make_lexicon
from papers.matryoshka_kv.method import (
    KVProjections,
    budget,
    distillation_loss,
    greedy_rank_search,
    pca_basis,
    sample_ranks,
    uniform_ranks,
)
from papers.matryoshka_kv.model import (
    attach_projections,
    build_toy_model,
    collect_kv_statistics,
    last_hidden_states,
    load_local_model,
    set_ranks,
)
from shared import assets, pretrained
from shared.config import REAL_SCALE
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_model_folders, missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

METHODS = ("pca", "matryoshka", "fixed_rank", SEARCHED)
# scale=real: the pinned pretrained LM and text corpus the entry point verifies before any work
REAL_ASSETS = (pretrained.MODEL_ASSET, pretrained.CORPUS_ASSET)


class Corpus:
    """Batches of token ids; each is a pure function of its name (resume-safe).

    Toy: fresh sequences of the synthetic corpus. Paper scale: ``seq_len`` chunks of local
    texts (``corpus.train_path``; ``corpus.pca_path`` for names starting with "pca")
    tokenised with the checkpoint's own tokenizer. Real (``corpus.asset``): every document of
    the pinned corpus cut into whole ``seq_len`` segments (none crosses a document, the tail
    shorter than ``seq_len`` is dropped), tokenised with the pinned model's tokenizer; PCA
    and training read the train documents' segments, evaluation ("eval" names) the test
    documents'. PCA and evaluation take fixed segments spread evenly over their pool
    (:meth:`spread`), training draws at random.
    """

    def __init__(self, cfg: Config, tokenizer=None):
        self.cfg = cfg.corpus
        self.lexicon = make_lexicon(cfg.corpus)
        self.chunks: dict[str, torch.Tensor] = {}
        self.real = cfg.corpus.asset is not None or cfg.corpus.path is not None
        if self.real:
            if tokenizer is None:
                raise ValueError("the real corpus needs the real model's tokenizer")
            documents = real_documents(cfg.corpus)
            train, test = (real_segments(d, tokenizer, self.cfg.seq_len) for d in documents)
            self.chunks = {"train": train, "pca": train, "test": test}
        elif cfg.model.path is not None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(cfg.model.path, local_files_only=True)
            for kind, path in (("train", self.cfg.train_path), ("pca", self.cfg.pca_path)):
                if path is None:
                    raise ValueError(f"paper scale needs corpus.{kind}_path (a local json file)")
                ids = [t for text in load_texts(path) for t in tokenizer(text)["input_ids"]]
                n = len(ids) // self.cfg.seq_len
                if n == 0:
                    raise ValueError(f"{path} holds fewer than seq_len={self.cfg.seq_len} tokens")
                self.chunks[kind] = torch.tensor(ids[: n * self.cfg.seq_len]).view(n, -1)

    def pool(self, name: str) -> torch.Tensor:
        """The segments a batch name reads: "pca..." the PCA pool, "eval..." the test pool
        (real only; paper scale evaluates on training chunks), anything else training."""
        if name.startswith("pca"):
            return self.chunks["pca"]
        if name.startswith("eval") and "test" in self.chunks:
            return self.chunks["test"]
        return self.chunks["train"]

    def batch(self, batch_size: int, name: str) -> torch.Tensor:
        rng = random.Random(name)
        if not self.chunks:
            return make_batch(self.lexicon, self.cfg, batch_size, rng)  # (B, T)
        pool = self.pool(name)
        return pool[[rng.randrange(len(pool)) for _ in range(batch_size)]]

    def spread(self, n_sequences: int, batch_size: int, name: str) -> list[torch.Tensor]:
        """``n_sequences`` distinct segments evenly spaced over the named pool (every one when
        it holds fewer), in batches of ``batch_size``: fixed sets that cover every document."""
        pool = self.pool(name)
        n = min(n_sequences, len(pool))
        picked = pool[np.linspace(0, len(pool) - 1, n).round().astype(int)]
        return list(torch.split(picked, batch_size))

    def batches(self, n_sequences: int, batch_size: int, name: str) -> list[torch.Tensor]:
        if self.real:
            return self.spread(n_sequences, batch_size, name)
        sizes = [min(batch_size, n_sequences - i) for i in range(0, n_sequences, batch_size)]
        return [self.batch(n, f"{name}-{i}") for i, n in enumerate(sizes)]


def real_documents(corpus: CorpusConfig) -> tuple[dict[str, str], dict[str, str]]:
    """``(train, test)`` documents, ``{name: text}``: the pinned corpus's split, or a user's
    folder (``corpus.path``) split by :func:`split_documents`."""
    if corpus.path is None:
        return pretrained.corpus("train"), pretrained.corpus("test")
    return split_documents(pretrained.corpus_folder(corpus.path), corpus.test_share)


def split_documents(
    documents: dict[str, str], test_share: float
) -> tuple[dict[str, str], dict[str, str]]:
    """Whole documents, never one cut across the two: the last ``test_share`` of them in name
    order (at least one) test, the rest (at least one) train."""
    names = sorted(documents)
    n_test = max(1, round(test_share * len(names)))
    if len(names) - n_test < 1:
        raise ValueError(
            f"{len(names)} text file(s): needs at least 2 (one to train on, one to test on; "
            f"corpus.test_share={test_share} of them test)"
        )
    train, test = names[:-n_test], names[-n_test:]
    return {n: documents[n] for n in train}, {n: documents[n] for n in test}


def real_segments(documents: dict[str, str], tokenizer, seq_len: int) -> torch.Tensor:
    """(N, seq_len) token ids: each document tokenised alone and cut into whole segments (the
    shorter tail dropped), documents in table order. One-line error when none is long enough."""
    if seq_len < 2:
        raise ValueError(f"corpus.seq_len must be >= 2 (next-token targets), got {seq_len}")
    segments = []
    for text in documents.values():
        ids = tokenizer(text)["input_ids"]
        segments += [ids[i : i + seq_len] for i in range(0, len(ids) - seq_len + 1, seq_len)]
    if not segments:
        raise ValueError(
            f"no document of {sorted(documents)} holds corpus.seq_len={seq_len} tokens"
        )
    return torch.tensor(segments, dtype=torch.long)


def load_real_model(cfg: Config):
    """Real: (the pinned pretrained LM, or your checkpoint at ``model.path``, frozen and in
    eval mode, its tokenizer); else (None, None). Loaded once per run: the teacher of every
    seed, the corpus's tokenizer."""
    if cfg.model.asset is None:
        return None, None
    model, tokenizer = pretrained.load_model(cfg.model.path)  # None: the pinned SmolLM2
    return model.requires_grad_(False), tokenizer


def pretrain_teacher(
    cfg: Config, corpus: Corpus, seed: int, run_dir: Path, accelerator, logger, real_model=None
):
    """The frozen teacher: the real pretrained LM, a local checkpoint, or the toy Llama
    trained on the corpus."""
    if real_model is not None:
        return real_model
    if cfg.model.path is not None:
        return load_local_model(cfg.model.path).eval().requires_grad_(False)  # frozen teacher
    seed_everything(seed)
    model = build_toy_model(cfg.model)
    p = cfg.pretrain
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=p.lr, weight_decay=p.weight_decay, foreach=True
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, p.warmup_steps, p.steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=p.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=lambda step: corpus.batch(p.batch_size, f"teacher-{seed}-{step}"),
        compute_loss=lambda m, ids: (m(input_ids=ids, labels=ids, use_cache=False).loss, {}),
        after_step=lambda step, batch, aux: schedule.step(),
        stateful={"schedule": schedule},
        logger=logger,
        tags={"method": "teacher", "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"teacher s{seed}",
    )
    accelerator.free_memory()
    teacher = accelerator.unwrap_model(model).eval()
    for parameter in teacher.parameters():
        parameter.requires_grad_(False)
    return teacher


def pca_projections(teacher, corpus: Corpus, cfg: Config, seed: int) -> KVProjections:
    """PCA of post-RoPE keys and of values per layer and head (brief Sec. 3.2)."""
    e = cfg.eval
    batches = corpus.batches(e.pca_sequences, e.batch_size, f"pca-{seed}")
    mean_k, second_k, mean_v, second_v = collect_kv_statistics(teacher, batches)
    basis_k, _ = pca_basis(mean_k, second_k)
    basis_v, _ = pca_basis(mean_v, second_v)
    return KVProjections.from_bases(basis_k, basis_v, mean_k, mean_v)


def train_projections(
    method: str,
    teacher,
    projections: KVProjections,
    corpus: Corpus,
    cfg: Config,
    seed: int,
    run_dir: Path,
    accelerator,
    logger,
    at_step=None,
):
    """Matryoshka (or fixed-rank) training of the projections, base model frozen (Sec. 3.4).

    ``at_step(step, student)``, when given, runs after every optimizer step (``diagnose.py``
    evaluates the student part-way through one run with it)."""
    q = cfg.projection
    student = attach_projections(copy.deepcopy(teacher), projections)
    n_layers, n_heads = projections.n_layers, projections.n_heads
    optimizer = torch.optim.AdamW(
        projections.parameters(), lr=q.lr, weight_decay=q.weight_decay, foreach=True
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, q.warmup_steps, q.steps)
    projections, optimizer = accelerator.prepare(projections, optimizer)

    def next_batch(step: int):
        ids = corpus.batch(q.batch_size, f"projection-{seed}-{step}")
        if method == "matryoshka":  # a fresh rank for every layer, head, K and V
            generator = torch.Generator().manual_seed(hash((seed, step)) % 2**31)
            ranks = sample_ranks(q.rank_schedule, n_layers, n_heads, generator)
        else:
            ranks = uniform_ranks(n_layers, n_heads, q.fixed_rank)
        return ids, ranks

    def compute_loss(_projections, batch):
        ids, ranks = batch
        set_ranks(student, *ranks)
        with torch.no_grad():
            teacher_logits = teacher(input_ids=ids, use_cache=False).logits  # (B, T, V)
        student_logits = student(input_ids=ids, use_cache=False).logits
        loss, parts = distillation_loss(
            student_logits, teacher_logits, ids, q.kl_weight, q.ce_weight, q.temperature
        )
        return loss, {k: float(v) for k, v in parts.items()}

    def after_step(step: int) -> None:
        schedule.step()
        if at_step is not None:
            at_step(step, student)

    fit(
        model=projections,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=q.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: after_step(step),
        stateful={"schedule": schedule},
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    accelerator.free_memory()
    return student


@torch.no_grad()
def divergence(teacher, student, batches: list[torch.Tensor]) -> tuple[float, float]:
    """Per-token KL(teacher || student) and the student's next-token cross-entropy."""
    totals = Totals()
    for ids in batches:
        log_p = torch.log_softmax(teacher(input_ids=ids, use_cache=False).logits.double(), -1)
        totals.add(log_p, student, ids)
    return totals.kl(), totals.ce()


class Totals:
    """Running sums over evaluation batches of one student configuration: KL(teacher ||
    student) summed over the vocabulary and averaged over tokens (brief Sec. 3.4), the
    student's next-token cross-entropy and top-1 accuracy over the predicted positions."""

    def __init__(self):
        self.kl_sum = self.ce_sum = 0.0
        self.correct = self.tokens = self.predicted = 0

    def add(self, log_p: torch.Tensor, student, ids: torch.Tensor) -> None:
        log_q = torch.log_softmax(student(input_ids=ids, use_cache=False).logits.double(), -1)
        self.kl_sum += float((log_p.exp() * (log_p - log_q)).sum())
        self.tokens += ids.numel()
        self.ce_sum += float(-log_q[:, :-1].gather(-1, ids[:, 1:, None]).sum())
        self.correct += top1_correct(log_q, ids)
        self.predicted += ids[:, 1:].numel()

    def kl(self) -> float:
        return self.kl_sum / self.tokens

    def ce(self) -> float:
        return self.ce_sum / self.predicted

    def accuracy(self) -> float:
        return self.correct / self.predicted


def top1_correct(log_probs: torch.Tensor, ids: torch.Tensor) -> int:
    """How many next tokens ``ids[:, 1:]`` are the arg-max of ``log_probs[:, :-1]``."""
    return int((log_probs[:, :-1].argmax(-1) == ids[:, 1:]).sum())


@torch.no_grad()
def evaluate_ranks(
    teacher, student, n_layers, n_heads, ranks, batches, accuracy: bool = False
) -> dict[str, float]:
    """KL and cross-entropy (``kl_r{r}``, ``ce_r{r}``) at every uniform rank r, the teacher run
    once per batch; with ``accuracy`` also the next-token top-1 accuracy ``acc_r{r}``, the full
    cache's ``acc_full`` (the unmodified teacher) and their ratio ``acc_ratio_r{r}``."""
    totals = {r: Totals() for r in ranks}
    teacher_correct = predicted = 0
    for ids in batches:
        log_p = torch.log_softmax(teacher(input_ids=ids, use_cache=False).logits.double(), -1)
        teacher_correct += top1_correct(log_p, ids)
        predicted += ids[:, 1:].numel()
        for r in ranks:
            set_ranks(student, *uniform_ranks(n_layers, n_heads, r))
            totals[r].add(log_p, student, ids)
    metrics = {}
    for r in ranks:
        metrics[f"kl_r{r}"], metrics[f"ce_r{r}"] = totals[r].kl(), totals[r].ce()
    head_dim = max(ranks)
    metrics[f"abs_kl_r{head_dim}"] = abs(metrics[f"kl_r{head_dim}"])
    if accuracy:
        full = metrics["acc_full"] = teacher_correct / predicted
        for r in ranks:
            metrics[f"acc_r{r}"] = totals[r].accuracy()
            # undefined when the full cache predicts nothing right (an untrained model)
            metrics[f"acc_ratio_r{r}"] = metrics[f"acc_r{r}"] / full if full else math.nan
    return metrics


def search_ranks(teacher, student, n_layers, n_heads, head_dim, corpus, cfg, seed, batches):
    """Greedy heterogeneous ranks at the configured budget (brief Sec. 3.5), then their KL."""
    s = cfg.rank_search
    calibration = corpus.batch(s.calibration_sequences, f"search-{seed}")

    def hidden(rank_key, rank_value):
        set_ranks(student, rank_key, rank_value)
        return last_hidden_states(student, calibration)

    rank_key, rank_value = greedy_rank_search(
        hidden, n_layers, n_heads, head_dim, s.budget, s.step, s.updates_per_round
    )
    set_ranks(student, rank_key, rank_value)
    kl, ce = divergence(teacher, student, batches)
    uniform_rank = round(s.budget * head_dim)
    return {
        f"kl_r{uniform_rank}": kl,
        f"ce_r{uniform_rank}": ce,
        "budget": budget(rank_key, rank_value, head_dim),
        "key_budget": float(rank_key.float().mean() / head_dim),
        "value_budget": float(rank_value.float().mean() / head_dim),
    }


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads a local checkpoint and two local json files (nothing is downloaded):
    name each one that is unset or absent, before any work."""
    hint = " (a local path; nothing is downloaded, see configs/matryoshka_kv/paper.yaml)"
    return missing_model_folders({"model.path": cfg.model.path}, hint) + missing_paths(
        {
            "corpus.pca_path": cfg.corpus.pca_path,
            "corpus.train_path": cfg.corpus.train_path,
        },
        hint,
    )


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    out_dir = Path(out_dir)
    real_model, tokenizer = load_real_model(cfg)
    corpus = Corpus(cfg, tokenizer)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    per_seed: dict[int, tuple] = {}
    students: dict[int, torch.nn.Module] = {}  # seed -> the MatryoshkaKV-trained student

    def prepared(seed: int):
        if seed not in per_seed:
            teacher = pretrain_teacher(
                cfg,
                corpus,
                seed,
                out_dir / "runs" / f"teacher-s{seed}",
                accelerator,
                logger,
                real_model,
            )
            per_seed[seed] = (teacher, pca_projections(teacher, corpus, cfg, seed))
        return per_seed[seed]

    def trained_student(method: str, seed: int, run_dir: Path):
        teacher, pca = prepared(seed)
        return train_projections(
            method, teacher, copy.deepcopy(pca), corpus, cfg, seed, run_dir, accelerator, logger
        ).eval()

    def matryoshka_student(seed: int):
        """The MatryoshkaKV run's student, trained once per seed (or resumed from its finished
        checkpoint) and shared by the ``matryoshka`` row and the search."""
        if seed not in students:
            run_dir = out_dir / "runs" / f"matryoshka-s{seed}"
            students[seed] = trained_student("matryoshka", seed, run_dir)
        return students[seed]

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        teacher, pca = prepared(seed)
        n_layers, n_heads, d = pca.n_layers, pca.n_heads, pca.head_dim
        batches = corpus.batches(cfg.eval.n_sequences, cfg.eval.batch_size, f"eval-{seed}")
        if method == SEARCHED:  # greedy heterogeneous ranks of the MatryoshkaKV student
            student = matryoshka_student(seed)
            return RunOutput(
                metrics=search_ranks(
                    teacher, student, n_layers, n_heads, d, corpus, cfg, seed, batches
                )
            )
        if method == "pca":
            student = attach_projections(copy.deepcopy(teacher), copy.deepcopy(pca)).eval()
        elif method == "matryoshka":
            student = matryoshka_student(seed)
        else:
            student = trained_student(method, seed, run_dir)
        metrics = evaluate_ranks(
            teacher, student, n_layers, n_heads, cfg.eval.ranks, batches, cfg.eval.accuracy
        )
        curves = {"kl_by_rank": [metrics[f"kl_r{r}"] for r in cfg.eval.ranks]}
        if cfg.eval.accuracy:
            curves["acc_ratio_by_rank"] = [metrics[f"acc_ratio_r{r}"] for r in cfg.eval.ranks]
        return RunOutput(metrics=metrics, curves=curves)

    results, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    if accelerator.is_main_process:
        if cfg.scale == REAL_SCALE:
            plot_real(curves, cfg, out_dir / REAL_PLOT)
        else:
            plot(curves, cfg, out_dir / "kl_by_budget.png")
    return results


def plot(curves, cfg: Config, path: Path) -> None:
    """KL(teacher || compressed) against the cache budget r / d, per method."""
    d = max(cfg.eval.ranks)
    budgets = np.asarray(cfg.eval.ranks) / d
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for method, c in curves.items():
        if "kl_by_rank" not in c:  # the searched row is one budget, not a curve
            continue
        values = np.asarray(c["kl_by_rank"])  # (S, R)
        mean = values.mean(0)
        (line,) = ax.plot(budgets, np.maximum(mean, 1e-8), marker="o", label=LABELS.get(method))
        ax.fill_between(
            budgets,
            np.maximum(mean - values.std(0), 1e-8),
            mean + values.std(0),
            color=line.get_color(),
            alpha=0.2,
        )
    ax.set_yscale("log")
    ax.set_xlabel("cache budget r / d (uniform ranks)")
    ax.set_ylabel("KL(teacher || compressed) per token (nats)")
    ax.set_title(f"MatryoshkaKV toy: quality vs budget, seeds {list(cfg.seeds)}")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_real(curves, cfg: Config, path: Path) -> None:
    """Real model: KL(full || compressed) and next-token accuracy relative to the full cache
    against the cache budget r / d, PCA and trained projections (one seed: no band)."""
    d = max(cfg.eval.ranks)
    budgets = np.asarray(cfg.eval.ranks) / d
    fig, (ax_kl, ax_acc) = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    for method, c in curves.items():
        label = REAL_LABELS.get(method, method)
        kl = np.asarray(c["kl_by_rank"]).mean(0)
        ax_kl.plot(budgets, np.maximum(kl, 1e-8), marker="o", label=label)
        ax_acc.plot(budgets, np.asarray(c["acc_ratio_by_rank"]).mean(0), marker="o", label=label)
    ax_kl.set_yscale("log")
    ax_kl.set_ylabel("KL(full cache || compressed) per token (nats)")
    ax_acc.axhline(1.0, color="0.5", lw=0.8)
    ax_acc.set_ylabel("next-token top-1 accuracy / full cache's")
    for ax in (ax_kl, ax_acc):
        ax.set_xlabel("cache budget r / d (uniform ranks)")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=8)
    model = Path(cfg.model.path).name if cfg.model.path else "SmolLM2-135M"
    fig.suptitle(f"MatryoshkaKV on {model}, test documents, seeds {list(cfg.seeds)}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def real_assets(cfg: Config) -> tuple[str, ...]:
    """SmolLM2 unless ``model.path`` names your checkpoint; the docutils documents unless
    ``corpus.path`` names your text."""
    own = (cfg.model.path, cfg.corpus.path)
    return tuple(asset for asset, path in zip(REAL_ASSETS, own, strict=True) if path is None)


def user_files(cfg: Config) -> dict[str, str]:
    """Your checkpoint's config and weights and your text files, recorded with their sha256."""
    return pretrained.own_files({"model.path": cfg.model.path}, {"corpus.path": cfg.corpus.path})


def model_problems(config: dict, cfg: Config, key: str) -> list[str]:
    """The run against the model's ``config.json`` (``key`` names where it came from): whole
    query groups per key / value head, every rank within the head size ``d`` (the projections
    are d x d per layer and KV head), segments within the position window."""
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    if not heads or not hidden:
        return [f"{key}: config.json names no num_attention_heads / hidden_size"]
    kv_heads = config.get("num_key_value_heads") or heads
    if heads % kv_heads:
        return [
            f"{key}: num_key_value_heads={kv_heads} does not divide num_attention_heads={heads} "
            "(grouped-query attention shares each key / value head among whole query groups)"
        ]
    head_dim = config.get("head_dim") or hidden // heads
    problems = rank_problems(cfg, head_dim, f"{key}'s head size")
    window = config.get("max_position_embeddings")
    if window is not None and cfg.corpus.seq_len > window:
        problems.append(
            f"corpus.seq_len={cfg.corpus.seq_len}: above {key}'s window ({window} tokens)"
        )
    return problems


def corpus_problems(cfg: Config) -> list[str]:
    """Your text (``corpus.path``): UTF-8 ``.txt`` files, at least one to train on and one to
    test on, each split holding a whole ``corpus.seq_len`` segment in the model's tokens."""
    from transformers import AutoTokenizer

    try:
        train, test = real_documents(cfg.corpus)
    except ValueError as err:
        return [f"corpus.path: {err}"]
    folder = cfg.model.path or pretrained.model_folder()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    problems = []
    for split, documents in (("train", train), ("test", test)):
        try:
            real_segments(documents, tokenizer, cfg.corpus.seq_len)
        except ValueError as err:
            problems.append(f"corpus.path ({split} files): {err}")
    return problems


def real_preflight(cfg: Config) -> list[str]:
    """scale=real reads the pinned model and corpus (``REAL_ASSETS``, verified by the entry
    point) or your own checkpoint (``model.path``) and text (``corpus.path``): the settings,
    the checkpoint's architecture and sizes against the ranks, and the text, before any
    weights load."""
    problems = []
    if cfg.model.asset != pretrained.MODEL_ASSET:
        problems.append(
            f"model.asset={cfg.model.asset!r}: scale=real runs {pretrained.MODEL_ASSET}"
        )
    if cfg.corpus.asset != pretrained.CORPUS_ASSET:
        problems.append(
            f"corpus.asset={cfg.corpus.asset!r}: scale=real reads {pretrained.CORPUS_ASSET}"
        )
    if not cfg.eval.accuracy:
        problems.append("eval.accuracy=false: the real claims read the accuracy ratios")
    model_found = cfg.model.path is not None or not assets.missing([pretrained.MODEL_ASSET])
    if cfg.model.path is not None:
        config, found = pretrained.model_config("model.path", cfg.model.path)
        problems += found or model_problems(config, cfg, "model.path")
    elif model_found:
        config = json.loads((pretrained.model_folder() / "config.json").read_text())
        problems += model_problems(config, cfg, pretrained.MODEL_ASSET)
    if cfg.corpus.path is not None and model_found and not problems:
        problems += corpus_problems(cfg)  # tokenised by the (checked) model's tokenizer
    return problems


if __name__ == "__main__":
    main("matryoshka_kv")
