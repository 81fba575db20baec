"""ResDex toy: ``python -m papers.resdex.train [scale=smoke|toy|paper]``.

Per seed (brief Sec. 5.3): 48 training and 48 unseen objects; k-means on the training
objects' geometry features picks K = 4 representatives; one geometry-blind base policy is
trained by PPO on each (once per (style, seed), reused by every run that needs it, under
``<run folder>/bases/``). Then, on all training objects, with the same budget:

* ``resdex``: the hyper-policy over the 4 frozen experts (mixture logits + residual);
* ``scratch``: PPO from scratch with the full observation (geometry included);
* ``single_residual``: one expert (the "power" representative's) + residual, K = 1;
* ``base_<style>``: each expert alone (no further training).

Every run is evaluated with deterministic means (512 envs x 3 episodes) on training and
unseen objects at iterations 20 and 40; learning curves on the training objects every 5
iterations; ResDex's mean mixture weights per object style at the end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from papers.resdex.claims import LABELS, PLOT
from papers.resdex.config import STYLES, Config, PPOConfig
from papers.resdex.data import (
    ObjectPool,
    make_objects,
    representative_objects,
    required_paths,
)
from papers.resdex.env import DynamicsParams, KinematicDexGrasp
from papers.resdex.model import ActorCritic, HyperPolicy
from papers.resdex.ppo import train_ppo
from shared import preflight as preflight_lib
from shared.entry import main
from shared.experiment import RunOutput, check_names, map_jobs, run_grid
from shared.logger import MetricsLogger
from shared.plotting import plt
from shared.records import Results, read_json, write_json
from shared.seeding import seed_everything

MULTI_OBJECT = ("resdex", "scratch", "single_residual")
BASE_METHODS = tuple(f"base_{s}" for s in STYLES)
METHODS = (*MULTI_OBJECT, *BASE_METHODS)


def preflight(cfg: Config) -> list[str]:
    """What the paper scale (Isaac Gym + DexGraspNet, Sec. 6) needs and cannot find."""
    problems: list[str] = []
    if cfg.env.backend == "isaac":
        problems += preflight_lib.missing_packages(
            {"isaacgym": "Isaac Gym Preview 4, an NVIDIA download, not on PyPI"}
        )
        problems += preflight_lib.missing_paths(
            {"data.root": cfg.data.root}, hint=" (a local DexGraspNet copy, see README)"
        )
        if cfg.data.root and Path(cfg.data.root).exists():
            problems += [
                f"{what} missing at {path}"
                for what, path in required_paths(cfg.data.root).items()
                if not path.exists()
            ]
    elif cfg.env.backend == "mujoco":
        problems += preflight_lib.missing_packages(
            {
                "mujoco": "pip install mujoco",
                "gymnasium_robotics": "pip install gymnasium-robotics",
            }
        )
    return problems


# ------------------------------------------------------------------ objects and experts
def experts_of(cfg: Config, seed: int) -> tuple:
    """Objects of ``seed`` and the representatives, ordered by their grasp style so that
    expert i is the one whose representative has style i when k-means recovers the styles."""
    e = cfg.env
    objects = make_objects(
        seed, e.per_style, e.feature_dim, e.size_low, e.size_high, e.feature_scale
    )
    reps = representative_objects(
        objects.train.feature.numpy(), cfg.base.k, seed, cfg.base.kmeans_restarts
    )
    styles = objects.train.style[torch.as_tensor(reps)].numpy()
    order = np.argsort(styles, kind="stable")
    return objects, reps[order], styles[order]


def dynamics(cfg: Config) -> DynamicsParams:
    return DynamicsParams(episode_steps=cfg.env.episode_steps)


def make_policy(obs_dim: int, out_dim: int, ppo: PPOConfig) -> ActorCritic:
    return ActorCritic(obs_dim, out_dim, ppo.hidden, ppo.init_std, ppo.obs_clip)


@torch.no_grad()
def evaluate(
    agent: torch.nn.Module,
    pool: ObjectPool,
    cfg: Config,
    seed: int,
    episodes: int,
    mixture: bool = False,
) -> dict[str, object]:
    """Success rate of the deterministic means on ``pool`` (env i plays object i mod M, then
    the next ones), and, with ``mixture``, the mean mixture weights per object style (S, K)."""
    env = KinematicDexGrasp(pool, cfg.eval.num_envs, dynamics(cfg), object_mode="cycle")
    obs, _ = env.reset(seed=cfg.eval.seed_offset + seed)
    agent.eval()
    successes = []
    k = getattr(agent, "k", 0)
    weight_sum = torch.zeros(len(STYLES), max(k, 1))
    weight_count = torch.zeros(len(STYLES), 1)
    for _ in range(episodes * cfg.env.episode_steps):
        u = agent.mean(obs)
        if mixture:
            style = pool.style[env.object_index]
            weights = torch.softmax(u[:, :k], dim=-1)
            weight_sum.index_add_(0, style, weights)
            weight_count.index_add_(0, style, torch.ones(len(style), 1))
        obs, _, terminated, truncated, info = env.step(agent.to_action(obs, u))
        done = terminated | truncated
        successes.append(info["success"][done].float())
    result: dict[str, object] = {"success": float(torch.cat(successes).mean())}
    if mixture:
        result["mixture"] = (weight_sum / weight_count.clamp(min=1)).tolist()
    return result


def eval_points(cfg: Config, ppo: PPOConfig) -> set[int]:
    every = {i for i in range(cfg.eval.every, ppo.iterations + 1, cfg.eval.every)}
    return every | {i for i in cfg.eval.at if i <= ppo.iterations} | {ppo.iterations}


def train_and_evaluate(
    agent: torch.nn.Module,
    train_pool: ObjectPool,
    pools: dict[str, ObjectPool],
    cfg: Config,
    ppo: PPOConfig,
    seed: int,
    run_dir: Path,
    logger: MetricsLogger,
    tags: dict,
) -> RunOutput:
    """PPO on ``train_pool``; success on every pool at ``eval.at``, a curve on ``train``."""
    env = KinematicDexGrasp(train_pool, ppo.num_envs, dynamics(cfg), seed=seed)
    mixture = isinstance(agent, HyperPolicy)

    def evaluate_at(model: torch.nn.Module, iteration: int) -> dict[str, float]:
        metrics: dict[str, float] = {}
        if iteration in cfg.eval.at or iteration == ppo.iterations:
            for name, pool in pools.items():
                out = evaluate(
                    model, pool, cfg, seed, cfg.eval.episodes, mixture and name == "train"
                )
                metrics[f"{name}_it{iteration}"] = out["success"]
                if "mixture" in out and iteration == ppo.iterations:
                    for style, row in zip(STYLES, out["mixture"], strict=True):
                        for j, w in enumerate(row):
                            metrics[f"mixture_{style}_{j}"] = w
        else:
            metrics["train_curve"] = evaluate(
                model, pools["train"], cfg, seed, cfg.eval.curve_episodes
            )["success"]
        return metrics

    history = train_ppo(
        agent,
        env,
        ppo,
        run_dir,
        seed=seed,
        evaluate=evaluate_at,
        eval_iterations=eval_points(cfg, ppo),
        logger=logger,
        tags=tags,
        progress=cfg.runtime.progress,
        desc=" ".join(f"{v}" for v in tags.values()),
    )
    metrics: dict[str, float] = {}
    curve_x, curve_y = [], []
    for record in history:
        step = record["step"]
        for key, value in record.items():
            if key.startswith(("train_it", "unseen_it", "own_it", "mixture_")):
                metrics[key] = float(value)
        train_key = f"train_it{step}"
        curve_x.append(float(step))
        curve_y.append(float(record.get(train_key, record.get("train_curve", np.nan))))
    last = ppo.iterations
    if f"unseen_it{last}" in metrics:
        metrics["gap_final"] = metrics[f"train_it{last}"] - metrics[f"unseen_it{last}"]
    for it in cfg.eval.at:
        if f"unseen_it{it}" in metrics:
            metrics[f"unseen_minus_train_it{it}"] = (
                metrics[f"unseen_it{it}"] - metrics[f"train_it{it}"]
            )
    return RunOutput(metrics=metrics, curves={"iteration": curve_x, "train_success": curve_y})


def base_output(
    cfg: Config, seed: int, expert: int, out_dir: Path, logger: MetricsLogger
) -> RunOutput:
    """Train (or read back) expert ``expert`` of ``seed`` on its representative object."""
    objects, reps, styles = experts_of(cfg, seed)
    run_dir = out_dir / "bases" / f"expert{expert}-s{seed}"
    record_path = run_dir / "base.json"
    if record_path.exists():
        saved = read_json(record_path)
        return RunOutput(saved["metrics"], saved["curves"])
    seed_everything(seed)
    torch.manual_seed(1000 * seed + expert)
    env_probe = KinematicDexGrasp(objects.train, 1)
    agent = make_policy(env_probe.base_obs_dim, env_probe.action_dim, cfg.base.ppo)
    own = objects.train.subset([int(reps[expert])])
    pools = {"own": own, "train": objects.train, "unseen": objects.unseen}
    output = train_and_evaluate(
        agent,
        own,
        pools,
        cfg,
        cfg.base.ppo,
        seed,
        run_dir,
        logger,
        {"method": f"expert{expert}", "seed": seed},
    )
    output.metrics["representative_style"] = float(styles[expert])
    write_json({"metrics": output.metrics, "curves": output.curves}, record_path)
    return output


def load_expert(
    cfg: Config, seed: int, expert: int, out_dir: Path, logger: MetricsLogger
) -> ActorCritic:
    base_output(cfg, seed, expert, out_dir, logger)  # trains it if needed
    from shared.checkpoint import load_checkpoint

    state = load_checkpoint(out_dir / "bases" / f"expert{expert}-s{seed}" / "checkpoint.pt")
    agent = make_policy(12, 7, cfg.base.ppo)
    agent.load_state_dict(state["model"])
    return agent


def experts_used(method: str, seed: int, styles: np.ndarray, cfg: Config) -> list[int]:
    """The base experts a method reads: a ``base_<style>`` row reports the expert whose
    representative has that style, ResDex mixes all k, the single-expert baseline takes the
    one of ``single_expert_style`` (expert 0 when k-means found no such representative), and
    PPO from scratch none."""
    if method == "scratch":
        return []
    if method == "resdex":
        return list(range(cfg.base.k))
    style = STYLES.index(
        method.removeprefix("base_") if method in BASE_METHODS else cfg.single_expert_style
    )
    matches = np.flatnonzero(styles == style)
    if matches.size:
        return [int(matches[0])]
    if method in BASE_METHODS:
        raise RuntimeError(
            f"seed {seed}: no k-means representative has style {STYLES[style]!r} "
            f"(representative styles {styles.tolist()})"
        )
    return [0]


def train_one(
    method: str, seed: int, run_dir: Path, cfg: Config, out_dir: Path, logger: MetricsLogger
) -> RunOutput:
    objects, reps, styles = experts_of(cfg, seed)
    if method in BASE_METHODS:
        (expert,) = experts_used(method, seed, styles, cfg)
        return base_output(cfg, seed, expert, out_dir, logger)
    pools = {"train": objects.train, "unseen": objects.unseen}
    probe = KinematicDexGrasp(objects.train, 1)
    if method == "scratch":
        seed_everything(seed)
        agent = make_policy(probe.obs_dim, probe.action_dim, cfg.hyper)
    else:
        bases = [
            load_expert(cfg, seed, i, out_dir, logger)
            for i in experts_used(method, seed, styles, cfg)
        ]
        seed_everything(seed)
        h = cfg.hyper
        agent = HyperPolicy(
            bases, probe.obs_dim, probe.action_dim, h.hidden, h.init_std, h.obs_clip
        )
    output = train_and_evaluate(
        agent,
        objects.train,
        pools,
        cfg,
        cfg.hyper,
        seed,
        run_dir,
        logger,
        {"method": method, "seed": seed},
    )
    if method == "resdex":  # weight of the expert whose representative has the object's style
        matching = [
            output.metrics[f"mixture_{STYLES[s]}_{j}"]
            for j, s in enumerate(styles)
            if f"mixture_{STYLES[s]}_{j}" in output.metrics
        ]
        output.metrics["matching_weight"] = float(np.mean(matching)) if matching else float("nan")
    return output


# ------------------------------------------------------------------ plots
def plot(curves: dict, results: Results, cfg: Config, path: Path) -> None:
    """Learning curves (training objects) and ResDex's mixture weights per object style."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    ax = axes[0]
    for method, c in curves.items():
        if method not in MULTI_OBJECT:
            continue
        y = np.asarray(c["train_success"], dtype=float)  # (S, T)
        x = np.asarray(c["iteration"][0], dtype=float)
        mean, std = y.mean(0), y.std(0)
        (line,) = ax.plot(x, mean, marker=".", label=LABELS.get(method, method))
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("PPO iteration (256 envs x 40 steps)")
    ax.set_ylabel("success on training objects (deterministic)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"learning curves, mean ± std over seeds {list(cfg.seeds)}")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8)
    ax = axes[1]
    if "resdex" in results:
        k = cfg.base.k
        matrix = np.array(
            [[np.mean(results["resdex"][f"mixture_{s}_{j}"]) for j in range(k)] for s in STYLES]
        )
        image = ax.imshow(matrix, vmin=0, vmax=1, cmap="viridis")
        for (i, j), w in np.ndenumerate(matrix):
            ax.text(j, i, f"{w:.2f}", ha="center", va="center", color="w" if w < 0.5 else "k")
        ax.set_xticks(
            range(k), [f"expert {j + 1}\n({STYLES[j]} rep.)" for j in range(k)], fontsize=7
        )
        ax.set_yticks(range(len(STYLES)), [f"{s} objects" for s in STYLES])
        ax.set_title("ResDex mixture weights softmax(l), final")
        fig.colorbar(image, ax=ax, fraction=0.046)
    else:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    if cfg.env.backend == "mujoco":
        from papers.resdex.mujoco_env import run_mujoco

        return run_mujoco(cfg, Path(out_dir))
    if cfg.env.backend == "isaac":
        # Isaac Gym (an NVIDIA download, not on PyPI) has no backend here; the paper config
        # names it so that preflight states what the paper's own setting needs.
        raise ValueError(
            "env.backend=isaac has no implementation in this repository; run "
            "env.backend=mujoco (Adroit) or kinematic, or add a backend as "
            "papers/resdex/README.md describes"
        )
    out_dir = Path(out_dir)
    torch.set_num_threads(cfg.runtime.num_threads)
    logger = MetricsLogger(out_dir / "metrics.jsonl")
    # The experts first (two at a time with runtime.workers=2): the grid's runs read them back.
    styles_of = {seed: experts_of(cfg, seed)[2] for seed in cfg.seeds}
    experts = {
        (seed, expert)
        for seed in cfg.seeds
        for method in cfg.methods
        for expert in experts_used(method, seed, styles_of[seed], cfg)
    }
    map_jobs(
        lambda seed, expert: base_output(cfg, seed, expert, out_dir, logger),
        sorted(experts),
        desc="experts",
        progress=cfg.runtime.progress,
    )
    results, curves = run_grid(
        list(cfg.methods),
        list(cfg.seeds),
        out_dir,
        lambda method, seed, run_dir: train_one(method, seed, run_dir, cfg, out_dir, logger),
        progress=cfg.runtime.progress,
        logger=logger,
    )
    plot(curves, results, cfg, out_dir / PLOT)
    return results


if __name__ == "__main__":
    main("resdex")
