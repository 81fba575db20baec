"""Horizon generalization: ``python -m papers.horizon_generalization.train [scale=...]``.

Per (layout, critic, seed): 3 000 random-policy trajectories, hindsight goals a few steps
ahead, a contrastive critic trained with symmetric InfoNCE on the B x B grid of (s, a) rows
and goal columns (brief Sec. 3.2), then the greedy policy argmax_a f(s, a, g) rolled out on
1 000 start-goal pairs, most of them farther apart than any training pair (Sec. 5). The oracle
critic -BFS(T(s, a), g) goes through the same evaluator.

The data are offline, so the critic update is a plain minibatch step and uses the shared loop
(checkpoints, resume); every batch is a pure function of (seed, step).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from papers.horizon_generalization.claims import LABELS, UNTRAINED
from papers.horizon_generalization.config import Config, LayoutConfig
from papers.horizon_generalization.data import random_trajectories, sample_hindsight
from papers.horizon_generalization.env import Grid, make_grid
from papers.horizon_generalization.evaluate import evaluate, oracle_q, rollout
from papers.horizon_generalization.method import Critic, categorical_accuracy, infonce_loss
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

CRITICS = ("l2", "mrn", "dot", "mlp")
# UNTRAINED: the l2 critic at its initialisation, evaluated without a training step (the
# claims' negative control: the evaluator and the metric architecture alone reach no far goal).
METHODS = (*CRITICS, "oracle", UNTRAINED)


def q_function(critic: Critic):
    """The evaluator's score function (N,), (N,) -> (N, actions) of a trained critic."""

    @torch.no_grad()
    def q(states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        critic.eval()
        s = torch.as_tensor(states, dtype=torch.long)
        g = torch.as_tensor(goals, dtype=torch.long)
        return critic.scores(s, g).numpy()

    return q


def far_corners(grid: Grid) -> tuple[int, int]:
    """The start and goal of the drawn rollout: the farthest pair of the layout."""
    start, goal = np.unravel_index(np.argmax(grid.distances), grid.distances.shape)
    return int(start), int(goal)


def train_one(
    layout_name: str,
    setting: LayoutConfig,
    method: str,
    seed: int,
    run_dir: Path,
    cfg: Config,
    accelerator,
    logger: MetricsLogger,
) -> RunOutput:
    """Train one critic (or take the oracle) and evaluate its greedy policy."""
    grid = make_grid(setting.layout, setting.size, setting.wall_length)
    metrics: dict[str, float] = {}
    if method == "oracle":
        q = oracle_q(grid)
    else:
        d = cfg.data
        states, actions = random_trajectories(
            grid, d.n_trajectories, d.length, np.random.default_rng([seed, 0])
        )
        seed_everything(seed)
        c = cfg.critic
        critic = Critic(
            "l2" if method == UNTRAINED else method,
            grid.n_states,
            grid.n_actions,
            repr_dim=c.repr_dim,
            hidden=c.hidden,
            n_hidden_layers=c.n_hidden_layers,
            mrn_chunks=c.mrn_chunks,
            init=c.init,
        )
        optimizer = torch.optim.Adam(critic.parameters(), lr=cfg.train.lr)
        critic, optimizer = accelerator.prepare(critic, optimizer)

        def next_batch(step: int) -> tuple[torch.Tensor, ...]:
            rng = np.random.default_rng([seed, step, 1])
            s, a, g, _ = sample_hindsight(
                states, actions, setting.batch_size, rng, d.gamma, d.max_offset
            )
            return tuple(torch.as_tensor(x, dtype=torch.long) for x in (s, a, g))

        def compute_loss(critic, batch):
            logits = critic.grid_logits(*batch)  # (B, B): L_ij = f(s_i, a_i, g_j)
            t = cfg.train
            loss = infonce_loss(logits, t.loss, t.resubstitution, t.logsumexp_penalty)
            return loss, {"accuracy": float(categorical_accuracy(logits.detach()))}

        fit(
            model=critic,
            optimizer=optimizer,
            accelerator=accelerator,
            max_steps=0 if method == UNTRAINED else setting.steps,
            loop=cfg.loop,
            run_dir=run_dir,
            next_batch=next_batch,
            compute_loss=compute_loss,
            logger=logger,
            tags={"layout": layout_name, "method": method, "seed": seed},
            progress=cfg.runtime.progress,
            desc=f"{layout_name}/{method} s{seed}",
        )
        accelerator.free_memory()
        critic = accelerator.unwrap_model(critic)
        q = q_function(critic)
        with torch.no_grad():
            batch = next_batch(setting.steps)
            metrics["final_accuracy"] = float(categorical_accuracy(critic.grid_logits(*batch)))

    e = cfg.eval
    result = evaluate(
        q,
        grid,
        n_pairs=e.n_pairs,
        seed=e.seed_offset + seed,
        max_steps=e.max_steps,
        planner_c=e.planner_c,
        pi_pairs=e.pi_pairs,
        bins=e.bins,
    )
    by_distance = result.pop("success_by_distance")
    metrics.update({k: float(v) for k, v in result.items()})
    metrics["far_minus_near"] = metrics["far_success"] - metrics["near_success"]
    start, goal = far_corners(grid)
    _, _, paths = rollout(q, grid, np.array([start]), np.array([goal]), e.max_steps)
    max_distance = int(grid.distances.max())
    return RunOutput(
        metrics=metrics,
        curves={
            "success_by_distance": [
                float(by_distance.get(k, np.nan)) for k in range(1, max_distance + 1)
            ],
            "rollout": [float(x) for x in np.asarray(paths[0]).ravel() if x >= 0],
        },
    )


def plot(curves, cfg: Config, layouts: dict[str, LayoutConfig], path: Path) -> None:
    """Success against start-goal distance per critic, and rollouts on the grid."""
    fig, axes = plt.subplots(
        len(layouts), 2, figsize=(11, 4.2 * len(layouts)), dpi=120, squeeze=False
    )
    for row, (name, setting) in enumerate(layouts.items()):
        grid = make_grid(setting.layout, setting.size, setting.wall_length)
        ax = axes[row, 0]
        for method, c in curves.items():
            if not method.startswith(f"{name}/"):
                continue
            values = np.asarray(c["success_by_distance"], dtype=float)  # (S, D)
            x = np.arange(1, values.shape[1] + 1)
            seen = np.isfinite(values).sum(axis=0)  # distances no evaluation pair had: gaps
            mean = np.where(seen > 0, np.nansum(values, axis=0) / np.maximum(seen, 1), np.nan)
            ax.plot(x, mean, marker=".", label=LABELS.get(method, method))
        ax.axvspan(0.5, 5.5, color="grey", alpha=0.1, label="near (d <= 5)")
        ax.set_xlabel("start-goal distance (BFS steps)")
        ax.set_ylabel("success rate of the greedy policy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{name} layout, mean over seeds {list(cfg.seeds)}")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=7)

        ax = axes[row, 1]
        ax.imshow(~grid.free, cmap="Greys", vmin=0, vmax=1.5)
        for i, (method, c) in enumerate(curves.items()):
            if not method.startswith(f"{name}/") or method.endswith("/oracle"):
                continue
            cells = grid.cells[np.asarray(c["rollout"][0], dtype=int)]
            jitter = 0.08 * (i - 1.5)
            ax.plot(cells[:, 1] + jitter, cells[:, 0] + jitter, label=LABELS.get(method, method))
        start, goal = far_corners(grid)
        for cell, marker in ((grid.cells[start], "o"), (grid.cells[goal], "*")):
            ax.plot(cell[1], cell[0], marker, color="k", markersize=10)
        ax.set_title(f"{name}: greedy rollouts, seed {cfg.seeds[0]} (o start, * goal)")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(frameon=False, fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    check_names("active_layouts", cfg.active_layouts, cfg.layouts)
    layouts = {name: cfg.layouts[name] for name in cfg.active_layouts}
    for name, setting in layouts.items():
        check_names(f"methods of layout {name}", setting.methods, METHODS)
    out_dir = Path(out_dir)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    runs = [
        f"{name}/{m}"
        for name, setting in layouts.items()
        for m in cfg.methods
        if not setting.methods or m in setting.methods
    ]

    def one(run_name: str, seed: int, run_dir: Path) -> RunOutput:
        layout_name, method = run_name.split("/")
        return train_one(
            layout_name, layouts[layout_name], method, seed, run_dir, cfg, accelerator, logger
        )

    results, curves = run_grid(
        runs,
        cfg.seeds,
        out_dir,
        one,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    if accelerator.is_main_process:
        plot(curves, cfg, layouts, out_dir / "success_by_distance.png")
    return results


if __name__ == "__main__":
    main("horizon_generalization")
