"""ControlAR experiment: ``python -m papers.controlar.train [scale=smoke|toy|paper] [k=v ...]``.

Toy (brief Sec. 5), per seed: 3000 rectangle images and their edge maps, a k-means "tiny VQ"
(4x4 patches, K = 128, 8x8 = 64 tokens) and 32 test control maps. Per (variant, seed): the
same GPT-2 decoder trained 300 AdamW steps through the shared loop as

* ``cond``: ControlAR conditional decoding (controls added at the predicting positions);
* ``prefill``: the 64 control tokens prefilled before the image tokens (sequence x 2);
* ``none``: no control (the floor),

then teacher-forced test NLL and edge F1 of images sampled with a KV cache for the test
controls (1-pixel tolerance), against the tokenizer oracle (tokenised-then-decoded ground
truth). Training-step times are measured interleaved on one batch, so machine load cancels.
Paper scale (``scale=paper``): LlamaGen's GPT and VQ-16 and a ViT control encoder from local
paths, on a local folder of precomputed codes and control maps (see ``paper.py``).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from papers.controlar.claims import LABELS
from papers.controlar.config import Config
from papers.controlar.data import ToyData, edge_map, make_rectangle_images, make_toy_data
from papers.controlar.method import (
    VARIANTS,
    SamplingSettings,
    generate,
    image_token_loss,
    joint_drop_mask,
    teacher_forced_logits,
)
from papers.controlar.metrics import edge_f1
from papers.controlar.model import ToyControlAR
from papers.controlar.tokenizer import KMeansTokenizer
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.records import Results, read_json, write_json
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng, seed_everything, torch_generator

METHODS = VARIANTS
ORACLE = "oracle"  # the tokenizer ceiling, reported as its own row
STREAM_BATCH, STREAM_DROP, STREAM_SAMPLE, STREAM_TIMING = 1, 2, 3, 4
FIGURE = "samples.png"


# ------------------------------------------------------------------ toy data per seed


@dataclass
class ToySetup:
    """Everything a seed's runs share: images, controls, the tokenizer and the token grids."""

    data: ToyData
    tokenizer: KMeansTokenizer
    train_tokens: torch.Tensor  # (n_train, N) int64
    train_maps: torch.Tensor  # (n_train, H, W) float32 in {0, 1}
    test_tokens: torch.Tensor  # (n_test, N)
    test_maps: torch.Tensor  # (n_test, H, W)
    oracle_f1: float  # edge F1 of the tokenised-then-decoded ground truth


def prepare_toy(cfg: Config, seed: int) -> ToySetup:
    d, t = cfg.data, cfg.tokenizer
    data = make_toy_data(
        seed, d.n_train, d.n_test, d.test_seed_offset, d.image_size, d.edge_threshold
    )
    tokenizer = KMeansTokenizer.fit(
        data.train_images[: t.fit_images], t.patch, t.n_codes, t.iterations, seed
    )
    test_tokens = tokenizer.encode(data.test_images)
    oracle = edge_f1(
        edge_map(tokenizer.decode(test_tokens), d.edge_threshold),
        data.test_controls,
        cfg.sampling.edge_tolerance,
    )
    return ToySetup(
        data=data,
        tokenizer=tokenizer,
        train_tokens=torch.from_numpy(tokenizer.encode(data.train_images)),
        train_maps=torch.from_numpy(data.train_controls.astype(np.float32)),
        test_tokens=torch.from_numpy(test_tokens),
        test_maps=torch.from_numpy(data.test_controls.astype(np.float32)),
        oracle_f1=float(oracle.mean()),
    )


def build_model(cfg: Config, variant: str, seed: int) -> ToyControlAR:
    """The variant's model, seeded; with ``train.init_std`` every Linear/Embedding is drawn
    from N(0, std) (the official init, Sec. 3.5)."""
    seed_everything(seed)
    model = ToyControlAR(cfg.model, variant)
    if cfg.train.init_std is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Linear | torch.nn.Embedding):
                torch.nn.init.normal_(module.weight, std=cfg.train.init_std)
    return model


def make_optimizer(cfg: Config, model: ToyControlAR) -> torch.optim.AdamW:
    """AdamW with the config's settings, for training and for the timed steps alike.

    ``fused=True``: one kernel updates each tensor instead of a dozen elementwise ops per
    tensor; the update is the same bit for bit (the committed results reproduce) and the
    optimiser step costs ~2.5x less CPU (4.5 -> 1.8 ms of a ~170 ms training step)."""
    tr = cfg.train
    return torch.optim.AdamW(
        model.parameters(),
        lr=tr.lr,
        weight_decay=tr.weight_decay,
        betas=tuple(tr.betas),
        fused=True,
    )


def training_loss(model, tokens, maps, condition_dropout: float, generator) -> torch.Tensor:
    """CE on the image tokens; with condition dropout, jointly dropped samples get zero
    control (Sec. 3.1)."""
    control = None
    if model.variant != "none":
        dropped = joint_drop_mask(len(tokens), condition_dropout, generator)
        control = model.control_tokens(maps, dropped)
    return image_token_loss(teacher_forced_logits(model, tokens, control), tokens)


def batch_indices(cfg: Config, seed: int, step: int) -> np.ndarray:
    """Minibatch rows of ``step``: a pure function of (seed, step), so a resumed run draws
    the same batches (and every variant sees the same ones)."""
    return numpy_rng(seed, STREAM_BATCH, step).integers(0, cfg.data.n_train, cfg.train.batch_size)


@torch.no_grad()
def test_nll(model, setup: ToySetup) -> float:
    """Teacher-forced test NLL in nats per image token."""
    control = None if model.variant == "none" else model.control_tokens(setup.test_maps)
    logits = teacher_forced_logits(model, setup.test_tokens, control)
    return float(image_token_loss(logits, setup.test_tokens))


def sampling_settings(cfg: Config) -> SamplingSettings:
    s = cfg.sampling
    return SamplingSettings(s.temperature, s.top_k, s.top_p, s.cfg_scale)


@torch.no_grad()
def sample_tokens(model, setup: ToySetup, cfg: Config, seed: int) -> torch.Tensor:
    """One token grid per test control, sampled with the KV cache (Sec. 3.3)."""
    control = None if model.variant == "none" else model.control_tokens(setup.test_maps)
    tokens, _ = generate(
        model,
        control,
        setup.test_tokens.shape[1],
        sampling_settings(cfg),
        torch_generator(seed * 1000 + STREAM_SAMPLE),
        batch=len(setup.test_maps),
    )
    return tokens  # (n_test, N)


def train_one(method: str, seed: int, run_dir: Path, setup: ToySetup, cfg: Config, rt) -> RunOutput:
    """Train one variant for ``train.steps`` steps, then measure NLL, F1 and timings."""
    accelerator, logger = rt
    model = build_model(cfg, method, seed)
    tr = cfg.train
    optimizer = make_optimizer(cfg, model)
    model, optimizer = accelerator.prepare(model, optimizer)

    def next_batch(step: int):
        rows = batch_indices(cfg, seed, step)
        return step, setup.train_tokens[rows], setup.train_maps[rows]

    def compute_loss(m, batch):
        step, tokens, maps = batch
        generator = torch_generator(seed * 1_000_003 + step * 10 + STREAM_DROP)
        return training_loss(m, tokens, maps, tr.condition_dropout, generator), {}

    history = fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=tr.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        evaluate=lambda m: {"test_nll": test_nll(accelerator.unwrap_model(m), setup)},
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    model = accelerator.unwrap_model(model).eval()
    input_length, cache_length, tokens = measured_lengths(model, setup, cfg, seed)
    images = setup.tokenizer.decode(tokens.numpy())
    f1 = edge_f1(
        edge_map(images, cfg.data.edge_threshold),
        setup.data.test_controls,
        cfg.sampling.edge_tolerance,
    )
    np.save(run_dir / "samples.npy", images[: cfg.sampling.n_show])
    metrics = {
        "f1": float(f1.mean()),
        "nll": history[-1]["test_nll"],
        "seq_len": float(input_length),  # measured: the first block's input in training
        "cache_len": float(cache_length),  # measured: positions cached after sampling
    }
    return RunOutput(
        metrics=metrics,
        curves={"test_nll": [h["test_nll"] for h in history], "step": [h["step"] for h in history]},
    )


# ------------------------------------------------------------------ measured sequence lengths


class BlockInputLengths:
    """The sequence length the first transformer block receives, one entry per forward (a
    forward pre-hook): a teacher-forced forward shows the transformer's input length in
    training; a KV-cached sampling run feeds each position once, so its entries sum to the
    positions held in the cache at the end (claims 2a, 2b measure both)."""

    def __init__(self, model: ToyControlAR):
        self.lengths: list[int] = []
        self._handle = model.gpt.h[0].register_forward_pre_hook(self._record)

    def _record(self, module, args) -> None:
        self.lengths.append(args[0].shape[1])  # hidden states (B, T, D)

    def take(self) -> list[int]:
        """The lengths seen since the last call."""
        lengths, self.lengths = self.lengths, []
        return lengths

    def close(self) -> None:
        self._handle.remove()


def measured_lengths(model: ToyControlAR, setup: ToySetup, cfg: Config, seed: int):
    """(the transformer's input length in a teacher-forced forward, as in every training step;
    the positions in the KV cache after sampling the test controls; the sampled tokens)."""
    probe = BlockInputLengths(model)
    try:
        test_nll(model, setup)
        (input_length,) = probe.take()
        tokens = sample_tokens(model, setup, cfg, seed)
        cache_length = sum(probe.take())
    finally:
        probe.close()
    return input_length, cache_length, tokens


# ------------------------------------------------------------------ interleaved step timing


def measure_times(cfg: Config, setup: ToySetup, seed: int, methods: list[str]) -> dict:
    """Median training-step time (ms) per variant, measured interleaved on the same batch:
    ``timing.warmup_steps`` warm-up steps each, then ``timing.rounds`` rounds of one step of
    every variant in turn (brief Sec. 5 claim 2), so load drift hits all of them alike; then
    the median sampling time per image (ms, KV cache, all test controls in one batch) over
    ``timing.sample_rounds`` interleaved rounds. Speed does not depend on the weights, so
    freshly built models are timed.

    Returns:
        {"step_ms": {method: ms}, "sample_ms": {method: ms}}.
    """
    t = cfg.timing
    rows = batch_indices(cfg, seed, 0)
    tokens, maps = setup.train_tokens[rows], setup.train_maps[rows]
    states = {}
    for method in methods:
        model = build_model(cfg, method, seed)
        states[method] = (model, make_optimizer(cfg, model))
    generator = torch_generator(seed * 1000 + STREAM_TIMING)

    def step(method: str) -> float:
        model, optimizer = states[method]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        training_loss(model, tokens, maps, cfg.train.condition_dropout, generator).backward()
        if cfg.loop.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.loop.grad_clip)
        optimizer.step()
        return time.perf_counter() - start

    for method in methods:
        for _ in range(t.warmup_steps):
            step(method)
    times = {m: [] for m in methods}
    for _ in range(t.rounds):
        for method in methods:
            times[method].append(step(method))
    sampling = {m: [] for m in methods}
    for _ in range(t.sample_rounds):
        for method in methods:
            model = states[method][0].eval()
            start = time.perf_counter()
            sample_tokens(model, setup, cfg, seed)
            sampling[method].append((time.perf_counter() - start) / len(setup.test_maps))
    return {
        "step_ms": {m: 1e3 * statistics.median(v) for m, v in times.items()},
        "sample_ms": {m: 1e3 * statistics.median(v) for m, v in sampling.items()},
    }


# ------------------------------------------------------------------ figure


def plot(cfg: Config, out_dir: Path, path: Path) -> None:
    """For the first seed: control map, ground truth and one sample per variant for the first
    ``sampling.n_show`` test controls; beside it the test NLL during training."""
    seed, n_show = cfg.seeds[0], cfg.sampling.n_show
    d = cfg.data
    truth = make_rectangle_images(
        d.n_test, np.random.default_rng(d.test_seed_offset + seed), d.image_size
    )[:n_show]
    controls = edge_map(truth, d.edge_threshold)
    samples = {m: np.load(out_dir / "runs" / f"{m}-s{seed}" / "samples.npy") for m in cfg.methods}
    columns = ["control", "ground truth", *cfg.methods]
    fig = plt.figure(figsize=(1.6 * len(columns) + 4.2, 1.6 * n_show + 0.4), dpi=80)
    grid = fig.add_gridspec(n_show, len(columns) + 3)
    for row in range(n_show):
        for col, name in enumerate(columns):
            ax = fig.add_subplot(grid[row, col])
            if name == "control":
                ax.imshow(controls[row], cmap="gray", interpolation="nearest")
            else:
                image = truth[row] if name == "ground truth" else samples[name][row]
                ax.imshow(np.clip(image, 0, 1), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(name, fontsize=8)
    ax = fig.add_subplot(grid[:, len(columns) :])
    for method in cfg.methods:
        run = read_json(out_dir / "runs" / f"{method}-s{seed}" / "final.json")["curves"]
        ax.plot(run["step"], run["test_nll"], marker="o", label=LABELS.get(method, method))
    ax.set_xlabel("training step")
    ax.set_ylabel("test NLL (nats / token)")
    ax.set_title(f"seed {seed}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------ experiment


def add_margins(results: Results) -> None:
    """Per-seed margins of ControlAR over each baseline (claims "on every seed")."""
    cond = results.get("cond")
    if cond is None:
        return
    for baseline in ("prefill", "none"):
        if baseline in results:
            base = results[baseline]
            cond[f"f1_margin_vs_{baseline}"] = [
                a - b for a, b in zip(cond["f1"], base["f1"], strict=True)
            ]
            cond[f"nll_margin_vs_{baseline}"] = [
                b - a for a, b in zip(cond["nll"], base["nll"], strict=True)
            ]


def preflight(cfg: Config) -> list[str]:
    from papers.controlar.paper import preflight_problems

    return preflight_problems(cfg)


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    if cfg.scale == "paper":
        from papers.controlar.paper import run_paper

        return run_paper(cfg, Path(out_dir))
    out_dir = Path(out_dir)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    setups: dict[int, ToySetup] = {}

    def setup_of(seed: int) -> ToySetup:
        if seed not in setups:
            setups[seed] = prepare_toy(cfg, seed)
        return setups[seed]

    if cfg.runtime.workers > 1:  # forked runs inherit the setups instead of each rebuilding it
        for seed in cfg.seeds:
            setup_of(seed)
    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda m, s, d: train_one(m, s, d, setup_of(s), cfg, (accelerator, logger)),
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    results[ORACLE] = {"f1": []}
    for seed in cfg.seeds:
        path = out_dir / "runs" / f"setup-s{seed}.json"
        if not path.exists():
            write_json({"oracle_f1": setup_of(seed).oracle_f1}, path)
        results[ORACLE]["f1"].append(read_json(path)["oracle_f1"])
    if cfg.timing.enabled:  # wall clock: reported, excluded from the smoke run's metrics
        for seed in cfg.seeds:
            path = out_dir / "runs" / f"timing-s{seed}.json"
            if not path.exists():
                write_json(measure_times(cfg, setup_of(seed), seed, cfg.methods), path)
            for metric, by_method in read_json(path).items():
                for method, ms in by_method.items():
                    results[method].setdefault(metric, []).append(ms)
    add_margins(results)
    if accelerator.is_main_process:
        plot(cfg, out_dir, out_dir / FIGURE)
    return results


if __name__ == "__main__":
    main("controlar")
