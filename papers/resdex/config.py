"""Typed config of the ResDex experiment (schema for configs/resdex/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, require, require_at_least


@dataclass
class PPOConfig:
    """One PPO training run (Sec. 3.4; the toy values in toy.yaml)."""

    num_envs: int = 4096
    iterations: int = 5000
    nsteps: int = 8  # rollout steps per env per iteration
    epochs: int = 5
    minibatches: int = 4
    lr: float = 3e-4
    schedule: str = "adaptive"  # adaptive (KL rule, Sec. 3.4) | fixed
    desired_kl: float = 0.016
    lr_factor: float = 1.5
    lr_min: float = 1e-5
    lr_max: float = 1e-2
    gamma: float = 0.96
    lam: float = 0.95
    clip: float = 0.2
    value_coef: float = 1.0
    value_clip: float = 0.2
    entropy_coef: float = 0.0
    normalize_advantages: bool = True  # official rollout storage: (A - mean) / (std + 1e-8)
    max_grad_norm: float = 1.0
    hidden: list[int] = field(default_factory=lambda: [1024, 1024, 512, 512])
    init_std: float = 0.8  # every output dim, logits included (Sec. 3.5)
    obs_clip: float = 5.0
    checkpoint_every: int = 10  # iterations between checkpoints (the last one always saves)


@dataclass
class EnvConfig:
    """Simulator backend and the objects (Sec. 5.3 toy; Sec. 5.1-5.2 MuJoCo; Sec. 6 paper)."""

    backend: str = "kinematic"  # kinematic (toy, the acceptance env) | mujoco (Adroit) | isaac
    episode_steps: int = 40
    per_style: int = 12  # training objects per grasp style (and as many unseen)
    feature_dim: int = 64
    size_low: float = 0.6
    size_high: float = 1.4
    feature_scale: float = 0.1
    # MuJoCo Adroit Relocate backend (Sec. 5.2): objects per geometry type, frame skip.
    mujoco_objects_per_type: int = 2
    mujoco_success_distance: float = 0.1


@dataclass
class BaseConfig:
    """Base policies (Sec. 3.2): K representatives from k-means of the geometry features."""

    k: int = 4
    kmeans_restarts: int = 10
    ppo: PPOConfig = field(default_factory=PPOConfig)


@dataclass
class EvalConfig:
    """Deterministic-mean evaluation (Sec. 5.3): success rate on training and unseen objects."""

    num_envs: int = 512
    episodes: int = 3
    at: list[int] = field(default_factory=lambda: [20, 40])  # iterations of the claims
    every: int = 5  # learning-curve points (training objects) every this many iterations
    curve_episodes: int = 1
    seed_offset: int = 10_000  # evaluation episodes come from seed_offset + seed


@dataclass
class DataConfig:
    """Paper scale: a local DexGraspNet copy (Sec. 6); unused by the toy."""

    root: str | None = None


@dataclass
class Config(ExperimentConfig):
    # resdex (K experts + residual) | scratch (PPO on all objects, full observation)
    # | single_residual (the "power" expert + residual, K = 1) | base_<style> (one expert alone)
    methods: list[str] = field(
        default_factory=lambda: [
            "resdex",
            "scratch",
            "single_residual",
            "base_pinch",
            "base_power",
            "base_wide",
            "base_hook",
        ]
    )
    seeds: list[int] = field(default_factory=lambda: [0])
    env: EnvConfig = field(default_factory=EnvConfig)
    base: BaseConfig = field(default_factory=BaseConfig)
    hyper: PPOConfig = field(default_factory=PPOConfig)  # ResDex, scratch and single + residual
    single_expert_style: str = "power"  # the expert of single_residual (Sec. 5.3 run D)
    eval: EvalConfig = field(default_factory=EvalConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def validate(self) -> None:
        super().validate()
        iterations = self.hyper.iterations
        require_at_least("hyper.iterations", iterations, 1)
        require_at_least("base.ppo.iterations", self.base.ppo.iterations, 1)
        require_at_least("eval.every", self.eval.every, 1)
        require_at_least("eval.num_envs", self.eval.num_envs, 1)
        require_at_least("eval.episodes", self.eval.episodes, 1)
        require_at_least("base.k", self.base.k, 1)
        if self.env.backend == "kinematic":  # the evaluation protocol of eval.at runs there
            require(  # case 17: eval.at=[2,6] with 4 iterations silently dropped it6
                bool(self.eval.at) and all(1 <= a <= iterations for a in self.eval.at),
                "eval.at",
                self.eval.at,
                f"each entry must be an iteration in 1..hyper.iterations ({iterations})",
            )
