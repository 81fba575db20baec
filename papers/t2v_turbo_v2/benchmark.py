"""Seconds per clip of the student's few-step sampling against the teacher's DDIM (t2v_turbo_v2).

    python -m papers.t2v_turbo_v2.benchmark                      # toy + reduced-width UNet3D
    python -m papers.t2v_turbo_v2.benchmark --unet-width 320 --unet-heads 64  # the real widths
    python -m papers.t2v_turbo_v2.benchmark --skip-unet3d        # the toy only

The point of the distilled student (paper Sec. 1, brief Sec. 3.6) is 4-step sampling: one
network call per step, the guidance scale fed in as an embedding, against the teacher's DDIM
with classifier-free guidance (two calls per step) over 50 steps. This script times, on one
thread and interleaved (median of ``--repeats`` rounds, the order alternating):

* **student LCM-4** (``method.lcm_sample``, 4 steps: the toy evaluation's ``eval.lcm_steps``
  and the few-step headline) and **LCM-16** (the paper's VBench setting, ``paper.yaml``);
* **teacher DDIM-50** and **DDIM-4** (``method.teacher_ddim_sample``, CFG: 2 calls a step).

Two models, random weights (speed does not depend on them):

1. the toy's ``SpaceTimeUNet`` on the toy's clips (3 x 8 frames x 32 px), ``--toy-batch``
   clips per call, beside the quality the claims measure (``results/toy.json``: accuracy and
   FD of the same samplers);
2. the paper-scale path: diffusers' ``UNet3DConditionModel`` in the ModelScope layout
   (4 blocks, 2 layers each, cross-attention 1024) wrapped by ``paper_scale.UNet3DEps``, with
   block widths ``--unet-width`` x (1, 2, 4, 4) and ``--unet-heads`` attention heads (320 and
   64 are the real model's, 1.4 B parameters; the default 64 and 8 keep the run to minutes on
   one core), latents of 4 x ``--unet-frames`` x ``--unet-size``^2 (16 = 128 px after the
   VAE), one clip per call.

The rows go to ``results/benchmark.json`` (``--out`` elsewhere). Target: the student's 4-step
sampling at least 10x faster per clip than DDIM-50.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from papers.t2v_turbo_v2 import method as M
from papers.t2v_turbo_v2.config import Config
from papers.t2v_turbo_v2.prepare import build_teacher
from papers.t2v_turbo_v2.student import make_student
from shared.benchmarks import interleaved, write_benchmark
from shared.config import REPO_ROOT, compose

TARGET_SPEEDUP = 10.0  # student 4-step vs teacher DDIM-50, seconds per clip
STUDENT_STEPS = 4  # the few-step headline and the toy's evaluation
PAPER_STUDENT_STEPS = 16  # the paper's VBench numbers (configs/t2v_turbo_v2/paper.yaml)
UNET3D_NORM_GROUPS = 32  # ModelScope's GroupNorm groups: widths must be multiples of 32
UNET3D_TEXT_TOKENS = 77  # CLIP/OpenCLIP context length of the paper's text encoder
QUALITY_METRICS = ("acc", "FD")


def sampler_calls(lcm_steps: list[int], ddim_steps: list[int]) -> dict[str, tuple[str, int]]:
    """name -> (kind, steps): the samplers timed, in table order."""
    rows = {f"student LCM-{s}": ("lcm", s) for s in lcm_steps}
    rows.update({f"teacher DDIM-{s}": ("ddim", s) for s in ddim_steps})
    return rows


def make_samplers(student, teacher, schedule, grid, cfg, shape, context, empty, calls) -> dict:
    """Zero-argument closures, one per sampler, each drawing one batch of clips."""

    def lcm(steps: int):
        return lambda: M.lcm_sample(
            student,
            schedule,
            shape,
            context,
            steps,
            grid.n_steps,
            cfg.eval.guidance,
            cfg.method.motion_gs,
            cfg.eval.p_inf,
            torch.Generator().manual_seed(0),
            clip_sample=False,
            cond_dim=cfg.net.cond_embed_dim,
            use_motion_cond=cfg.net.use_motion_cond,
        )

    def ddim(steps: int):
        return lambda: M.teacher_ddim_sample(
            teacher,
            schedule,
            shape,
            context,
            empty,
            steps,
            cfg.eval.guidance,
            torch.Generator().manual_seed(0),
            clip_sample=False,
        )

    return {name: (lcm if kind == "lcm" else ddim)(s) for name, (kind, s) in calls.items()}


def network_calls(name: str) -> int:
    """Network evaluations per clip: 1 per LCM step, 2 per DDIM step (CFG)."""
    steps = int(name.rsplit("-", 1)[1])
    return steps if name.startswith("student") else 2 * steps


def toy_quality(path: Path, cfg: Config) -> dict[str, dict[str, float]]:
    """Mean accuracy and FD per sampler from the committed toy results (claim seeds); the toy
    evaluates the full student ``cd_rm_mg`` at ``eval.lcm_steps``."""
    if not path.is_file():
        return {}
    metrics = json.loads(path.read_text())["metrics"]
    names = {f"teacher DDIM-{s}": f"teacher_ddim{s}" for s in cfg.eval.teacher_ddim_steps}
    names[f"student LCM-{cfg.eval.lcm_steps}"] = "cd_rm_mg"
    return {
        label: {m: metrics[key][m]["mean"] for m in QUALITY_METRICS if m in metrics[key]}
        for label, key in names.items()
        if key in metrics
    }


def time_samplers(samplers: dict, clips: int, repeats: int, ddim_steps: list[int]) -> list[dict]:
    seconds = interleaved(samplers, repeats, warmup=1)
    base = seconds[f"teacher DDIM-{max(ddim_steps)}"]  # the slowest teacher: the reference
    rows = []
    for name, s in seconds.items():
        rows.append(
            {
                "sampler": name,
                "network_calls": network_calls(name),
                "s_per_clip": s / clips,
                "speedup_vs_teacher": base / s,
            }
        )
    return rows


def toy_rows(cfg: Config, args) -> list[dict]:
    torch.manual_seed(0)
    teacher, text = build_teacher(cfg)
    teacher.eval()
    if cfg.net.channels_last:
        teacher = teacher.to(memory_format=torch.channels_last)
    student = make_student(teacher, seed=0).eval()
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(cfg.schedule.num_train_timesteps, cfg.schedule.solver_steps)
    b = args.toy_batch
    shape = (b, 3, cfg.data.frames, cfg.data.length)
    tokens = torch.zeros(b, 4, dtype=torch.long)
    with torch.no_grad():
        context, empty = text(tokens), text.empty(b)
    calls = sampler_calls([STUDENT_STEPS, PAPER_STUDENT_STEPS], args.ddim_steps)
    samplers = make_samplers(student, teacher, schedule, grid, cfg, shape, context, empty, calls)
    return time_samplers(samplers, b, args.repeats, args.ddim_steps)


def unet3d_rows(cfg: Config, args) -> tuple[list[dict], dict]:
    from diffusers import UNet3DConditionModel

    from papers.t2v_turbo_v2.paper_scale import UNet3DEps

    w = args.unet_width
    torch.manual_seed(0)
    unet = UNet3DConditionModel(
        sample_size=args.unet_size,
        in_channels=4,
        out_channels=4,
        down_block_types=("CrossAttnDownBlock3D",) * 3 + ("DownBlock3D",),
        up_block_types=("UpBlock3D",) + ("CrossAttnUpBlock3D",) * 3,
        block_out_channels=(w, 2 * w, 4 * w, 4 * w),
        layers_per_block=2,
        cross_attention_dim=cfg.paper_scale.text_dim,
        attention_head_dim=args.unet_heads,  # diffusers reads it as the number of heads
        norm_num_groups=UNET3D_NORM_GROUPS,
    )
    teacher = UNet3DEps(unet, cfg.net.cond_embed_dim, cfg.net.use_motion_cond).eval()
    student = make_student(teacher, seed=0).eval()
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(cfg.schedule.num_train_timesteps, cfg.schedule.solver_steps)
    shape = (1, 4, args.unet_frames, args.unet_size, args.unet_size)
    context = torch.randn(1, UNET3D_TEXT_TOKENS, cfg.paper_scale.text_dim)
    empty = torch.zeros_like(context)
    calls = sampler_calls([STUDENT_STEPS, PAPER_STUDENT_STEPS], args.ddim_steps)
    samplers = make_samplers(student, teacher, schedule, grid, cfg, shape, context, empty, calls)
    model = {
        "block_out_channels": [w, 2 * w, 4 * w, 4 * w],
        "attention_heads": args.unet_heads,
        "parameters": sum(p.numel() for p in unet.parameters()),
        "latent_shape": list(shape),
    }
    return time_samplers(samplers, 1, args.unet_repeats, args.ddim_steps), model


def markdown(rows: list[dict], reference: str, quality: dict | None = None) -> str:
    quality = quality or {}
    lines = [
        f"| sampler | network calls | s / clip | speed-up vs {reference} | acc (toy) | FD (toy) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = quality.get(r["sampler"], {})
        speed = f"{r['speedup_vs_teacher']:.1f}x"
        acc = f"{q['acc']:.3f}" if "acc" in q else "-"
        fd = f"{q['FD']:.2f}" if "FD" in q else "-"
        lines.append(
            f"| {r['sampler']} | {r['network_calls']} | {r['s_per_clip']:.4g} | {speed} | "
            f"{acc} | {fd} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toy-batch", type=int, default=20, help="toy clips per sampler call")
    parser.add_argument("--ddim-steps", type=int, nargs="+", default=[50, 4])
    parser.add_argument("--repeats", type=int, default=5, help="toy timing rounds (median)")
    parser.add_argument("--unet-width", type=int, default=64, help="first block width (320: real)")
    parser.add_argument("--unet-heads", type=int, default=8, help="attention heads (64: real)")
    parser.add_argument("--unet-frames", type=int, default=8)
    parser.add_argument("--unet-size", type=int, default=16, help="latent side (px / 8)")
    parser.add_argument("--unet-repeats", type=int, default=1)
    parser.add_argument("--skip-unet3d", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if min(args.toy_batch, args.repeats, args.unet_repeats, *args.ddim_steps) < 1:
        parser.error("batch, repeats and steps must be >= 1")
    if args.unet_width % UNET3D_NORM_GROUPS or args.unet_width % args.unet_heads:
        parser.error(f"--unet-width must be a multiple of {UNET3D_NORM_GROUPS} and of --unet-heads")
    torch.set_num_threads(1)
    cfg: Config = compose("t2v_turbo_v2", "toy")

    reference = f"teacher DDIM-{max(args.ddim_steps)}"  # DDIM-50 by default
    results: dict = {"target_speedup": TARGET_SPEEDUP, "reference": reference}
    quality = toy_quality(REPO_ROOT / "papers" / "t2v_turbo_v2" / "results" / "toy.json", cfg)
    results["toy"] = {"clips_per_call": args.toy_batch, "rows": toy_rows(cfg, args)}
    results["toy"]["quality"] = quality
    print(f"toy SpaceTimeUNet, {args.toy_batch} clips per call, one thread")
    print(markdown(results["toy"]["rows"], reference, quality))
    if not args.skip_unet3d:
        rows, model = unet3d_rows(compose("t2v_turbo_v2", "paper"), args)
        results["unet3d"] = {"model": model, "rows": rows}
        print(
            f"\nUNet3DConditionModel {model['block_out_channels']} "
            f"({model['parameters'] / 1e6:.0f} M parameters), latent {model['latent_shape']}"
        )
        print(markdown(rows, reference))
    for scale in ("toy", "unet3d"):
        rows = {r["sampler"]: r for r in results.get(scale, {}).get("rows", [])}
        key = f"student LCM-{STUDENT_STEPS}"
        if key in rows:
            speedup = rows[key]["speedup_vs_teacher"]
            results[f"{scale}_meets_target"] = speedup >= TARGET_SPEEDUP
            print(f"{scale}: LCM-4 {speedup:.1f}x faster than {reference} (target >= 10x)")
    write_benchmark("t2v_turbo_v2", results, argv, args.out)
    return results


if __name__ == "__main__":
    main()
