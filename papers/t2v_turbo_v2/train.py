"""T2V-Turbo-v2 toy experiment: teacher DDIM baselines and the students cd, cd_rm, cd_rm_mg.

    python -m papers.t2v_turbo_v2.prepare          # once: the cached teacher, RMs, classifier
    python -m papers.t2v_turbo_v2.train            # toy: Algorithm 1 records, 3 students x 3 seeds
    python -m papers.t2v_turbo_v2.train scale=smoke

Algorithm 1 (records with teacher outputs and motion-energy gradients) runs once per run
folder and is cached there; every (method, seed) student is then trained with Algorithm 2
(own loop, checkpointed every ``student.checkpoint_every`` steps, resumable) and evaluated on
540 samples (4 LCM steps). Paper scale: see ``paper_scale.py``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy import linalg  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from papers.t2v_turbo_v2 import method as M  # noqa: E402
from papers.t2v_turbo_v2.config import (  # noqa: E402
    GS0_CHECK,
    PAPER_SCALE,
    STUDENTS,
    TEACHER_PREFIX,
    Config,
)
from papers.t2v_turbo_v2.data import (  # noqa: E402
    N_PROMPTS,
    centroid_direction,
    config_split,
    prompt_name,
    short_caption,
)
from papers.t2v_turbo_v2.prepare import (  # noqa: E402
    assets_manifest_files,
    load_assets,
    model_key_problems,
    prepare_only_problems,
    video_rm_input,
)
from papers.t2v_turbo_v2.student import train_student  # noqa: E402
from shared import checkpoint  # noqa: E402
from shared.entry import main  # noqa: E402
from shared.experiment import RunOutput, map_jobs, run_grid  # noqa: E402
from shared.logger import MetricsLogger  # noqa: E402
from shared.records import read_json, write_json  # noqa: E402

PLOT_NAME = "samples.png"


def preflight(cfg: Config) -> list[str]:
    """Paper scale: what is missing (teacher folder, records), named before any work."""
    from papers.t2v_turbo_v2.paper_scale import preflight as paper_preflight

    return paper_preflight(cfg)


def data_preflight(cfg: Config) -> list[str]:
    """The toy (paper scale: ``preflight``), before any work: the keys the committed models
    were built from against their manifest (``prepare.model_key_problems``), and Algorithm 1's
    record counts against the clips of the training set; at every scale, the prepare-only keys
    (``prepare.prepare_only_problems``), which this command never reads."""
    problems = prepare_only_problems(cfg)
    if cfg.scale == PAPER_SCALE:
        return problems
    problems += model_key_problems(cfg)
    if any(m in (*STUDENTS, GS0_CHECK) for m in cfg.methods):
        problems += record_count_problems(config_split(cfg.data, "train"), cfg)
    return problems


# ------------------------------------------------------------------ Algorithm 1 on the toy
def record_clips(data, cfg: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1's clips of the training set ``data``: the first ``preprocess.n_motion``
    moving clips with a short caption, the first ``preprocess.n_other`` of the rest, and the
    mask of the moving short-caption clips."""
    p = cfg.preprocess
    moving = (data.prompt % 3 != 2) & data.is_short
    motion_idx = np.flatnonzero(moving)[: p.n_motion]
    rest = np.setdiff1d(np.arange(len(data)), motion_idx)[: p.n_other]
    return motion_idx, rest, moving


def record_count_problems(data, cfg: Config) -> list[str]:
    """A record count that the training set ``data`` cannot supply, naming its key."""
    p, n_train = cfg.preprocess, cfg.data.n_train
    motion_idx, rest, moving = record_clips(data, cfg)
    problems = []
    if len(motion_idx) < p.n_motion:
        problems.append(
            f"preprocess.n_motion={p.n_motion}: the training set (data.n_train={n_train}) holds "
            f"{int(moving.sum())} moving clips with a short caption; ask for at most that many "
            "or raise data.n_train"
        )
    if len(rest) < p.n_other:
        problems.append(
            f"preprocess.n_other={p.n_other}: the training set (data.n_train={n_train}) has "
            f"{len(data) - len(motion_idx)} clips besides the {len(motion_idx)} motion ones; ask "
            "for at most that many or raise data.n_train"
        )
    return problems


def build_records(
    cfg: Config, models: dict, schedule: M.NoiseSchedule, grid: M.SolverGrid, progress: bool
) -> dict:
    """Run C: 1,000 motion clips (moving sprite, short caption, indices in the noisy half) and
    2,000 other clips (indices in the clean half), from the training set."""
    p = cfg.preprocess
    data = config_split(cfg.data, "train")
    problems = record_count_problems(data, cfg)  # refused at start (data_preflight)
    if problems:
        raise ValueError("; ".join(problems))
    motion_idx, rest, _ = record_clips(data, cfg)
    order = np.concatenate([motion_idx, rest])
    is_motion = torch.from_numpy(
        np.concatenate([np.ones(len(motion_idx), bool), np.zeros(len(rest), bool)])
    )
    clips = torch.from_numpy(data.clips[order])
    tokens = torch.from_numpy(data.tokens[order])
    gen = torch.Generator().manual_seed(p.seed)
    n = M.sample_solver_indices(is_motion, grid.n_steps, p.p_max, gen)
    eps = torch.randn(clips.shape, generator=gen)
    teacher, text = models["teacher"], models["text"]

    def batch_records(start: int) -> dict[str, torch.Tensor]:
        sl = slice(start, start + p.batch)
        with torch.no_grad():
            ctx = text(tokens[sl])
        rec = M.preprocess_records(
            teacher,
            schedule,
            grid,
            clips[sl],
            ctx,
            text.empty(len(ctx)),
            is_motion[sl],
            n[sl],
            eps[sl],
            cfg.method.temp_loss_scale,
            cfg.method.rank_k,
        )
        return {**rec, "context": ctx}

    # The noise and solver indices are drawn above, so each batch is a pure function of its
    # slice: runtime.workers processes compute them with the numbers of one.
    batches = map_jobs(
        batch_records,
        [(s,) for s in range(0, len(order), p.batch)],
        desc="Algorithm 1",
        progress=progress,
    )
    records = {k: torch.cat([b[k] for b in batches]) for k in batches[0]}
    records["is_short"] = torch.from_numpy(data.is_short[order])
    records["prompt"] = torch.from_numpy(data.prompt[order])
    return records


def load_or_build_records(cfg, models, schedule, grid, out_dir: Path) -> dict:
    path = out_dir / "records.pt"
    if path.exists():
        return checkpoint.load_checkpoint(path)
    records = build_records(cfg, models, schedule, grid, cfg.runtime.progress)
    checkpoint.save_checkpoint(records, path)
    return records


# ------------------------------------------------------------------------------ metrics
def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """``|mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2))`` (FVD stand-in)."""
    mu_a, mu_b = a.mean(0), b.mean(0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = linalg.sqrtm(cov_a @ cov_b)
    covmean = covmean.real if np.iscomplexobj(covmean) else covmean
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * covmean))


def eval_prompts(cfg: Config) -> torch.Tensor:
    return torch.arange(N_PROMPTS).repeat_interleave(cfg.eval.samples_per_prompt)


@torch.no_grad()
def evaluate(
    samples: torch.Tensor,
    prompts: torch.Tensor,
    models: dict,
    real_features: np.ndarray,
    cfg: Config,
) -> dict[str, float]:
    """acc (eval classifier, triple), dir_acc (centroid track), FD, R_vid (video RM, nats)."""
    evaluator, video_rm = models["evaluator"], models["video_rm"]
    feats = evaluator.features(samples)
    acc = (evaluator.head(feats).argmax(-1) == prompts).float().mean().item()
    dir_acc = (centroid_direction(samples, cfg.eval.dead_zone) == prompts % 3).float().mean().item()
    frames = video_rm_input(
        samples, torch.zeros(len(samples), dtype=torch.long), cfg.method.video_frames
    )
    r_vid = F.log_softmax(video_rm(frames), -1).gather(1, prompts[:, None]).mean().item()
    return {
        "acc": acc,
        "dir_acc": dir_acc,
        "FD": frechet_distance(feats.numpy().astype(np.float64), real_features),
        "R_vid": r_vid,
    }


def sample_clips(
    kind: str, student, seed: int, cfg: Config, models: dict, schedule, grid, motion_gs: float
) -> tuple[torch.Tensor, torch.Tensor]:
    prompts = eval_prompts(cfg)
    contexts = models["text"](torch.from_numpy(short_caption(prompts.numpy())))
    gen = torch.Generator().manual_seed(cfg.eval.seed + seed)
    shape = (
        (cfg.data.length,) if cfg.data.kind == "sprites1d" else (cfg.data.length, cfg.data.length)
    )
    channels = 3 if cfg.data.kind == "sprites1d" else 1
    out = []
    for s in range(0, len(prompts), cfg.eval.batch):
        ctx = contexts[s : s + cfg.eval.batch]
        b = len(ctx)
        if kind.startswith(TEACHER_PREFIX):
            clips = M.teacher_ddim_sample(
                models["teacher"],
                schedule,
                (b, channels, cfg.data.frames, *shape),
                ctx,
                models["text"].empty(b),
                int(kind.removeprefix(TEACHER_PREFIX)),
                cfg.eval.guidance,
                gen,
                clip_sample=True,
            )
        else:
            clips = M.lcm_sample(
                student,
                schedule,
                (b, channels, cfg.data.frames, *shape),
                ctx,
                cfg.eval.lcm_steps,
                grid.n_steps,
                cfg.eval.guidance,
                motion_gs,
                cfg.eval.p_inf,
                gen,
                clip_sample=True,
                cond_dim=cfg.net.cond_embed_dim,
                use_motion_cond=cfg.net.use_motion_cond,
            )
        out.append(clips)
    return torch.cat(out), prompts


def strip_indices(cfg: Config) -> list[int]:
    """One sample each of ``strip_prompts`` prompts spread over the 27 (for the PNG)."""
    chosen = np.linspace(0, N_PROMPTS - 1, cfg.eval.strip_prompts).round().astype(int)
    return [int(p) * cfg.eval.samples_per_prompt for p in chosen]


def sanity_pair(cfg: Config, models, records, schedule, grid, seed: int) -> dict[str, float]:
    """Claim 4: ``cd_rm_mg`` with motion_gs = 0 equals ``cd_rm`` bit for bit (same seed);
    with the configured motion_gs it differs (the negative control)."""
    steps = cfg.sanity_steps
    ref = train_student("cd_rm", seed, steps, cfg, models, records, schedule, grid, None, None)
    zero = train_student(
        "cd_rm_mg", seed, steps, cfg, models, records, schedule, grid, None, None, motion_gs=0.0
    )
    on = train_student("cd_rm_mg", seed, steps, cfg, models, records, schedule, grid, None, None)

    def max_diff(a, b) -> float:
        return max(
            (pa - pb).abs().max().item()
            for pa, pb in zip(a.parameters(), b.parameters(), strict=True)
        )

    return {"gs0_max_abs_diff": max_diff(ref, zero), "gs_on_max_abs_diff": max_diff(ref, on)}


# ------------------------------------------------------------------------------ plot
def plot_strips(strips: dict[str, torch.Tensor], cfg: Config, path: Path) -> None:
    """Sampled clips per variant: frames as rows, one prompt per column."""
    prompts = [i // cfg.eval.samples_per_prompt for i in strip_indices(cfg)]
    fig, axes = plt.subplots(
        1, len(strips), figsize=(2.6 * len(strips), 2.4), dpi=80, squeeze=False
    )
    for ax, (name, clips) in zip(axes[0], strips.items(), strict=True):
        clips = ((clips.clamp(-1, 1) + 1) / 2).numpy()  # (P, C, T, L)
        if clips.ndim == 5:
            clips = clips.mean(3)  # 2-D variant: column profile
        if clips.shape[1] == 1:
            clips = np.repeat(clips, 3, axis=1)
        gap = np.ones((clips.shape[2], 2, 3))
        panels = []
        for c in clips:
            panels += [c.transpose(1, 2, 0), gap]
        ax.imshow(np.concatenate(panels[:-1], axis=1), interpolation="nearest", aspect="auto")
        ax.set_title(name, fontsize=8)
        ax.set_xticks(
            [(cfg.data.length + 2) * i + cfg.data.length / 2 for i in range(len(prompts))]
        )
        ax.set_xticklabels([prompt_name(p).replace(" ", "\n") for p in prompts], fontsize=5)
        ax.set_yticks([])
        ax.set_ylabel("frame", fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------------------------ run
def claim_run_folder(out_dir: Path, asset_hashes: dict[str, str]) -> None:
    """Tie ``out_dir``'s caches (Algorithm 1 records, student checkpoints, finished runs) to
    the assets that made them: resuming on top of another teacher would mix two experiments."""
    path = out_dir / "assets.json"
    if path.exists():
        if read_json(path) != asset_hashes:
            raise ValueError(
                f"{out_dir} holds records and runs made with other toy assets (their sha256 "
                f"are in {path}) than the ones loaded now; delete the folder or choose "
                "another run folder"
            )
        return
    if (out_dir / "records.pt").exists() or (out_dir / "runs").exists():
        raise ValueError(
            f"{out_dir} holds records or runs of unknown assets (no {path.name}); delete the "
            "folder or choose another run folder"
        )
    write_json(asset_hashes, path)


def run(cfg: Config, out_dir: Path):
    if cfg.scale == PAPER_SCALE:
        from papers.t2v_turbo_v2.paper_scale import run_paper

        return run_paper(cfg, out_dir)
    torch.set_num_threads(cfg.runtime.num_threads)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(schedule.num_train_timesteps, cfg.schedule.solver_steps)
    models = load_assets(cfg)
    claim_run_folder(out_dir, assets_manifest_files(cfg))
    d = cfg.data
    held = config_split(d, "heldout")
    with torch.no_grad():
        real_features = (
            models["evaluator"].features(torch.from_numpy(held.clips)).numpy().astype(np.float64)
        )
    records = None
    if any(m in (*STUDENTS, GS0_CHECK) for m in cfg.methods):
        records = load_or_build_records(cfg, models, schedule, grid, out_dir)
    logger = MetricsLogger(out_dir / "metrics.jsonl")

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        if method == GS0_CHECK:
            return RunOutput(sanity_pair(cfg, models, records, schedule, grid, seed))
        student, gs = None, 0.0
        metrics: dict[str, float] = {}
        if method in STUDENTS:
            student = train_student(
                method,
                seed,
                cfg.student.steps,
                cfg,
                models,
                records,
                schedule,
                grid,
                run_dir,
                logger,
                progress=cfg.runtime.progress,
            )
            gs = cfg.method.motion_gs if method == "cd_rm_mg" else 0.0
        samples, prompts = sample_clips(method, student, seed, cfg, models, schedule, grid, gs)
        metrics.update(evaluate(samples, prompts, models, real_features, cfg))
        checkpoint.save_checkpoint(
            {"strip": samples[strip_indices(cfg)].contiguous()}, Path(run_dir) / "strip.pt"
        )
        return RunOutput(metrics)

    results, _ = run_grid(
        cfg.methods, cfg.seeds, out_dir, train_one, progress=cfg.runtime.progress, logger=logger
    )
    strips = {
        m: checkpoint.load_checkpoint(out_dir / "runs" / f"{m}-s{cfg.seeds[0]}" / "strip.pt")[
            "strip"
        ]
        for m in cfg.methods
        if m != GS0_CHECK
    }
    if strips:  # a run of claim 4's check alone samples nothing
        plot_strips(strips, cfg, out_dir / PLOT_NAME)
    if records is not None and records["use_motion"].any():
        g_norm = records["g"][records["use_motion"]].flatten(1).norm(dim=1)
        print(
            f"\nmotion-energy gradient |g| over {int(records['use_motion'].sum())} motion records: "
            f"mean {g_norm.mean():.3g}, median {g_norm.median():.3g}, max {g_norm.max():.3g}"
        )
    return results


if __name__ == "__main__":
    main("t2v_turbo_v2")
