"""AdamCB experiment: ``python -m papers.adamcb.train [scale=smoke|toy|paper] [key=value ...]``.

Trains one network per (method, seed) with the shared loop and compares the final training
loss. Each step of every method is the same four moves (brief Sec. 3.1):

1. the method's sampler draws a batch ``J_t`` and its importance weights (``next_batch``);
2. the importance-weighted loss gives the unbiased gradient ``g_hat`` by autograd, and
   the per-sample gradient norms are measured at the same ``theta_t`` (``compute_loss``);
3. the method's Adam variant steps (``shared.loop.fit`` calls ``optimizer.step``);
4. the sampler learns from the K norms (``after_step``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from torch.nn import functional as F

from papers.adamcb.claims import LABELS
from papers.adamcb.config import Config, check_eval_interval
from papers.adamcb.data import (
    ASSET_SETS,
    Split,
    dataset_folder,
    load_asset_data,
    load_own_data,
    load_paper_data,
    make_toy_data,
)
from papers.adamcb.method import (
    AdamBSSampler,
    AdamCBSampler,
    CorrectedAdamBSSampler,
    Draw,
    Sampler,
    UniformSampler,
    importance_weighted_loss,
    per_sample_grad_norms,
)
from papers.adamcb.model import build_model
from papers.adamcb.optimizers import AdamFamily
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.images import IMAGE_SOURCES, image_files
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plot_curves
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

# method -> (sampler, Adam variant), as the official main.py pairs them (brief Sec. 3.2, 4).
METHODS: dict[str, tuple[str, str]] = {
    "adam": ("uniform", "adam"),
    "amsgrad": ("uniform", "amsgrad"),
    "adamx": ("uniform", "adamx"),
    "adambs": ("adambs", "adamx"),
    "adambs_corrected": ("adambs_corrected", "adamx"),
    "adamcb": ("adamcb", "adamx"),
    # Ablation of issue 51, not a paper baseline: AdamCB with its gradient feedback removed
    # (every normalised norm set to 0), so its weights follow the play counts only.
    "adamcb_no_feedback": ("adamcb_no_feedback", "adamx"),
    # Diagnostic, not a paper baseline: K distinct uniform examples (brief Sec. 5 caveat).
    "adamx_uniform_wor": ("uniform_without_replacement", "adamx"),
}


def make_sampler(kind: str, n: int, cfg: Config, seed: int):
    """The batch sampler of a method (its own numpy stream, seeded by the run's seed)."""
    s = cfg.sampler
    if kind == "uniform":
        return UniformSampler(n, s.batch_size, seed, replace=True)
    if kind == "uniform_without_replacement":
        return UniformSampler(n, s.batch_size, seed, replace=False)
    if kind in ("adamcb", "adamcb_no_feedback"):
        return AdamCBSampler(
            n,
            s.batch_size,
            seed,
            gamma=s.gamma,
            alpha_p=s.alpha_p,
            feedback=kind == "adamcb",
        )
    if kind == "adambs_corrected":
        return CorrectedAdamBSSampler(n, s.batch_size, seed, gamma=s.gamma, alpha_p=s.alpha_p)
    if kind == "adambs":
        return AdamBSSampler(
            n,
            s.batch_size,
            seed,
            gamma=s.gamma,
            alpha_p=s.adambs_alpha_p,
            exp_clip=s.adambs_exp_clip,
        )
    raise ValueError(f"unknown sampler kind {kind!r}")


# The real rung (configs/adamcb/real.yaml) reads Fashion-MNIST from this pinned asset;
# shared/entry.py checks it is fetched and verified before any work.
REAL_ASSETS = ("fashion_mnist",)


def preflight(cfg: Config) -> list[str]:
    """What a paper-scale run lacks before it starts (``shared/preflight.py``): ``data.root``
    must be set and hold the chosen data set's folder (``data.dataset_folder``), or, with
    ``data.source=asset``, the data set must be one that an asset ships."""
    d = cfg.data  # names and sources are checked by Config.validate, at start
    if d.name == "digits" or d.source in IMAGE_SOURCES:  # bundled; a user's: data_preflight
        return []
    if d.source == "asset":
        if d.name not in ASSET_SETS:
            return [f"data.source=asset ships only {sorted(ASSET_SETS)}, not data.name={d.name}"]
        return []  # the asset itself is checked by shared/entry.py (REAL_ASSETS)
    layout = "torchvision's layout, see papers/adamcb/data.py; Nothing is downloaded"
    if d.root is None or str(d.root) == "":
        return [f"data.root is not set: pass data.root=/path/to/folder holding {d.name} ({layout})"]
    folder = dataset_folder(d.name, d.root)
    if not folder.is_dir():
        return [f"{folder} does not exist: copy {d.name} there or fix data.root ({layout})"]
    return []


def real_assets(cfg: Config) -> tuple[str, ...]:
    """Fashion-MNIST's asset, unless a user's own image set replaces it."""
    return () if cfg.data.source in IMAGE_SOURCES else REAL_ASSETS


def user_files(cfg: Config) -> dict[str, str]:
    """A user's image files (data.source idx / npz), recorded with their sha256."""
    d = cfg.data
    if d.source not in IMAGE_SOURCES:
        return {}
    return {f"data.path ({f.name})": str(f) for f in image_files(d.source, d.path)}


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before any work: a user's image set is read and checked (each problem
    naming the file and the array), and its training images counted against the batch."""
    d = cfg.data
    if d.source not in IMAGE_SOURCES:
        return []
    try:
        split = load_own_data(d.source, d.path, d.test_fraction, d.n_train, d.subset_seed)
    except ValueError as err:
        return [f"data.path: {err}"]
    n, K = len(split.y_train), cfg.sampler.batch_size
    if n < K:
        return [f"data.path={d.path}: {n} training images, fewer than sampler.batch_size={K}"]
    return []


def real_preflight(cfg: Config) -> list[str]:
    """The real rung's own checks (beside its assets'): Fashion-MNIST from the asset, or a
    user's own image set (checked by ``data_preflight``)."""
    if cfg.data.source in IMAGE_SOURCES:
        return []
    problems = preflight(cfg)
    if cfg.data.source != "asset" or cfg.data.name not in ASSET_SETS:
        problems.append(
            f"scale=real reads a pinned asset: needs data.source=asset and data.name in "
            f"{sorted(ASSET_SETS)}, got data.source={cfg.data.source}, data.name={cfg.data.name}"
        )
    return problems


def load_data(cfg: Config) -> Split:
    d = cfg.data
    if d.source in IMAGE_SOURCES:
        return load_own_data(d.source, d.path, d.test_fraction, d.n_train, d.subset_seed)
    if d.name == "digits":
        return make_toy_data(d.n_train, d.subset_seed)
    if d.source == "asset":
        return load_asset_data(d.name, d.mean, d.std, d.n_train, d.subset_seed)
    return load_paper_data(d.name, d.root, d.mean, d.std, d.n_train, d.subset_seed)


@dataclass
class Batch:
    draw: Draw  # the whole draw (all processes draw the same one)
    x: torch.Tensor  # (K / P, ...) this process's share of the drawn examples
    y: torch.Tensor  # (K / P,)
    weights: torch.Tensor  # (K / P,) importance weights 1 / (n p_bar_j)


def cross_entropy(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 4096
) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` on (x, y), in chunks."""
    loss_sum, correct = 0.0, 0
    for start in range(0, len(y), chunk):
        logits = model(x[start : start + chunk])
        loss_sum += F.cross_entropy(logits, y[start : start + chunk], reduction="sum").item()
        correct += (logits.argmax(dim=1) == y[start : start + chunk]).sum().item()
    return loss_sum / len(y), correct / len(y)


def train_one(
    method: str,
    seed: int,
    run_dir: Path,
    cfg: Config,
    data: Split,
    accelerator: Accelerator,
    logger: MetricsLogger,
    sampler: Sampler | None = None,
) -> RunOutput:
    """Train one network with ``method`` from seed ``seed``; returns its metrics and curve.

    ``sampler`` replaces the method's own (``make_sampler``) when given: diagnose.py passes
    one that records what the bandit saw."""
    device = accelerator.device
    sampler_kind, variant = METHODS[method]
    n, K = len(data.y_train), cfg.sampler.batch_size
    world, rank = accelerator.num_processes, accelerator.process_index
    if K % world:
        raise ValueError(f"sampler.batch_size={K} must split evenly over {world} processes")
    steps_per_epoch = n // K
    if steps_per_epoch < 1:
        raise ValueError(f"sampler.batch_size={K} exceeds the {n} training examples")

    seed_everything(seed)  # the network's default init, as the official set_seed + model()
    model = build_model(
        cfg.model.name,
        tuple(data.x_train.shape[1:]),
        data.num_classes,
        cfg.model.hidden,
        cfg.model.conv_blocks,
        cfg.model.first_kernel,
        cfg.model.fc_hidden,
    )
    o = cfg.optim
    optimizer = AdamFamily(
        model.parameters(),
        lr=o.lr,
        betas=(o.beta1, o.beta2),
        eps=o.eps,
        lam=o.lam,
        variant=variant,
    )
    model, optimizer = accelerator.prepare(model, optimizer)
    if sampler is None:
        sampler = make_sampler(sampler_kind, n, cfg, seed)
    learns = sampler_kind not in ("uniform", "uniform_without_replacement")
    # The no-feedback ablation updates its weights but never reads the norms: skip their pass.
    needs_norms = learns and getattr(sampler, "feedback", True)

    x_train, y_train = data.x_train.to(device), data.y_train.to(device)
    eval_train = slice(0, cfg.data.n_eval_train)  # official: the first 1000 training examples
    test_idx = torch.arange(len(data.y_test))
    if cfg.data.n_eval_test is not None:  # a fixed random subset (official: 1000 per eval)
        rng = np.random.default_rng(cfg.data.subset_seed)
        test_idx = torch.from_numpy(rng.choice(len(data.y_test), cfg.data.n_eval_test, False))
    x_test, y_test = data.x_test[test_idx].to(device), data.y_test[test_idx].to(device)
    share = slice(rank * K // world, (rank + 1) * K // world)

    def next_batch(step: int) -> Batch:
        draw = sampler.draw()  # Sec. 3.1 steps 1-2 (or the baseline's sampling)
        idx = torch.from_numpy(draw.indices[share]).to(device)
        weights = torch.tensor(draw.weights[share], dtype=torch.float32, device=device)
        return Batch(draw, x_train[idx], y_train[idx], weights)

    def compute_loss(model: torch.nn.Module, batch: Batch):
        per_example = F.cross_entropy(model(batch.x), batch.y, reduction="none")  # (K/P,)
        loss = importance_weighted_loss(per_example, batch.weights)  # Sec. 3.1 step 3
        aux = {}
        if needs_norms:  # feedback at theta_t, before the optimizer moves it (Sec. 3.1 step 5)
            norms = per_sample_grad_norms(
                accelerator.unwrap_model(model),
                F.cross_entropy,
                batch.x,
                batch.y,
                cfg.sampler.per_sample_chunk,
            )
            aux["grad_norms"] = accelerator.gather(norms)  # (K,) in draw order
        return loss, aux

    def after_step(step: int, batch: Batch, aux: dict) -> None:
        if needs_norms:
            sampler.update(batch.draw, aux["grad_norms"].double().cpu().numpy())
        elif learns:  # the ablation: zeros stand in for the norms it ignores
            sampler.update(batch.draw, np.zeros(batch.draw.indices.shape))

    def evaluate(model: torch.nn.Module) -> dict[str, float]:
        train_ce, train_acc = cross_entropy(model, x_train[eval_train], y_train[eval_train])
        test_ce, test_acc = cross_entropy(model, x_test, y_test)
        return {
            "train_ce": train_ce,
            "train_acc": train_acc,
            "test_ce": test_ce,
            "test_acc": test_acc,
        }

    history = fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=cfg.epochs * steps_per_epoch,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=after_step,
        evaluate=evaluate,
        stateful={"sampler": sampler},
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    accelerator.free_memory()  # drop the accelerator's references to this run's objects
    epochs = [h for h in history if h["step"] % steps_per_epoch == 0]
    final = history[-1]
    return RunOutput(
        metrics={
            "final_train_ce": final["train_ce"],
            # mean of the per-epoch curve after training starts (epochs 1..E)
            "mean_train_ce": float(np.mean([h["train_ce"] for h in epochs[1:]])),
            "final_test_ce": final["test_ce"],
            "final_train_acc": final["train_acc"],
            "final_test_acc": final["test_acc"],
        },
        curves={"train_ce": [h["train_ce"] for h in epochs]},
    )


def run(cfg: Config, out_dir: Path) -> Results:
    """Run every (method, seed) of ``cfg``, plot the curves, return the per-seed metrics."""
    check_names("methods", cfg.methods, METHODS)
    data = load_data(cfg)
    n, K = len(data.y_train), cfg.sampler.batch_size
    if cfg.data.n_train is None:  # the data set's size decides; Config.validate could not know
        check_eval_interval(cfg.loop.eval_every, n // K, f"{n} examples // sampler.batch_size {K}")
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        Path(out_dir) / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    results, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda method, seed, run_dir: train_one(
            method, seed, run_dir, cfg, data, accelerator, logger
        ),
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
    )
    if accelerator.is_main_process:
        train_curves = {m: np.asarray(c["train_ce"]) for m, c in curves.items()}
        plot_curves(
            train_curves,
            np.arange(cfg.epochs + 1),
            Path(out_dir) / "train_ce.png",
            xlabel="epoch",
            ylabel="training cross-entropy",
            title=f"AdamCB vs baselines ({cfg.data.name}, K={cfg.sampler.batch_size}, "
            f"{len(cfg.seeds)} seeds)",
            labels=LABELS,
            logy=True,
        )
    return results


if __name__ == "__main__":
    main("adamcb")
