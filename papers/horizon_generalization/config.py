"""Typed config of the horizon-generalization experiment (schema for its YAML files).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    require,
    require_at_least,
    require_choices,
)


@dataclass
class LayoutConfig:
    """One grid world and the training budget used on it (brief Sec. 5)."""

    # open (11 x 11 room) | wall (interior wall from the top edge) | point_maze (the real rung:
    # a gymnasium-robotics PointMaze map in MuJoCo, papers/horizon_generalization/point_maze.py)
    layout: str = "open"
    size: int = 11  # open / wall only
    wall_length: int = 8  # wall only
    # point_maze only: the map's name in gymnasium_robotics/envs/maze/maps.py (U_MAZE,
    # MEDIUM_MAZE, LARGE_MAZE), the tile coding the critics see (tiles_per_cell^2 tiles per
    # 1 m cell), and the decision model: every decision commands velocity speed (m/s) in one of
    # four directions for action_repeat env steps (10 ms each), tracked by the force
    # ctrl = clip(gain * (v_cmd - v), -1, 1).
    maze: str = "MEDIUM_MAZE"
    tiles_per_cell: int = 3
    speed: float = 2.0
    action_repeat: int = 17
    gain: float = 1.0
    batch_size: int = 128  # B: the contrastive grid is B x B
    steps: int = 2000
    methods: list[str] = field(default_factory=list)  # subset of `methods`; empty: all


@dataclass
class DataConfig:
    """Offline random-policy data with hindsight goals (brief Sec. 5 "Data")."""

    n_trajectories: int = 3000
    length: int = 50
    gamma: float = 0.9  # goal offset k ~ Geom(1 - gamma), k >= 1
    max_offset: int | None = 10  # truncation of k (None: only the trajectory end)


@dataclass
class CriticConfig:
    """Encoders phi(s, a), psi(g) and the monolithic critic (brief Sec. 5 "Critics")."""

    repr_dim: int = 32
    hidden: int = 128
    n_hidden_layers: int = 2
    mrn_chunks: int = 4
    # Linear-layer initialisation: "lecun" as the official flax Dense layers (LeCun-uniform
    # kernels, zero biases), or "torch" (PyTorch's nn.Linear default).
    init: str = "lecun"


@dataclass
class TrainConfig:
    """Contrastive RL critic training (brief Sec. 3.2)."""

    lr: float = 3e-4
    loss: str = "symmetric"  # forward | backward | symmetric InfoNCE
    resubstitution: bool = True  # keep the positive inside the logsumexp
    logsumexp_penalty: float = 0.0


@dataclass
class EvalConfig:
    """Greedy rollouts and the invariance measures (brief Sec. 3.3, 5 "Evaluation")."""

    n_pairs: int = 1000
    seed_offset: int = 10_000  # evaluation pairs come from rng(seed_offset + seed)
    max_steps: int = 100
    planner_c: int = 3  # waypoints at exactly c steps from s
    pi_pairs: int = 200
    # Inclusive BFS-distance ranges of the success bins (brief Sec. 5, for the 11 x 11 room:
    # near d <= 5, mid 6-10, far d > 10); a larger layout sets its own.
    bins: dict[str, list[float]] = field(
        default_factory=lambda: {"near": [1, 5], "mid": [6, 10], "far": [11, math.inf]}
    )


@dataclass
class Config(ExperimentConfig):
    # l2 (metric) | mrn (quasimetric) | dot | mlp (monolithic) | oracle (-BFS, no training)
    # | untrained (the l2 critic at initialisation: the claims' negative control)
    methods: list[str] = field(default_factory=lambda: ["l2", "mrn", "dot", "mlp", "oracle"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
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
            require_at_least(f"layouts.{name}.steps", layout.steps, 1)
            require_at_least(f"layouts.{name}.batch_size", layout.batch_size, 2)
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
