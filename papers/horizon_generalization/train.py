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

import functools
import importlib.util
from pathlib import Path

import numpy as np
import torch

from papers.horizon_generalization.claims import LABELS, REAL_LABELS, UNTRAINED
from papers.horizon_generalization.config import CUSTOM_MAZE, Config, LayoutConfig
from papers.horizon_generalization.data import maze_from_rows, random_trajectories, sample_hindsight
from papers.horizon_generalization.env import Grid, make_grid
from papers.horizon_generalization.evaluate import evaluate, make_policy, oracle_q, rollout
from papers.horizon_generalization.method import Critic, categorical_accuracy, infonce_loss
from papers.horizon_generalization.point_maze import (
    PointMaze,
    evaluate_maze,
    exploratory_trajectories,
    farthest_pair,
    make_point_maze,
    maze_rollout,
)
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

# The real rung (configs/horizon_generalization/real.yaml): PointMaze's maze maps, checked by
# shared.entry before any work.
REAL_ASSETS = ("point_maze",)
POINT_MAZE = "point_maze"  # LayoutConfig.layout of a gymnasium-robotics PointMaze map

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


def maze_key(setting: LayoutConfig) -> tuple:
    """The settings that define a ``layout: point_maze`` maze and its decision model."""
    return (
        setting.maze,
        setting.tiles_per_cell,
        setting.speed,
        setting.action_repeat,
        setting.gain,
        tuple(setting.maze_rows) if setting.maze == CUSTOM_MAZE else None,
    )


def point_maze_of(setting: LayoutConfig) -> PointMaze:
    """The PointMaze of a ``layout: point_maze`` setting (built once per process)."""
    return make_point_maze(*maze_key(setting))


@functools.lru_cache(maxsize=2)
def _maze_trajectories(
    key: tuple, n_trajectories: int, length: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return exploratory_trajectories(
        make_point_maze(*key), n_trajectories, length, np.random.default_rng([seed, 0])
    )


def maze_trajectories(
    setting: LayoutConfig, n_trajectories: int, length: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's exploratory data in the maze (the critics of one seed share it: cached)."""
    return _maze_trajectories(maze_key(setting), n_trajectories, length, seed)


def _mazes(cfg: Config) -> dict[str, LayoutConfig]:
    return {
        name: cfg.layouts[name]
        for name in cfg.active_layouts
        if cfg.layouts[name].layout == "point_maze"
    }


def real_assets(cfg: Config) -> tuple[str, ...]:
    """maps.py's asset, unless every active maze is a user's own (maze=CUSTOM)."""
    own = all(layout.maze == CUSTOM_MAZE for layout in _mazes(cfg).values())
    return () if own and _mazes(cfg) else REAL_ASSETS


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before any training: a user's maze rows (maze=CUSTOM) are checked, each
    problem naming the layout's key."""
    problems = []
    for name, layout in _mazes(cfg).items():
        if layout.maze != CUSTOM_MAZE:
            continue
        try:
            maze_from_rows(list(layout.maze_rows), f"layouts.{name}.maze_rows")
        except ValueError as err:
            problems.append(str(err))
    return problems


def real_preflight(cfg: Config) -> list[str]:
    """What the real rung needs besides its asset: MuJoCo and gymnasium-robotics."""
    problems = []
    for module in ("mujoco", "gymnasium_robotics"):
        if importlib.util.find_spec(module) is None:
            problems.append(f"{module} is not installed: pip install -e '.[paper-light]'")
    return problems


def layout_bins(setting: LayoutConfig, cfg: Config) -> dict[str, list[float]]:
    """The success bins of a layout: its own ``bins``, else ``eval.bins``."""
    return setting.bins or cfg.eval.bins


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
    d = cfg.data
    bins = layout_bins(setting, cfg)
    maze = point_maze_of(setting) if setting.layout == POINT_MAZE else None
    grid = maze.tiles if maze else make_grid(setting.layout, setting.size, setting.wall_length)
    metrics: dict[str, float] = {}
    if method == "oracle":
        q = oracle_q(grid)
    else:
        if maze is None:
            states, actions = random_trajectories(
                grid, d.n_trajectories, d.length, np.random.default_rng([seed, 0])
            )
        else:
            states, actions, cells = maze_trajectories(setting, d.n_trajectories, d.length, seed)
            # How near the training goals are: maze-cell BFS distance of 10 000 hindsight pairs
            # drawn exactly as the batches are (same trajectories, offsets), by bin.
            s_cell, _, g_cell, _ = sample_hindsight(
                cells, actions, 10_000, np.random.default_rng([seed, 2]), d.gamma, d.max_offset
            )
            train_distance = maze.cells.distances[s_cell, g_cell]
            for name, (low, high) in bins.items():
                in_bin = (train_distance >= low) & (train_distance <= high)
                metrics[f"train_{name}_fraction"] = float(in_bin.mean())
            metrics["train_max_distance"] = float(train_distance.max())
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
        optimizer = torch.optim.Adam(critic.parameters(), lr=cfg.train.lr, foreach=True)
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
    common = dict(
        n_pairs=e.n_pairs,
        seed=e.seed_offset + seed,
        max_steps=e.max_steps,
        planner_c=e.planner_c,
        pi_pairs=e.pi_pairs,
        bins=bins,
        policy=e.policy,
        temperature=e.temperature,
    )
    if maze:
        result = evaluate_maze(
            q, maze, **common, stuck_window=e.stuck_window, compare_greedy=e.compare_greedy
        )
    else:
        result = evaluate(q, grid, **common)
    by_distance = result.pop("success_by_distance")
    metrics.update({k: float(v) for k, v in result.items()})
    metrics["far_minus_near"] = metrics["far_success"] - metrics["near_success"]
    # The drawn rollout, by the evaluation's policy (sampled: its own draws).
    choose = make_policy(e.policy, e.temperature, np.random.default_rng([e.seed_offset + seed, 2]))
    if maze:  # (x, y) at every decision between the farthest two cells
        _, paths = maze_rollout(q, maze, *farthest_pair(maze), e.max_steps, choose)
        max_distance = int(maze.cells.distances.max())
    else:
        start, goal = far_corners(grid)
        _, _, paths = rollout(q, grid, np.array([start]), np.array([goal]), e.max_steps, choose)
        max_distance = int(grid.distances.max())
    return RunOutput(
        metrics=metrics,
        curves={
            "success_by_distance": [
                float(by_distance.get(k, np.nan)) for k in range(1, max_distance + 1)
            ],
            # grid: the visited state indices (-1 padding dropped); maze: x, y per decision
            "rollout": [float(x) for x in np.asarray(paths[0]).ravel() if maze or x >= 0],
        },
    )


ALL_LABELS = {**LABELS, **REAL_LABELS}


def plot_maze_rollouts(ax, maze: PointMaze, name: str, curves, cfg: Config) -> None:
    """The maze's walls and each critic's greedy rollout between its farthest two cells."""
    h, w = maze.walls.shape
    ax.imshow(maze.walls, cmap="Greys", vmin=0, vmax=1.5, extent=(-w / 2, w / 2, -h / 2, h / 2))
    for method, c in curves.items():
        if not method.startswith(f"{name}/") or method.endswith("/oracle"):
            continue
        xy = np.asarray(c["rollout"][0], dtype=float).reshape(-1, 2)
        ax.plot(xy[:, 0], xy[:, 1], label=ALL_LABELS.get(method, method))
    start, goal = farthest_pair(maze)
    ax.plot(*start[0], "o", color="k", markersize=10)
    ax.plot(*goal[0], "*", color="k", markersize=12)
    ax.set_title(f"{name}: {cfg.eval.policy} rollouts, seed {cfg.seeds[0]} (o start, * goal)")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(frameon=False, fontsize=7, loc="lower left")


def plot(curves, cfg: Config, layouts: dict[str, LayoutConfig], path: Path) -> None:
    """Success against start-goal distance per critic, and rollouts on the grid."""
    fig, axes = plt.subplots(
        len(layouts), 2, figsize=(11, 4.2 * len(layouts)), dpi=120, squeeze=False
    )
    for row, (name, setting) in enumerate(layouts.items()):
        maze = point_maze_of(setting) if setting.layout == POINT_MAZE else None
        ax = axes[row, 0]
        for method, c in curves.items():
            if not method.startswith(f"{name}/"):
                continue
            values = np.asarray(c["success_by_distance"], dtype=float)  # (S, D)
            x = np.arange(1, values.shape[1] + 1)
            seen = np.isfinite(values).sum(axis=0)  # distances no evaluation pair had: gaps
            mean = np.where(seen > 0, np.nansum(values, axis=0) / np.maximum(seen, 1), np.nan)
            ax.plot(x, mean, marker=".", label=ALL_LABELS.get(method, method))
        near = layout_bins(setting, cfg)["near"][1]
        ax.axvspan(0.5, near + 0.5, color="grey", alpha=0.1, label=f"near (d <= {near:g})")
        unit = f"maze cells of {setting.maze}" if maze else "BFS steps"
        ax.set_xlabel(f"start-goal distance ({unit})")
        ax.set_ylabel(f"success rate of the {cfg.eval.policy} policy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{name} layout, mean over seeds {list(cfg.seeds)}")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize=7)

        ax = axes[row, 1]
        if maze:
            plot_maze_rollouts(ax, maze, name, curves, cfg)
            continue
        grid = make_grid(setting.layout, setting.size, setting.wall_length)
        ax.imshow(~grid.free, cmap="Greys", vmin=0, vmax=1.5)
        for i, (method, c) in enumerate(curves.items()):
            if not method.startswith(f"{name}/") or method.endswith("/oracle"):
                continue
            cells = grid.cells[np.asarray(c["rollout"][0], dtype=int)]
            jitter = 0.08 * (i - 1.5)
            ax.plot(
                cells[:, 1] + jitter, cells[:, 0] + jitter, label=ALL_LABELS.get(method, method)
            )
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
