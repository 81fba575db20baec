"""Algorithm 2: the student's training loop (Sec. 3.4), shared by the toy (``train.py``) and
paper scale (``paper_scale.py``): student = teacher copy + new condition projections, the
mixed-reward consistency-distillation loss of ``method.t2v_turbo_v2_loss``, AdamW with gradient
clipping, an optional EMA target, checkpointed and resumable.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from papers.t2v_turbo_v2 import method as M
from papers.t2v_turbo_v2.config import Config
from shared import checkpoint
from shared.logger import MetricsLogger
from shared.loop import param_fingerprints


def make_student(teacher: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Student = teacher copy + freshly initialised w / motion projections (Sec. 3.4)."""
    student = copy.deepcopy(teacher)
    torch.manual_seed(seed)
    student.add_condition_projection()
    student.train().requires_grad_(True)
    return student


def reward_functions(models: dict, prompts: torch.Tensor):
    """Toy RMs: ``R_img = log p(shape, colour | frame)``, ``R_vid = log p(triple | 4 frames)``."""
    image_rm, video_rm = models["image_rm"], models["video_rm"]

    def image_reward(frames: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(image_rm(frames), dim=-1)
        return logp.gather(1, (prompts[idx] // 3)[:, None]).squeeze(1)

    def video_reward(clips: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(video_rm(clips), dim=-1)
        return logp.gather(1, prompts[idx][:, None]).squeeze(1)

    return image_reward, video_reward


def decode_pixels(x: torch.Tensor) -> torch.Tensor:
    """The toy's "VAE decode": identity, clamped to the pixel range like the paper's decode."""
    return x.clamp(-1.0, 1.0)


def train_student(
    variant: str,
    seed: int,
    steps: int,
    cfg: Config,
    models: dict,
    records: dict,
    schedule: M.NoiseSchedule,
    grid: M.SolverGrid,
    run_dir: Path | None,
    logger: MetricsLogger | None,
    motion_gs: float | None = None,
    progress: bool = False,
) -> torch.nn.Module:
    """Algorithm 2 for ``steps`` steps (resumable from ``run_dir/checkpoint.pt``)."""
    s = cfg.student
    use_rm = variant in ("cd_rm", "cd_rm_mg")
    gs = (
        (cfg.method.motion_gs if variant == "cd_rm_mg" else 0.0) if motion_gs is None else motion_gs
    )
    method_cfg = dataclasses.replace(cfg.method, motion_gs=gs)
    student = make_student(models["teacher"], seed)
    initial = param_fingerprints(student)
    opt = torch.optim.AdamW(
        student.parameters(),
        lr=s.lr,
        betas=(s.beta1, s.beta2),
        weight_decay=s.weight_decay,
        eps=s.adam_eps,
    )
    target = copy.deepcopy(student).requires_grad_(False) if method_cfg.use_target_ema else student
    gen = torch.Generator().manual_seed(seed)
    step = 0
    ckpt = None if run_dir is None else Path(run_dir) / "checkpoint.pt"
    if ckpt is not None and ckpt.exists():
        state = checkpoint.load_checkpoint(ckpt)
        student.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        if method_cfg.use_target_ema:
            target.load_state_dict(state["target"])
        step, initial = int(state["step"]), state["initial_fingerprints"]
        if logger is not None:
            logger.drop_after(step, method=variant, seed=seed)
    # Toy: the frozen classifiers of run B score each batch's prompts; paper scale passes
    # ``reward_factory`` (HPSv2.1 + CLIP, InternVideo2 on VAE-decoded frames) and ``decode``.
    reward_factory = models.get("reward_factory") or (
        lambda batch: reward_functions(models, batch["prompt"])
    )
    decode = models.get("decode") or decode_pixels
    count = len(records["n"])
    bar = tqdm(
        total=steps, initial=step, desc=f"{variant} s{seed}", disable=not progress, leave=False
    )
    while step < steps:
        idx = torch.randint(0, count, (s.batch,), generator=gen)
        batch = {k: v[idx] for k, v in records.items()}
        image_reward, video_reward = reward_factory(batch) if use_rm else (None, None)
        out = M.t2v_turbo_v2_loss(
            student,
            target,
            schedule,
            grid,
            batch,
            method_cfg,
            gen,
            decode,
            image_reward,
            video_reward,
            cfg.net.cond_embed_dim,
            cfg.net.use_motion_cond,
        )
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), s.grad_clip)
        opt.step()
        if method_cfg.use_target_ema:
            with torch.no_grad():
                for pt, ps in zip(target.parameters(), student.parameters(), strict=True):
                    pt.lerp_(ps, 1 - method_cfg.target_ema_decay)
        step += 1
        bar.update(1)
        if logger is not None and (step % 50 == 0 or step == steps):
            logger.log(
                {
                    "method": variant,
                    "seed": seed,
                    "step": step,
                    **{k: float(v.detach()) for k, v in out.items()},
                }
            )
        if ckpt is not None and (step % s.checkpoint_every == 0 or step == steps):
            state = {
                "step": step,
                "model": student.state_dict(),
                "optimizer": opt.state_dict(),
                "generator": gen.get_state(),
                "initial_fingerprints": initial,
            }
            if method_cfg.use_target_ema:
                state["target"] = target.state_dict()
            checkpoint.save_checkpoint(state, ckpt)
    bar.close()
    return student.eval().requires_grad_(False)
