"""MatryoshkaKV experiment: ``python -m papers.matryoshka_kv.train [scale=...] [key=value ...]``.

Per seed: pre-train the toy teacher (or load a local checkpoint), collect post-RoPE key and
value statistics and build the PCA projections (brief Sec. 3.2). Per (method, seed): PCA as
is, or projections trained from PCA with a random rank per head each step (Matryoshka, Sec.
3.4) or at one fixed rank (ablation), through the shared loop with the base model frozen.
Then KL(teacher || compressed) and cross-entropy at every uniform rank, and for MatryoshkaKV
the greedy heterogeneous rank search at the configured budget (Sec. 3.5).
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from papers.matryoshka_kv.claims import LABELS, SEARCHED
from papers.matryoshka_kv.config import Config
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
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

METHODS = ("pca", "matryoshka", "fixed_rank", SEARCHED)


class Corpus:
    """Batches of token ids; each is a pure function of its name (resume-safe).

    Toy: fresh sequences of the synthetic corpus. Paper scale: ``seq_len`` chunks of local
    texts (``corpus.train_path``; ``corpus.pca_path`` for names starting with "pca")
    tokenised with the checkpoint's own tokenizer.
    """

    def __init__(self, cfg: Config):
        self.cfg = cfg.corpus
        self.lexicon = make_lexicon(cfg.corpus)
        self.chunks: dict[str, torch.Tensor] = {}
        if cfg.model.path is not None:
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

    def batch(self, batch_size: int, name: str) -> torch.Tensor:
        rng = random.Random(name)
        if not self.chunks:
            return make_batch(self.lexicon, self.cfg, batch_size, rng)  # (B, T)
        pool = self.chunks["pca" if name.startswith("pca") else "train"]
        return pool[[rng.randrange(len(pool)) for _ in range(batch_size)]]

    def batches(self, n_sequences: int, batch_size: int, name: str) -> list[torch.Tensor]:
        sizes = [min(batch_size, n_sequences - i) for i in range(0, n_sequences, batch_size)]
        return [self.batch(n, f"{name}-{i}") for i, n in enumerate(sizes)]


def pretrain_teacher(cfg: Config, corpus: Corpus, seed: int, run_dir: Path, accelerator, logger):
    """The frozen teacher: a local checkpoint, or the toy Llama trained on the corpus."""
    if cfg.model.path is not None:
        return load_local_model(cfg.model.path).eval()
    seed_everything(seed)
    model = build_toy_model(cfg.model)
    p = cfg.pretrain
    optimizer = torch.optim.AdamW(model.parameters(), lr=p.lr, weight_decay=p.weight_decay)
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
):
    """Matryoshka (or fixed-rank) training of the projections, base model frozen (Sec. 3.4)."""
    q = cfg.projection
    student = attach_projections(copy.deepcopy(teacher), projections)
    n_layers, n_heads = projections.n_layers, projections.n_heads
    optimizer = torch.optim.AdamW(projections.parameters(), lr=q.lr, weight_decay=q.weight_decay)
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

    fit(
        model=projections,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=q.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: schedule.step(),
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
    kl_sum = ce_sum = 0.0
    tokens = predicted = 0
    for ids in batches:
        log_p = torch.log_softmax(teacher(input_ids=ids, use_cache=False).logits.double(), -1)
        log_q = torch.log_softmax(student(input_ids=ids, use_cache=False).logits.double(), -1)
        kl_sum += float((log_p.exp() * (log_p - log_q)).sum())
        tokens += ids.numel()
        ce_sum += float(-log_q[:, :-1].gather(-1, ids[:, 1:, None]).sum())
        predicted += ids[:, 1:].numel()
    return kl_sum / tokens, ce_sum / predicted


def evaluate_ranks(teacher, student, n_layers, n_heads, ranks, batches) -> dict[str, float]:
    metrics = {}
    for r in ranks:
        set_ranks(student, *uniform_ranks(n_layers, n_heads, r))
        kl, ce = divergence(teacher, student, batches)
        metrics[f"kl_r{r}"], metrics[f"ce_r{r}"] = kl, ce
    head_dim = max(ranks)
    metrics[f"abs_kl_r{head_dim}"] = abs(metrics[f"kl_r{head_dim}"])
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
    return missing_paths(
        {
            "model.path": cfg.model.path,
            "corpus.pca_path": cfg.corpus.pca_path,
            "corpus.train_path": cfg.corpus.train_path,
        },
        hint,
    )


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    out_dir = Path(out_dir)
    corpus = Corpus(cfg)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    per_seed: dict[int, tuple] = {}
    students: dict[int, torch.nn.Module] = {}  # seed -> the MatryoshkaKV-trained student

    def prepared(seed: int):
        if seed not in per_seed:
            teacher = pretrain_teacher(
                cfg, corpus, seed, out_dir / "runs" / f"teacher-s{seed}", accelerator, logger
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
        metrics = evaluate_ranks(teacher, student, n_layers, n_heads, cfg.eval.ranks, batches)
        return RunOutput(
            metrics=metrics, curves={"kl_by_rank": [metrics[f"kl_r{r}"] for r in cfg.eval.ranks]}
        )

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


if __name__ == "__main__":
    main("matryoshka_kv")
