"""Typed config of the ResDex experiment (schema for configs/resdex/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, checked, require, require_at_most

BACKENDS = ("kinematic", "mujoco", "isaac")  # env.backend (isaac: named, not implemented)
SCHEDULES = ("adaptive", "fixed")  # ppo.py: the KL rule, else the learning rate stays lr
# the toy's grasp styles (brief Sec. 5.3); data.py and train.py import them from here
STYLES = ("pinch", "power", "wide", "hook")


@dataclass
class PPOConfig:
    """One PPO training run (Sec. 3.4; the toy values in toy.yaml)."""

    num_envs: int = checked(4096, ge=1)
    iterations: int = checked(5000, ge=1)
    nsteps: int = checked(8, ge=1)  # rollout steps per env per iteration
    epochs: int = checked(5, ge=1)
    minibatches: int = checked(4, ge=1)  # at most num_envs * nsteps (validate)
    lr: float = checked(3e-4, gt=0)
    schedule: str = checked("adaptive", choices=SCHEDULES)  # adaptive (KL rule, Sec. 3.4) | fixed
    desired_kl: float = checked(0.016, gt=0)
    lr_factor: float = checked(1.5, ge=1)  # adaptive: lr / factor above 2 desired_kl, x below
    lr_min: float = checked(1e-5, gt=0)  # at most lr_max (validate)
    lr_max: float = checked(1e-2, gt=0)
    gamma: float = checked(0.96, ge=0, le=1)
    lam: float = checked(0.95, ge=0, le=1)
    clip: float = checked(0.2, gt=0)
    value_coef: float = checked(1.0, ge=0)
    value_clip: float = checked(0.2, gt=0)
    entropy_coef: float = checked(0.0, ge=0)
    normalize_advantages: bool = True  # official rollout storage: (A - mean) / (std + 1e-8)
    max_grad_norm: float = checked(1.0, gt=0)
    hidden: list[int] = checked(factory=lambda: [1024, 1024, 512, 512], ge=1)
    init_std: float = checked(0.8, gt=0)  # every output dim, logits included (Sec. 3.5)
    obs_clip: float = checked(5.0, gt=0)
    # iterations between checkpoints (the last one always saves)
    checkpoint_every: int = checked(10, ge=1)


@dataclass
class EnvConfig:
    """Simulator backend and the objects (Sec. 5.3 toy; Sec. 5.1-5.2 MuJoCo; Sec. 6 paper)."""

    # kinematic (toy, the acceptance env) | mujoco (Adroit) | isaac
    backend: str = checked("kinematic", choices=BACKENDS)
    episode_steps: int = checked(40, ge=1)
    per_style: int = checked(12, ge=1)  # training objects per grasp style (and as many unseen)
    feature_dim: int = checked(64, ge=1)
    size_low: float = checked(0.6, gt=0)  # object sizes ~ U(size_low, size_high)
    size_high: float = checked(1.4, gt=0)  # at least size_low (validate)
    feature_scale: float = checked(0.1, gt=0)
    # MuJoCo Adroit Relocate backend (Sec. 5.2): objects per geometry type, frame skip.
    mujoco_objects_per_type: int = checked(2, ge=1)
    # MuJoCo Relocate: success is the object within this distance of the target (DAPG's 0.1)
    mujoco_success_distance: float = checked(0.1, gt=0)


@dataclass
class BaseConfig:
    """Base policies (Sec. 3.2): K representatives from k-means of the geometry features."""

    k: int = checked(4, ge=1)  # at most the training objects (validate)
    kmeans_restarts: int = checked(10, ge=1)
    ppo: PPOConfig = field(default_factory=PPOConfig)


@dataclass
class EvalConfig:
    """Deterministic-mean evaluation (Sec. 5.3): success rate on training and unseen objects."""

    num_envs: int = checked(512, ge=1)
    episodes: int = checked(3, ge=1)
    # iterations of the claims (kinematic: each at most hyper.iterations, validate)
    at: list[int] = checked(factory=lambda: [20, 40], ge=1)
    # learning-curve points (training objects) every this many iterations
    every: int = checked(5, ge=1)
    curve_episodes: int = checked(1, ge=1)
    # evaluation episodes come from seed_offset + seed
    seed_offset: int = checked(10_000, ge=0)


@dataclass
class DataConfig:
    """Paper scale: a local DexGraspNet copy (Sec. 6); unused by the toy."""

    root: str | None = None


@dataclass
class Config(ExperimentConfig):
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "a numpy/MuJoCo simulator and PPO on CPU tensors: nothing moves to a device"
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
    seeds: list[int] = checked(factory=lambda: [0], ge=0)
    env: EnvConfig = field(default_factory=EnvConfig)
    base: BaseConfig = field(default_factory=BaseConfig)
    hyper: PPOConfig = field(default_factory=PPOConfig)  # ResDex, scratch and single + residual
    # the expert of single_residual (Sec. 5.3 run D)
    single_expert_style: str = checked("power", choices=STYLES)
    eval: EvalConfig = field(default_factory=EvalConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def validate(self) -> None:
        super().validate()
        iterations = self.hyper.iterations
        for section, ppo in (("base.ppo", self.base.ppo), ("hyper", self.hyper)):
            batch = ppo.num_envs * ppo.nsteps  # ppo.py: minibatch = batch // minibatches
            require_at_most(
                f"{section}.minibatches",
                ppo.minibatches,
                batch,
                f"{section}.num_envs * {section}.nsteps ({batch})",
            )
            require_at_most(
                f"{section}.lr_min", ppo.lr_min, ppo.lr_max, f"{section}.lr_max ({ppo.lr_max})"
            )
        e = self.env
        require_at_most("env.size_low", e.size_low, e.size_high, f"env.size_high ({e.size_high})")
        if e.backend == "kinematic":  # the evaluation protocol of eval.at runs there
            require(  # case 17: eval.at=[2,6] with 4 iterations silently dropped it6
                bool(self.eval.at) and all(1 <= a <= iterations for a in self.eval.at),
                "eval.at",
                self.eval.at,
                f"each entry must be an iteration in 1..hyper.iterations ({iterations})",
            )
            n_objects = len(STYLES) * e.per_style  # data.representative_objects: k-means
            require_at_most("base.k", self.base.k, n_objects, f"the {n_objects} training objects")
            if "resdex" in self.methods:  # train.plot labels expert j by STYLES[j]
                require_at_most("base.k", self.base.k, len(STYLES), "the 4 grasp styles")
