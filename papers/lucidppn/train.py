"""LucidPPN experiment: ``python -m papers.lucidppn.train [scale=smoke|toy|paper] [key=value]``.

Per (method, seed) one network is trained with the shared loop (``shared.loop.fit``:
progress bar, checkpoints, resume) and evaluated on the test set and on its luminance-
preserving hue-rotated copy:

* ``lucidppn``: ShapeTexNet + ColorNet fused through a stop-gradient, L = 1.4 L_D + L_S + L_C
  (brief 3.1-3.4); its ShapeTexNet-alone and ColorNet-alone accuracies come from the same
  trained model;
* ``rgb``: the single-branch "entangled" prototype network on RGB, L_S + L_D (brief Sec. 4);
* ``no_align``: LucidPPN with alpha_D = 0 (the part-alignment ablation).

The run writes ``explanation.png``: one test image explained part by part (each part's
strongest location, its colour prototype, r^S and r) beside the per-part colour-twin gaps of
every method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from torch import nn

from papers.lucidppn.claims import LABELS
from papers.lucidppn.config import BACKBONES, DATA_NAMES, Config
from papers.lucidppn.data import (
    BODY,
    PART_NAMES,
    ImageFolderParts,
    ImageSet,
    index_image_folder,
    part_root,
    toy_splits,
)
from papers.lucidppn.method import (
    colour_cube,
    colour_prototype,
    colour_twin_gaps,
    downscale,
    explain,
    localisation_ratio,
    lucid_loss,
    part_alignment_scores,
    predict,
    resemblance,
    rotate_hue,
)
from papers.lucidppn.model import (
    ColorNet,
    ConvNextFeatures,
    LucidPPN,
    RGBPrototypeNet,
    toy_backbone,
)
from shared import preflight as preflight_lib
from shared.checkpoint import load_checkpoint
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import CHECKPOINT_NAME, fit
from shared.plotting import plt
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng, seed_everything

# method -> (architecture, alpha_D override; None: the config's loss.alpha_d)
METHODS: dict[str, tuple[str, float | None]] = {
    "lucidppn": ("lucid", None),
    "rgb": ("rgb", None),
    "no_align": ("lucid", 0.0),
}
TOY_PARTS, TOY_CLASSES = len(PART_NAMES), 8
PLOT_NAME = "explanation.png"
# glibc mallopt parameters and the values used with ``keep_freed_memory``: blocks below the mmap
# threshold come from the heap, and the heap is trimmed only above the trim threshold.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
TRIM_THRESHOLD_BYTES, MMAP_THRESHOLD_BYTES = 256 * 2**20, 64 * 2**20


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks for reuse (no effect elsewhere; returns whether set).

    By default each step's large activation buffers are unmapped when freed and faulted in
    again on the next step, which cost the toy a third of its CPU seconds in the kernel.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):
        return False
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )


def preflight(cfg: Config) -> list[str]:
    """What a paper-scale run lacks, before any work: the image tree, its part maps, the
    ConvNeXt folder (``shared/preflight.py`` prints them on one line)."""
    problems = []
    d, m = cfg.data, cfg.model
    hint = " (see papers/lucidppn/README.md, Run; nothing is downloaded)"
    if d.name == "image_folder":
        problems += preflight_lib.missing_paths({"data.root": d.root}, hint)
        if not problems:
            parts = part_root(d.root, d.num_parts)
            for path in (Path(d.root) / "train", Path(d.root) / "test", parts):
                if not path.expanduser().is_dir():
                    problems.append(f"{path} does not exist{hint}")
    if m.backbone == "convnext":
        problems += preflight_lib.missing_packages({"transformers": "pip install transformers"})
        problems += preflight_lib.missing_paths({"model.convnext_path": m.convnext_path}, hint)
    return problems


# ---------------------------------------------------------------------------------- models
def build_model(cfg: Config, arch: str) -> nn.Module:
    """LucidPPN (``lucid``) or the single-branch RGB baseline (``rgb``) for ``cfg``."""
    d, m = cfg.data, cfg.model
    in_channels = m.gray_channels if arch == "lucid" else 3
    if m.backbone == "toy_cnn":
        backbone: nn.Module = toy_backbone(in_channels, m.toy_channels, m.toy_strides)
        channels = m.toy_channels[-1]
    elif m.backbone == "convnext":
        backbone = ConvNextFeatures(m.convnext_path, m.stride_reduction_min_channels)
        channels = backbone.out_channels
    else:
        raise ValueError(f"unknown model.backbone {m.backbone!r}; choose from {BACKBONES}")
    if arch == "rgb":
        return RGBPrototypeNet(
            backbone, channels, d.num_parts, d.num_classes, m.rgb_mean, m.rgb_std
        )
    colornet = ColorNet(m.color_widths, d.num_parts, d.num_classes)
    return LucidPPN(
        backbone,
        channels,
        colornet,
        d.num_parts,
        d.num_classes,
        m.gray_mean,
        m.gray_std,
        m.gray_channels,
        m.resize,
    )


def make_optimizer(model: nn.Module, cfg: Config) -> torch.optim.AdamW:
    """Brief 3.5: AdamW (weight decay 0) on (backbone + 1x1 head) and on ColorNet, each with
    its own LR. One AdamW with two parameter groups: per-parameter Adam states make it the
    same as the official two optimisers (the third, for the unused classifier, is dropped)."""
    o = cfg.optim
    groups = [{"params": model.network_parameters(), "lr": o.lr_net, "name": "network"}]
    if isinstance(model, LucidPPN):
        groups.append(
            {"params": list(model.colornet.parameters()), "lr": o.lr_color, "name": "color"}
        )
    return torch.optim.AdamW(groups, weight_decay=o.weight_decay, foreach=True)


def apply_schedule(
    model: nn.Module, optimizer: torch.optim.Optimizer, epoch: int, cfg: Config
) -> None:
    """Brief 3.5 schedule, idempotent (so a resumed run lands in the same phase): during the
    first ``freeze_epochs`` epochs the backbone is frozen except its last block; afterwards
    everything trains and the network LR is multiplied by ``unfrozen_lr_factor``; ColorNet's
    LR is constant."""
    o = cfg.optim
    frozen = epoch < o.freeze_epochs
    backbone = model.backbone
    for p in backbone.parameters():
        p.requires_grad_(not frozen)
    if frozen and hasattr(backbone, "last_block"):
        for p in backbone.last_block().parameters():
            p.requires_grad_(True)
    factor = 1.0 if frozen or o.freeze_epochs == 0 else o.unfrozen_lr_factor
    for group in optimizer.param_groups:
        if group.get("name") == "network":
            group["lr"] = o.lr_net * factor


# ------------------------------------------------------------------------------------ data
def steps_per_epoch(n: int, batch_size: int) -> int:
    """Full batches per epoch (the last partial batch is dropped, as the official loader)."""
    if n < batch_size:
        raise ValueError(f"optim.batch_size={batch_size} exceeds the {n} training images")
    return n // batch_size


@dataclass
class Batch:
    x: torch.Tensor  # (B, 3, H, W) un-normalised RGB
    masks: torch.Tensor  # (B, K, H, W)
    y: torch.Tensor  # (B,)


@dataclass
class Data:
    """Training batches as a pure function of the step, and test batches."""

    steps_per_epoch: int
    batch: Callable[[int], Batch]  # step (1-based) -> training batch
    test: Callable[[], Iterator[Batch]]  # the test set in chunks
    example: Callable[[], Batch]  # one test image for the explanation figure


def toy_data(cfg: Config, seed: int, splits: tuple[ImageSet, ImageSet], device) -> Data:
    train, test = splits
    n, bs = len(train.y), cfg.optim.batch_size
    spe = steps_per_epoch(n, bs)
    permutations: dict[int, np.ndarray] = {}

    def batch(step: int) -> Batch:
        epoch, i = divmod(step - 1, spe)
        if epoch not in permutations:  # one shuffle per epoch, a function of (seed, epoch)
            permutations.clear()
            permutations[epoch] = numpy_rng(seed, 1, epoch).permutation(n)
        idx = torch.from_numpy(permutations[epoch][i * bs : (i + 1) * bs])
        return Batch(train.x[idx].to(device), train.masks[idx].to(device), train.y[idx].to(device))

    def test_batches() -> Iterator[Batch]:
        for s in range(0, len(test.y), cfg.eval.batch_size):
            sl = slice(s, s + cfg.eval.batch_size)
            yield Batch(test.x[sl].to(device), test.masks[sl].to(device), test.y[sl].to(device))

    return Data(spe, batch, test_batches, lambda: Batch(test.x[:1], test.masks[:1], test.y[:1]))


def folder_data(cfg: Config, seed: int, splits, device) -> Data:
    """Paper scale: augmented training batches through a DataLoader per epoch (resumable at
    any step: item i of epoch e is augmented with the generator (seed, e, i))."""
    train_samples, test_samples = splits
    d = cfg.data
    train = ImageFolderParts(
        train_samples, d.image_size, d.resize_to, d.augment, tuple(d.crop_scale), seed
    )
    test = ImageFolderParts(
        test_samples, d.image_size, d.resize_to, False, tuple(d.crop_scale), seed
    )
    n, bs = len(train), cfg.optim.batch_size
    spe = steps_per_epoch(n, bs)
    state: dict = {"epoch": None, "next": None, "iterator": None}

    def to_batch(items) -> Batch:
        x, masks, y = items
        return Batch(x.to(device), masks.to(device), torch.as_tensor(y).to(device))

    def batch(step: int) -> Batch:
        epoch, i = divmod(step - 1, spe)
        if state["epoch"] != epoch or state["next"] != i:  # new epoch or a resumed run
            train.epoch = epoch
            order = numpy_rng(seed, 1, epoch).permutation(n)[i * bs :].tolist()
            loader = torch.utils.data.DataLoader(
                train, batch_size=bs, sampler=order, num_workers=d.num_workers
            )
            state.update(epoch=epoch, iterator=iter(loader))
        state["next"] = i + 1
        return to_batch(next(state["iterator"]))

    def test_batches() -> Iterator[Batch]:
        loader = torch.utils.data.DataLoader(
            test, batch_size=cfg.eval.batch_size, num_workers=d.num_workers
        )
        for items in loader:
            yield to_batch(items)

    def example() -> Batch:
        x, masks, y = test[0]
        return Batch(x[None], masks[None], torch.tensor([y]))

    return Data(spe, batch, test_batches, example)


def load_splits(cfg: Config, seed: int):
    d = cfg.data
    if d.name == "toy_birds":
        if (d.num_parts, d.num_classes) != (TOY_PARTS, TOY_CLASSES):
            raise ValueError(
                f"toy_birds has K={TOY_PARTS} parts and M={TOY_CLASSES} classes; got "
                f"data.num_parts={d.num_parts}, data.num_classes={d.num_classes}"
            )
        return toy_splits(d.n_train, d.n_test, seed, d.test_seed_offset, d.image_size)
    if d.name == "image_folder":
        train, classes = index_image_folder(d.root, "train", d.num_parts)
        test, test_classes = index_image_folder(d.root, "test", d.num_parts)
        if classes != test_classes or len(classes) != d.num_classes:
            raise ValueError(
                f"{d.root}: train has {len(classes)} classes, test {len(test_classes)}, "
                f"data.num_classes={d.num_classes}; they must agree"
            )
        return train[: d.max_train_images], test[: d.max_test_images]
    raise ValueError(f"unknown data.name {d.name!r}; choose from {DATA_NAMES}")


# ------------------------------------------------------------------------------ evaluation
def memory_format(x: torch.Tensor, cfg: Config) -> torch.Tensor:
    """The input in the layout the model's convolutions use (``model.channels_last``)."""
    return x.contiguous(memory_format=torch.channels_last) if cfg.model.channels_last else x


def part_names(cfg: Config) -> list[str]:
    """Metric suffixes of the parts: head/body/tail on the toy, 0..K-1 at paper scale."""
    if cfg.data.name == "toy_birds":
        return list(PART_NAMES)
    return [str(k) for k in range(cfg.data.num_parts)]


@torch.no_grad()
def evaluate(model: nn.Module, batches: Iterator[Batch], cfg: Config) -> dict[str, float]:
    """Brief 3.7 and Sec. 5 "Metrics" on the test set and its hue-rotated copy."""
    model.eval()
    e = cfg.eval
    rows: dict[str, list[torch.Tensor]] = {}
    max_dr_shape = 0.0
    for b in batches:
        out = model(memory_format(b.x, cfg))
        hue = model(memory_format(rotate_hue(b.x, e.hue_angle), cfg))
        masks = downscale(b.masks, tuple(out.z.shape[-2:]), cfg.model.resize).clamp(0, 1)
        align = part_alignment_scores(out.z_shape, out.r, masks, e.threshold)
        found = {
            "y": b.y,
            "pred": out.p.argmax(1),
            "pred_shape": out.p_shape.argmax(1),
            "pred_hue": hue.p.argmax(1),
            "r": out.r,
            **align,
        }
        if out.z_color is not None:
            found["pred_colornet"] = predict(resemblance(out.z_color)).argmax(1)
        for key, value in found.items():
            rows.setdefault(key, []).append(value.cpu())
        max_dr_shape = max(max_dr_shape, float((out.r_shape - hue.r_shape).abs().max()))
    cat = {k: torch.cat(v) for k, v in rows.items()}
    y = cat["y"]

    def accuracy(pred: torch.Tensor) -> float:
        return float((pred == y).double().mean())

    metrics = {
        "acc": accuracy(cat["pred"]),
        "shapetex_acc": accuracy(cat["pred_shape"]),
        "hue_acc": accuracy(cat["pred_hue"]),
        # ShapeTexNet's maps vs its maps on the hue-rotated images (the RGB baseline: its own)
        "hue_max_abs_dr_shape": max_dr_shape,
    }
    metrics["hue_acc_drop"] = metrics["acc"] - metrics["hue_acc"]
    if "pred_colornet" in cat:
        # ColorNet alone: max-pooled Z_C without the shape gating, same trained model
        metrics["colornet_acc"] = accuracy(cat["pred_colornet"])
    names = part_names(cfg)
    for score in ("iou", "iop", "iot"):
        per_part = torch.nanmean(cat[score], dim=0)
        for k, name in enumerate(names):
            metrics[f"{score}_{name}"] = float(per_part[k])
    if e.colour_twins:
        # toy: class c and c xor 1 differ only in an iso-luminant body colour
        metrics["shapetex_group_acc"] = accuracy(cat["pred_shape"] // 2 * 2 + y % 2)
        gaps = colour_twin_gaps(cat["r"], y)
        for k, name in enumerate(names):
            metrics[f"gap_{name}"] = float(gaps[k])
        metrics["rho"] = localisation_ratio(gaps, BODY, e.rho_floor)
    return metrics


# -------------------------------------------------------------------------------- training
def train_one(
    method: str, seed: int, run_dir: Path, cfg: Config, data: Data, accelerator: Accelerator, logger
) -> RunOutput:
    arch, alpha_override = METHODS[method]
    alpha_d = cfg.loss.alpha_d if alpha_override is None else alpha_override
    seed_everything(seed)
    model = build_model(cfg, arch)
    if cfg.model.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(model, cfg)
    model, optimizer = accelerator.prepare(model, optimizer)
    spe = data.steps_per_epoch

    def next_batch(step: int) -> Batch:
        apply_schedule(accelerator.unwrap_model(model), optimizer, (step - 1) // spe, cfg)
        return data.batch(step)

    def compute_loss(model: nn.Module, batch: Batch):
        out = model(memory_format(batch.x, cfg))
        masks = downscale(batch.masks, tuple(out.z_shape.shape[-2:]), cfg.model.resize).clamp(0, 1)
        terms = lucid_loss(
            out.r_shape,
            out.r if arch == "lucid" else None,
            out.z_shape,
            masks,
            batch.y,
            alpha_d,
            cfg.loss.alpha_s,
            cfg.loss.alpha_c,
        )
        aux = {"L_S": terms.shape.item(), "L_C": terms.color.item(), "L_D": terms.alignment.item()}
        return terms.total, aux

    fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=cfg.optim.epochs * spe,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    metrics = evaluate(accelerator.unwrap_model(model), data.test(), cfg)
    accelerator.free_memory()
    return RunOutput(metrics=metrics)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every (method, seed) of ``cfg``; the explanation figure; per-seed metrics."""
    check_names("methods", cfg.methods, METHODS)
    accelerator = make_accelerator(cfg.runtime)
    if cfg.keep_freed_memory and accelerator.device.type == "cpu":
        keep_freed_memory()
    logger = MetricsLogger(
        Path(out_dir) / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    cache: dict[int, Data] = {}

    def data_for(seed: int) -> Data:
        if seed not in cache:  # one data set per seed, kept for every method of that seed
            splits = load_splits(cfg, seed)
            build = toy_data if cfg.data.name == "toy_birds" else folder_data
            cache[seed] = build(cfg, seed, splits, accelerator.device)
        return cache[seed]

    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda method, seed, run_dir: train_one(
            method, seed, run_dir, cfg, data_for(seed), accelerator, logger
        ),
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
    )
    if accelerator.is_main_process:
        explained = next((m for m in ("lucidppn", "no_align") if m in cfg.methods), None)
        seed = cfg.seeds[0]
        model = None
        if explained is not None:
            model = build_model(cfg, "lucid")
            state = load_checkpoint(
                Path(out_dir) / "runs" / f"{explained}-s{seed}" / CHECKPOINT_NAME
            )
            model.load_state_dict(state["model"])
        plot_explanation(model, data_for(seed).example(), results, cfg, Path(out_dir) / PLOT_NAME)
    return results


# -------------------------------------------------------------------------------- figure
def plot_explanation(
    model: LucidPPN | None, example: Batch, results: Results, cfg: Config, path: Path
) -> None:
    """Left: one test image explained part by part (brief 3.7): each part's strongest
    location on the predicted class's map, its colour prototype, r^S and r. Right: the per-part
    colour-twin gaps of every method (toy) or the accuracies (paper scale)."""
    k_parts = cfg.data.num_parts
    names = part_names(cfg)
    fig = plt.figure(figsize=(10.0, 3.8), dpi=90)
    grid = fig.add_gridspec(k_parts, 3, width_ratios=[1.0, 1.2, 1.6])
    ax_img = fig.add_subplot(grid[:, 0])
    image = example.x[0].clamp(0, 1).permute(1, 2, 0).numpy()
    ax_img.imshow(image, interpolation="nearest")
    ax_img.set_xticks([])
    ax_img.set_yticks([])
    if model is not None:
        model.eval()
        with torch.no_grad():
            out = model(example.x)
            m_hat, evidence = explain(out.z_shape[0], out.r_shape[0], out.r[0])
            cube = colour_cube(cfg.eval.cube_levels)
            cube_scores = model.colornet(cube.view(-1, 3, 1, 1))[:, :, m_hat, 0, 0]  # (N, K)
        h_map, w_map = out.z_shape.shape[-2:]
        scale_h, scale_w = image.shape[0] / h_map, image.shape[1] / w_map
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for ev in evidence:
            h, w = ev.location
            rect = plt.Rectangle(
                (w * scale_w - 0.5, h * scale_h - 0.5),
                scale_w,
                scale_h,
                fill=False,
                linewidth=2,
                edgecolor=colours[ev.part % len(colours)],
            )
            ax_img.add_patch(rect)
            proto = colour_prototype(cube_scores[:, ev.part], cube, cfg.eval.prototype_mass)
            ax = fig.add_subplot(grid[ev.part, 1])
            kept = proto.colours[: proto.n_kept].numpy()
            ax.imshow(kept[None], aspect="auto", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(
                f"{names[ev.part]}: r^S = {ev.shape_score:.2f}, r = {ev.fused_score:.2f}; "
                f"colour prototype: top {proto.n_kept} of {len(cube)} colours",
                fontsize=8,
                color=colours[ev.part % len(colours)],
            )
        ax_img.set_title(f"true class {int(example.y[0])}, predicted {m_hat}", fontsize=9)
    ax_bar = fig.add_subplot(grid[:, 2])
    methods = list(results)
    if cfg.eval.colour_twins:
        width = 0.8 / max(len(methods), 1)
        for i, method in enumerate(methods):
            gaps = np.array([results[method][f"gap_{n}"] for n in names])  # (K, S)
            ax_bar.bar(
                np.arange(k_parts) + i * width,
                gaps.mean(1),
                width,
                yerr=gaps.std(1),
                label=LABELS.get(method, method),
            )
        ax_bar.set_xticks(np.arange(k_parts) + 0.4 - width / 2, names)
        ax_bar.set_ylabel("colour-twin gap  r(y) - r(y xor 1)")
        ax_bar.axhline(0, color="black", linewidth=0.6)
    else:
        keys = [k for k in ("acc", "shapetex_acc", "colornet_acc", "hue_acc")]
        width = 0.8 / max(len(methods), 1)
        for i, method in enumerate(methods):
            vals = [np.mean(results[method].get(k, [np.nan])) for k in keys]
            ax_bar.bar(
                np.arange(len(keys)) + i * width, vals, width, label=LABELS.get(method, method)
            )
        ax_bar.set_xticks(np.arange(len(keys)) + 0.4 - width / 2, keys, fontsize=8)
        ax_bar.set_ylabel("test accuracy")
    ax_bar.legend(frameon=False, fontsize=7)
    ax_bar.grid(alpha=0.3, axis="y")
    fig.suptitle(
        f"LucidPPN: per-part explanation (seed {cfg.seeds[0]}) and per-part evidence", fontsize=10
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("lucidppn")
