"""Runs A and B of the brief (Sec. 5): train the toy teacher, the two reward models and the
independent evaluation classifier once, and save them as small safetensors files.

    python -m papers.t2v_turbo_v2.prepare [key=value ...]     # resumable, deterministic

The teacher (16,000 steps, ~25 CPU min) is trained in chunks of ``prepare.chunk_steps``
steps; after each chunk the model, its EMA, the optimiser and the RNG are checkpointed under
``prepare.work_dir`` so an interrupted run continues where it stopped. The results are
written to ``prepare.assets_dir`` with ``manifest.json`` (sha256 of every file, the command,
and the training summary); :func:`load_assets` verifies the checksums before loading. This is
the toy analogue of starting from a pretrained VideoCrafter2 and frozen reward models.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import fields
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch.nn import functional as F
from tqdm.auto import tqdm

from papers.t2v_turbo_v2.config import Config, PrepareConfig
from papers.t2v_turbo_v2.data import config_split, vocab_size
from papers.t2v_turbo_v2.method import NoiseSchedule
from papers.t2v_turbo_v2.model import ClipClassifier, FrameClassifier, SpaceTimeUNet, TextEncoder
from shared.checkpoint import load_checkpoint, save_checkpoint
from shared.config import REPO_ROOT, compose, default_composition, lookup
from shared.records import read_json, write_json

ASSET_FILES = (
    "teacher.safetensors",
    "image_rm.safetensors",
    "video_rm.safetensors",
    "eval_classifier.safetensors",
)
COMMAND = "python -m papers.t2v_turbo_v2.prepare"
# The keys the asset models are built from (build_teacher, build_reward_models), recorded in
# manifest.json: a run with another value would load weights made for another network (a size
# mismatch deep in torch, or, for heads, groups and pooling, the same shapes computing
# something else), so train.data_preflight refuses it before any work, naming the key.
MODEL_KEYS = (
    "data.kind",
    "data.n_distractors",
    "net.width",
    "net.text_dim",
    "net.heads",
    "net.groups",
    "net.cond_embed_dim",
    "net.use_motion_cond",
    "prepare.rm_width",
    "prepare.eval_width",
    "prepare.eval_pool",
)
# The rest of prepare.*, but prepare.assets_dir (where the train command finds the models), is
# read by this command only: how the committed models were trained and where to checkpoint.
# The train command would accept a changed value and ignore it, so data_preflight refuses it.
PREPARE_ONLY_KEYS = tuple(
    f"prepare.{f.name}"
    for f in fields(PrepareConfig)
    if f.name != "assets_dir" and f"prepare.{f.name}" not in MODEL_KEYS
)


def build_teacher(cfg: Config) -> tuple[SpaceTimeUNet, TextEncoder]:
    channels = 1 if cfg.data.kind == "sprites2d" else 3
    net = SpaceTimeUNet(
        channels,
        cfg.net.width,
        cfg.net.text_dim,
        cfg.net.heads,
        cfg.net.groups,
        cfg.net.cond_embed_dim,
        cfg.net.use_motion_cond,
    )
    return net, TextEncoder(vocab_size(cfg.data.n_distractors), cfg.net.text_dim)


def build_reward_models(cfg: Config) -> tuple[FrameClassifier, ClipClassifier, ClipClassifier]:
    channels = 1 if cfg.data.kind == "sprites2d" else 3
    image_rm = FrameClassifier(channels, cfg.prepare.rm_width, 9)
    video_rm = ClipClassifier(channels, cfg.prepare.rm_width, 27, pool="max")
    evaluator = ClipClassifier(channels, cfg.prepare.eval_width, 27, pool=cfg.prepare.eval_pool)
    return image_rm, video_rm, evaluator


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assets_dir(cfg: Config) -> Path:
    path = Path(cfg.prepare.assets_dir)
    return path if path.is_absolute() else REPO_ROOT / path


def _work_dir(cfg: Config) -> Path:
    path = Path(cfg.prepare.work_dir)
    return path if path.is_absolute() else REPO_ROOT / path


def train_teacher(cfg: Config, progress: bool = True) -> dict:
    """Run A: epsilon-prediction teacher, AdamW, EMA, 10% caption drop-out, in chunks."""
    p = cfg.prepare
    data = config_split(cfg.data, "train")
    clips, tokens = torch.from_numpy(data.clips), torch.from_numpy(data.tokens)
    schedule = NoiseSchedule.from_config(cfg.schedule)
    torch.manual_seed(p.seed)
    net, text = build_teacher(cfg)
    ema_net, ema_text = build_teacher(cfg)
    ema_net.load_state_dict(net.state_dict())
    ema_text.load_state_dict(text.state_dict())
    params = list(net.parameters()) + list(text.parameters())
    opt = torch.optim.AdamW(params, lr=p.teacher_lr)
    gen = torch.Generator().manual_seed(p.seed)
    step, losses = 0, []
    ckpt = _work_dir(cfg) / "teacher_ckpt.pt"
    if ckpt.exists():
        state = load_checkpoint(ckpt)
        net.load_state_dict(state["net"])
        text.load_state_dict(state["text"])
        ema_net.load_state_dict(state["ema_net"])
        ema_text.load_state_dict(state["ema_text"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        step, losses = int(state["step"]), state["losses"].tolist()
        if step > p.teacher_steps:
            # Resuming would silently save a longer-trained teacher under a shorter budget.
            raise ValueError(
                f"{ckpt} is at step {step}, past prepare.teacher_steps={p.teacher_steps}; "
                "delete it (or point prepare.work_dir elsewhere) to train this budget from scratch"
            )
    bar = tqdm(total=p.teacher_steps, initial=step, desc="teacher", disable=not progress)
    while step < p.teacher_steps:
        chunk_end = min(step + p.chunk_steps, p.teacher_steps)
        while step < chunk_end:
            idx = torch.randint(0, len(clips), (p.teacher_batch,), generator=gen)
            x0, tok = clips[idx], tokens[idx]
            t = torch.randint(0, schedule.num_train_timesteps, (p.teacher_batch,), generator=gen)
            eps = torch.randn(x0.shape, generator=gen)
            drop = torch.rand(p.teacher_batch, generator=gen) < p.caption_dropout
            ctx = torch.where(drop[:, None, None], text.empty(p.teacher_batch), text(tok))
            loss = F.mse_loss(net(schedule.add_noise(x0, eps, t), t, ctx), eps)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                for ema, cur in ((ema_net, net), (ema_text, text)):
                    for pe, pc in zip(ema.parameters(), cur.parameters(), strict=True):
                        pe.lerp_(pc, 1 - p.teacher_ema)
            losses.append(loss.item())
            step += 1
            bar.update(1)
            if step % 100 == 0:
                bar.set_postfix(loss=f"{sum(losses[-100:]) / 100:.4f}")
        state = {
            "net": net.state_dict(),
            "text": text.state_dict(),
            "ema_net": ema_net.state_dict(),
            "ema_text": ema_text.state_dict(),
            "opt": opt.state_dict(),
            "gen": gen.get_state(),
            "step": torch.tensor(step),
            "losses": torch.tensor(losses),
        }
        save_checkpoint(state, ckpt)  # atomic: an interrupted chunk resumes from the last one
    bar.close()
    out = _assets_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {f"unet.{k}": v.contiguous() for k, v in ema_net.state_dict().items()}
    tensors.update({f"text.{k}": v.contiguous() for k, v in ema_text.state_dict().items()})
    save_file(tensors, out / "teacher.safetensors")
    return {
        "teacher_steps": step,
        "teacher_final_loss_mean_last500": float(sum(losses[-500:]) / max(1, len(losses[-500:]))),
    }


def _train_classifier(model, inputs_fn, labels, n, p, gen) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=p.rm_lr)
    for _ in range(p.rm_steps):
        idx = torch.randint(0, n, (p.rm_batch,), generator=gen)
        x = inputs_fn(idx)
        x = x + p.rm_noise * torch.randn(x.shape, generator=gen)
        loss = F.cross_entropy(model(x), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def image_rm_input(clips: torch.Tensor, frame: torch.Tensor) -> torch.Tensor:
    """One frame per clip: (n, C, L)."""
    return clips[torch.arange(len(clips)), :, frame]


def video_rm_input(clips: torch.Tensor, offset: torch.Tensor, n_frames: int) -> torch.Tensor:
    """``n_frames`` frames with stride T / n_frames from a per-clip offset: (n, C, n_frames, L)."""
    stride = clips.shape[2] // n_frames
    frames = offset[:, None] + stride * torch.arange(n_frames)[None]  # (n, F)
    return clips[torch.arange(len(clips))[:, None], :, frames].transpose(1, 2)


def train_reward_models(cfg: Config) -> dict:
    """Run B: image RM (shape, colour | one frame), video RM (triple | 4 strided frames),
    and the independent evaluation classifier (triple | all frames; other width, kernel, seed)."""
    p = cfg.prepare
    train = config_split(cfg.data, "train")
    held = config_split(cfg.data, "heldout")
    clips, prompt = torch.from_numpy(train.clips), torch.from_numpy(train.prompt)
    frames = cfg.data.frames
    torch.manual_seed(p.seed + 1)
    image_rm, video_rm, evaluator = build_reward_models(cfg)
    gen = torch.Generator().manual_seed(p.seed + 1)
    stride = frames // cfg.method.video_frames
    _train_classifier(
        image_rm,
        lambda i: image_rm_input(clips[i], torch.randint(0, frames, (len(i),), generator=gen)),
        prompt // 3,
        len(clips),
        p,
        gen,
    )
    _train_classifier(
        video_rm,
        lambda i: video_rm_input(
            clips[i], torch.randint(0, stride, (len(i),), generator=gen), cfg.method.video_frames
        ),
        prompt,
        len(clips),
        p,
        gen,
    )
    torch.manual_seed(p.seed + 2)
    _, _, evaluator = build_reward_models(cfg)
    gen_eval = torch.Generator().manual_seed(p.seed + 2)
    _train_classifier(evaluator, lambda i: clips[i], prompt, len(clips), p, gen_eval)
    hc, hp = torch.from_numpy(held.clips), torch.from_numpy(held.prompt)
    with torch.no_grad():
        acc = {
            "image_rm_heldout_acc": (image_rm(hc[:, :, 0]).argmax(-1) == hp // 3)
            .float()
            .mean()
            .item(),
            "video_rm_heldout_acc": (
                video_rm(
                    video_rm_input(
                        hc, torch.zeros(len(hc), dtype=torch.long), cfg.method.video_frames
                    )
                ).argmax(-1)
                == hp
            )
            .float()
            .mean()
            .item(),
            "eval_classifier_heldout_acc": (evaluator(hc).argmax(-1) == hp).float().mean().item(),
        }
    out = _assets_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    for name, model in (
        ("image_rm", image_rm),
        ("video_rm", video_rm),
        ("eval_classifier", evaluator),
    ):
        save_file(
            {k: v.contiguous() for k, v in model.state_dict().items()}, out / f"{name}.safetensors"
        )
    return acc


def write_manifest(cfg: Config, summary: dict) -> Path:
    out = _assets_dir(cfg)
    manifest = {
        "command": COMMAND,
        "files": {name: sha256(out / name) for name in ASSET_FILES},
        "config": {key: lookup(cfg, key) for key in MODEL_KEYS},
        "summary": summary,
    }
    path = out / "manifest.json"
    write_json(manifest, path)
    return path


def assets_manifest_files(cfg: Config) -> dict[str, str]:
    """sha256 of each asset file as recorded in ``manifest.json`` (checked by ``load_assets``)."""
    return read_json(_assets_dir(cfg) / "manifest.json")["files"]


def model_key_problems(cfg: Config) -> list[str]:
    """One line per key of ``MODEL_KEYS`` whose value differs from the one the models in
    ``prepare.assets_dir`` were built with (``manifest.json``'s ``config``), naming the key,
    the folder and how to build models for the value; a folder without a manifest is named."""
    folder = _assets_dir(cfg)
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        where = f"prepare.assets_dir={cfg.prepare.assets_dir}"
        return [f"{where} holds no {manifest_path.name}: run `{COMMAND}`"]
    recorded = read_json(manifest_path).get("config", {})
    problems = []
    for key in MODEL_KEYS:
        value = lookup(cfg, key)
        if key not in recorded or recorded[key] != value:
            built = f"{key}={recorded[key]}" if key in recorded else f"no recorded {key}"
            problems.append(
                f"{key}={value}: the toy models of prepare.assets_dir={cfg.prepare.assets_dir} "
                f"were built with {built} ({manifest_path.name}); build models for it with "
                f"`{COMMAND} {key}={value} prepare.assets_dir=<folder>` "
                "and run with the same prepare.assets_dir"
            )
    return problems


def prepare_only_problems(cfg: Config) -> list[str]:
    """One line per key of ``PREPARE_ONLY_KEYS`` set to a value other than the scale's own:
    the train command does not read it (the models in ``prepare.assets_dir`` exist already)."""
    default = default_composition(cfg.paper, cfg.scale)
    return [
        f"{key}={lookup(cfg, key)}: python -m papers.t2v_turbo_v2.train does not read it, only "
        f"`{COMMAND}` does (it builds the models in prepare.assets_dir); leave it out"
        for key in PREPARE_ONLY_KEYS
        if lookup(cfg, key) != lookup(default, key)
    ]


def load_assets(cfg: Config) -> dict[str, torch.nn.Module]:
    """Load the committed teacher, text encoder, RMs and classifier after checking sha256.

    Raises FileNotFoundError / ValueError naming the missing, corrupted or mismatching file.
    """
    out = _assets_dir(cfg)
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{manifest_path} is missing: run `{COMMAND}` first")
    recorded = assets_manifest_files(cfg)
    states = {}
    for name in ASSET_FILES:
        path = out / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: run `{COMMAND}` to rebuild the toy assets")
        if sha256(path) != recorded.get(name):
            raise ValueError(
                f"{path}: sha256 does not match {manifest_path} (corrupted or stale file); "
                f"rerun `{COMMAND}`"
            )
        try:
            states[name] = load_file(path)
        except Exception as err:  # safetensors raises its own error types
            raise ValueError(f"{path} is not a readable safetensors file: {err}") from err
    net, text = build_teacher(cfg)
    teacher = states["teacher.safetensors"]
    net.load_state_dict({k[5:]: v for k, v in teacher.items() if k.startswith("unet.")})
    text.load_state_dict({k[5:]: v for k, v in teacher.items() if k.startswith("text.")})
    image_rm, video_rm, evaluator = build_reward_models(cfg)
    image_rm.load_state_dict(states["image_rm.safetensors"])
    video_rm.load_state_dict(states["video_rm.safetensors"])
    evaluator.load_state_dict(states["eval_classifier.safetensors"])
    models = {
        "teacher": net,
        "text": text,
        "image_rm": image_rm,
        "video_rm": video_rm,
        "evaluator": evaluator,
    }
    for m in models.values():
        m.eval().requires_grad_(False)
    if cfg.net.channels_last:
        net.to(memory_format=torch.channels_last)  # the students are copies: they inherit it
    return models


def prepare(cfg: Config, progress: bool = True) -> dict:
    torch.set_num_threads(cfg.runtime.num_threads)
    summary = train_teacher(cfg, progress)  # resumes from the work folder's last chunk
    summary.update(train_reward_models(cfg))
    write_manifest(cfg, summary)
    return summary


def main() -> None:
    cfg = compose("t2v_turbo_v2", "toy", sys.argv[1:])
    print(json.dumps(prepare(cfg, cfg.runtime.progress), indent=2))


if __name__ == "__main__":
    main()
