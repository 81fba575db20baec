"""Paper-scale ControlAR (brief Sec. 6): c2i training and sampling from local files only.

``python -m papers.controlar.train scale=paper data.root=... paper_model.gpt_checkpoint=...
paper_model.vq_checkpoint=... paper_model.control_encoder=...`` trains each variant from the
LlamaGen GPT checkpoint (all parameters, AdamW, joint class/control dropping) on a folder of
precomputed VQ-16 codes and control maps (:class:`papers.controlar.data.CodeFolder`), then
samples one image per shown control with CFG and the KV cache, decodes it with VQ-16 and
scores Canny F1 against the input map (``cv2.Canny(img, 100, 200)``, opencv-python-headless).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from papers.controlar.config import Config
from papers.controlar.data import CodeFolder
from papers.controlar.llamagen import LlamaGenControlAR, load_control_encoder
from papers.controlar.method import (
    SamplingSettings,
    generate,
    image_token_loss,
    joint_drop_mask,
    sequence_length,
    teacher_forced_logits,
)
from papers.controlar.metrics import edge_f1
from papers.controlar.vq16 import VQ16Decoder
from shared.experiment import RunOutput, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_packages, missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng, seed_everything, torch_generator

STREAM_BATCH, STREAM_DROP, STREAM_SAMPLE = 1, 2, 3
FIGURE = "samples.png"


def preflight_problems(cfg: Config) -> list[str]:
    """Every local path and optional package the paper scale needs, named before any work."""
    hint = " (a local path; nothing is downloaded, see configs/controlar/paper.yaml)"
    m = cfg.paper_model
    paths = {
        "data.root": cfg.data.root,
        "paper_model.gpt_checkpoint": m.gpt_checkpoint,
        "paper_model.vq_checkpoint": m.vq_checkpoint,
    }
    if any(v != "none" for v in cfg.methods):
        paths["paper_model.control_encoder"] = m.control_encoder
    return missing_paths(paths, hint) + missing_packages(
        {"cv2": "pip install opencv-python-headless, for the Canny F1 of samples"}
    )


def canny_edges(images: np.ndarray, low: int, high: int) -> np.ndarray:
    """cv2.Canny(img, low, high) > 0 per (n, H, W, 3) image in [0, 1] (condition/canny.py)."""
    import cv2

    uint8 = (np.clip(images, 0, 1) * 255).round().astype(np.uint8)
    return np.stack([cv2.Canny(image, low, high) > 0 for image in uint8])


def load_batch(folder: CodeFolder, rows: np.ndarray):
    items = [folder.item(int(i)) for i in rows]
    codes = torch.from_numpy(np.stack([c for c, _, _ in items]))
    maps = torch.from_numpy(np.stack([m for _, m, _ in items]))
    labels = torch.tensor([label for _, _, label in items])
    return codes, maps, labels


def build(cfg: Config, variant: str, seed: int) -> LlamaGenControlAR:
    seed_everything(seed)
    m = cfg.paper_model
    encoder = None if variant == "none" else load_control_encoder(m.control_encoder)
    model = LlamaGenControlAR(m, variant, encoder)
    model.load_gpt(m.gpt_checkpoint)
    return model


def paper_loss(model: LlamaGenControlAR, codes, maps, labels, dropout: float, generator):
    """CE on image tokens; dropped samples get the null class AND zero control (Sec. 3.1)."""
    dropped = joint_drop_mask(len(codes), dropout, generator)
    labels = torch.where(dropped, torch.full_like(labels, model.cfg.num_classes), labels)
    control = None if model.variant == "none" else model.control_tokens(maps, dropped)
    return image_token_loss(teacher_forced_logits(model, codes, control, labels), codes)


def run_paper(cfg: Config, out_dir: Path) -> Results:
    folder = CodeFolder.open(cfg.data.root)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    vq = VQ16Decoder(
        cfg.paper_model.vocab_size,
        cfg.paper_model.code_dim,
        cfg.paper_model.vq_z_channels,
        cfg.paper_model.vq_channels,
        list(cfg.paper_model.vq_channel_mult),
        cfg.paper_model.vq_res_blocks,
    )
    vq.load_official(cfg.paper_model.vq_checkpoint)
    vq.eval()

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        model = build(cfg, method, seed)
        tr = cfg.train
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=tr.lr, weight_decay=tr.weight_decay, betas=tuple(tr.betas)
        )
        model, optimizer = accelerator.prepare(model, optimizer)
        device = accelerator.device

        def next_batch(step: int):
            rows = numpy_rng(seed, STREAM_BATCH, step).integers(0, len(folder), tr.batch_size)
            return step, *(t.to(device) for t in load_batch(folder, rows))

        def compute_loss(m, batch):
            step, codes, maps, labels = batch
            generator = torch_generator(seed * 1_000_003 + step * 10 + STREAM_DROP)
            unwrapped = accelerator.unwrap_model(m)
            return paper_loss(unwrapped, codes, maps, labels, tr.condition_dropout, generator), {}

        fit(
            model=model,
            optimizer=optimizer,
            accelerator=accelerator,
            max_steps=tr.steps,
            loop=cfg.loop,
            run_dir=run_dir,
            next_batch=next_batch,
            compute_loss=compute_loss,
            logger=logger,
            tags={"method": method, "seed": seed},
            progress=cfg.runtime.progress,
            desc=f"{method} s{seed}",
        )
        model = accelerator.unwrap_model(model).eval()
        n_show = min(cfg.sampling.n_show, len(folder))
        codes, maps, labels = (t.to(device) for t in load_batch(folder, np.arange(n_show)))
        s = cfg.sampling
        with torch.no_grad():
            control = None if method == "none" else model.control_tokens(maps)
            nll = float(
                image_token_loss(teacher_forced_logits(model, codes, control, labels), codes)
            )
            tokens, _ = generate(
                model,
                control,
                model.n_tokens,
                SamplingSettings(s.temperature, s.top_k, s.top_p, s.cfg_scale),
                torch_generator(seed * 1000 + STREAM_SAMPLE, device),
                condition=labels,
                batch=n_show,
            )
            grid = model.grid
            pixels = vq.to(device).decode_code(tokens.view(-1, grid, grid))
        images = ((pixels.clamp(-1, 1) + 1) / 2).permute(0, 2, 3, 1).float().cpu().numpy()
        np.save(run_dir / "samples.npy", images)
        edges = canny_edges(images, cfg.paper_model.canny_low, cfg.paper_model.canny_high)
        f1 = edge_f1(edges, maps.cpu().numpy() > 0, s.edge_tolerance)
        return RunOutput(
            metrics={
                "f1": float(f1.mean()),
                "nll": nll,
                "seq_len": float(
                    sequence_length(method, cfg.paper_model.cls_token_num, model.n_tokens)
                ),
            }
        )

    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    if accelerator.is_main_process:
        plot_samples(cfg, folder, out_dir, out_dir / FIGURE)
    return results


def plot_samples(cfg: Config, folder: CodeFolder, out_dir: Path, path: Path) -> None:
    """Control map and one sample per variant for the first shown items of the first seed."""
    seed = cfg.seeds[0]
    samples = {m: np.load(out_dir / "runs" / f"{m}-s{seed}" / "samples.npy") for m in cfg.methods}
    n_show = len(next(iter(samples.values())))
    columns = ["control", *cfg.methods]
    fig, axes = plt.subplots(
        n_show, len(columns), figsize=(2 * len(columns), 2 * n_show), squeeze=False
    )
    for row in range(n_show):
        axes[row, 0].imshow(folder.item(row)[1], cmap="gray")
        for col, method in enumerate(cfg.methods, start=1):
            axes[row, col].imshow(samples[method][row])
        for col, name in enumerate(columns):
            axes[row, col].set_axis_off()
            if row == 0:
                axes[row, col].set_title(name, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
