"""Typed config of the horizon-generalization experiment (schema for its YAML files).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    ReadOnlyWhere,
    TrainLoopConfig,
    checked,
    require,
    require_at_most,
    require_choices,
)

# The names the code accepts, defined only here (config imports nothing of the paper: env needs
# gymnasium); env, method and evaluate import them, point_maze.ENV_IDS is keyed by MAZES (a test
# checks it).
GRID_LAYOUTS = ("open", "wall")  # env.make_grid's layouts
LAYOUT_KINDS = (*GRID_LAYOUTS, "point_maze")  # and train.POINT_MAZE
# every map gymnasium-robotics 1.4.2's maps.py ships (the DIVERSE ones mark reset / goal
# cells, free here), and CUSTOM: a user's maze, the layout's maze_rows; the keys of
# point_maze.ENV_IDS
SHIPPED_MAZES = (
    "U_MAZE",
    "MEDIUM_MAZE",
    "LARGE_MAZE",
    "OPEN",
    "EMPTY_MAZE",
    "OPEN_DIVERSE_G",
    "OPEN_DIVERSE_GR",
    "MEDIUM_MAZE_DIVERSE_G",
    "MEDIUM_MAZE_DIVERSE_GR",
    "LARGE_MAZE_DIVERSE_G",
    "LARGE_MAZE_DIVERSE_GR",
)
CUSTOM_MAZE = "CUSTOM"
MAZES = (*SHIPPED_MAZES, CUSTOM_MAZE)
LOSS_KINDS = ("forward", "backward", "symmetric")  # method.infonce_loss's kinds
INITS = ("lecun", "torch")  # method.Critic's init
HORIZON_BINS = ("near", "far")  # the bins evaluate.check_bins requires (eta = far / near)
# evaluate.make_policy's kinds: "greedy" argmax_a f(s, a, g) (brief Sec. 5), or "sampled"
# a ~ softmax_a(f(s, a, g) / temperature), the discrete form of the official stochastic
# evaluation (README, "Real data: diagnosis").
EVAL_POLICIES = ("greedy", "sampled")


@dataclass
class LayoutConfig:
    """One grid world and the training budget used on it (brief Sec. 5)."""

    # open (11 x 11 room) | wall (interior wall from the top edge) | point_maze (the real rung:
    # a gymnasium-robotics PointMaze map in MuJoCo, papers/horizon_generalization/point_maze.py)
    layout: str = checked("open", choices=LAYOUT_KINDS)
    size: int = checked(11, ge=2)  # open / wall only
    wall_length: int = checked(8, ge=1)  # wall only
    # point_maze only: the map's name in gymnasium_robotics/envs/maze/maps.py (U_MAZE,
    # MEDIUM_MAZE, LARGE_MAZE, OPEN: the wall-free 5 x 3 arena), the tile coding the critics see
    # (tiles_per_cell^2 tiles per 1 m cell), and the decision model: every decision commands
    # velocity speed (m/s) in one of four directions for action_repeat env steps (10 ms each),
    # tracked by the force
    # ctrl = clip(gain * (v_cmd - v), -1, 1).
    maze: str = checked("MEDIUM_MAZE", choices=MAZES)
    # maze=CUSTOM: your maze as rows of '#' (a 1 m wall cell) and '.' (a free cell), row 0 the
    # top (+y); rectangular, closed by walls, its free cells connected (data.maze_from_rows)
    maze_rows: list[str] | None = None
    tiles_per_cell: int = checked(3, ge=1)
    speed: float = checked(2.0, gt=0)
    action_repeat: int = checked(17, ge=1)
    gain: float = checked(1.0, gt=0)
    batch_size: int = checked(128, ge=2)  # B: the contrastive grid is B x B
    steps: int = checked(2000, ge=1)
    methods: list[str] = field(default_factory=list)  # subset of `methods`; empty: all
    # This layout's success bins (as eval.bins); empty: eval.bins. A small map (OPEN: diameter
    # 6 cells) needs its own far bin.
    bins: dict[str, list[float]] = checked(factory=dict, ge=1)


@dataclass
class DataConfig:
    """Offline random-policy data with hindsight goals (brief Sec. 5 "Data")."""

    n_trajectories: int = checked(3000, ge=1)
    length: int = checked(50, ge=1)
    gamma: float = checked(0.9, ge=0, le=1)  # goal offset k ~ Geom(1 - gamma), k >= 1
    max_offset: int | None = checked(10, ge=1)  # truncation of k (None: only the trajectory end)


@dataclass
class CriticConfig:
    """Encoders phi(s, a), psi(g) and the monolithic critic (brief Sec. 5 "Critics")."""

    repr_dim: int = checked(32, ge=1)
    hidden: int = checked(128, ge=1)
    n_hidden_layers: int = checked(2, ge=1)
    mrn_chunks: int = checked(4, ge=1)
    # Linear-layer initialisation: "lecun" as the official flax Dense layers (LeCun-uniform
    # kernels, zero biases), or "torch" (PyTorch's nn.Linear default).
    init: str = checked("lecun", choices=INITS)


@dataclass
class TrainConfig:
    """Contrastive RL critic training (brief Sec. 3.2)."""

    lr: float = checked(3e-4, gt=0)
    loss: str = checked("symmetric", choices=LOSS_KINDS)  # forward | backward | symmetric InfoNCE
    resubstitution: bool = True  # keep the positive inside the logsumexp
    logsumexp_penalty: float = checked(0.0, ge=0)


@dataclass
class EvalConfig:
    """Greedy rollouts and the invariance measures (brief Sec. 3.3, 5 "Evaluation")."""

    n_pairs: int = checked(1000, ge=1)
    seed_offset: int = checked(10_000, ge=0)  # evaluation pairs come from rng(seed_offset + seed)
    max_steps: int = checked(100, ge=1)
    planner_c: int = checked(3, ge=1)  # waypoints at exactly c steps from s
    pi_pairs: int = checked(200, ge=1, le_key="eval.n_pairs")  # of the far pairs among them
    # The rollout policy (EVAL_POLICIES): greedy argmax (brief Sec. 5) or sampled from
    # softmax(f / temperature). The official evaluator samples its actor (train.py:241
    # deterministic_eval=False); for a fixed alpha the minimiser over a discrete action set of
    # its actor loss alpha log pi - f (losses.py:324) is softmax(f / alpha), alpha starting at
    # exp(0) = 1 (train.py:189).
    policy: str = checked("greedy", choices=EVAL_POLICIES)
    temperature: float = checked(1.0, gt=0)  # sampled only
    # A failed rollout is "stuck" when its last stuck_window decisions stay in one tile (point
    # maze only; 20: the first real protocol's trap analysis, README "Real data").
    stuck_window: int = checked(20, ge=1, le_key="eval.max_steps")
    # sampled only: also roll the greedy policy out on the same pairs (greedy_* metrics), the
    # paired comparison of the two evaluation protocols on the same critics.
    compare_greedy: bool = False
    # Inclusive BFS-distance ranges of the success bins (brief Sec. 5, for the 11 x 11 room:
    # near d <= 5, mid 6-10, far d > 10); a larger layout sets its own.
    bins: dict[str, list[float]] = checked(
        factory=lambda: {"near": [1, 5], "mid": [6, 10], "far": [11, math.inf]}, ge=1
    )


@dataclass
class Config(ExperimentConfig):
    # a user's maze rows are read only by a maze=CUSTOM point_maze layout
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=("layouts.*.maze_rows",),
            where=f"a point_maze layout with maze={CUSTOM_MAZE}",
            reads=lambda layout, _: layout.layout == "point_maze" and layout.maze == CUSTOM_MAZE,
        ),
    )
    # l2 (metric) | mrn (quasimetric) | dot | mlp (monolithic) | oracle (-BFS, no training)
    # | untrained (the l2 critic at initialisation: the claims' negative control)
    methods: list[str] = field(default_factory=lambda: ["l2", "mrn", "dot", "mlp", "oracle"])
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    layouts: dict[str, LayoutConfig] = field(default_factory=dict)  # every defined layout
    active_layouts: list[str] = field(default_factory=lambda: ["open"])  # the ones run
    data: DataConfig = field(default_factory=DataConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        require_choices("active_layouts", self.active_layouts, tuple(self.layouts))
        for name in self.active_layouts:
            layout = self.layouts[name]
            if layout.layout == "point_maze" and layout.maze == CUSTOM_MAZE:
                require(
                    bool(layout.maze_rows),
                    f"layouts.{name}.maze_rows",
                    layout.maze_rows,
                    "maze=CUSTOM needs the maze's rows ('#' wall, '.' free)",
                )
            if layout.layout == "wall":  # env.make_grid: the wall leaves a gap at the bottom
                require_at_most(
                    f"layouts.{name}.wall_length",
                    layout.wall_length,
                    layout.size - 1,
                    f"layouts.{name}.size - 1 ({layout.size - 1})",
                )
            if not layout.methods:  # empty: every chosen method
                continue
            chosen = [m for m in self.methods if m in layout.methods]
            require(  # case 9: said "methods and seeds must both be non-empty"
                bool(chosen),
                "methods",
                self.methods,
                f"none of them runs on layout {name}, whose layouts.{name}.methods is "
                f"{layout.methods}",
            )
        if "mrn" in self.methods:  # method.mrn_distance: two halves in every chunk
            c = self.critic
            require(
                c.repr_dim // c.mrn_chunks >= 2,
                "critic.mrn_chunks",
                c.mrn_chunks,
                f"leaves fewer than 2 of critic.repr_dim ({c.repr_dim}) per chunk",
            )
        # evaluate.check_bins (run after training): near and far bins of [low, high] ranges
        check_bin_ranges("eval.bins", self.eval.bins)
        for name in self.active_layouts:
            if self.layouts[name].bins:
                check_bin_ranges(f"layouts.{name}.bins", self.layouts[name].bins)


def check_bin_ranges(key: str, bins: dict[str, list[float]]) -> None:
    """Named inclusive [low, high] ranges including the near and far bins."""
    missing = [name for name in HORIZON_BINS if name not in bins]
    require(not missing, key, bins, f"needs the bins {missing} (eta = far / near)")
    for name, edges in bins.items():
        require(
            len(edges) == 2 and edges[0] <= edges[1],
            f"{key}.{name}",
            edges,
            "must be [low, high] with low <= high",
        )
