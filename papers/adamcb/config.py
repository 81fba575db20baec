"""Typed config of the AdamCB experiment (schema for configs/adamcb/*.yaml).

Every key here is checked at start: an unknown key or a wrong type by Hydra, and the values
types cannot constrain by :meth:`Config.validate`, each failing in one line naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    LoopConfig,
    require,
    require_at_least,
    require_at_most,
    require_choice,
    require_positive,
)

DATA_NAMES = ("digits", "mnist", "fashion_mnist", "cifar10")
DATA_SOURCES = ("folder", "asset")
MODEL_NAMES = ("mlp", "convnet")


def check_eval_interval(eval_every: int, steps_per_epoch: int, how: str) -> None:
    """The per-epoch curve reads the evaluations at epoch ends, so the evaluation interval must
    divide the steps of an epoch (``how`` says where that count comes from)."""
    require(
        steps_per_epoch % eval_every == 0,
        "loop.eval_every",
        eval_every,
        f"must divide the {steps_per_epoch} steps per epoch ({how}): the per-epoch curve reads "
        "the evaluations at epoch ends",
    )


@dataclass
class DataConfig:
    name: str = (
        "digits"  # digits (toy, bundled with scikit-learn) | mnist | fashion_mnist | cifar10
    )
    # where mnist / fashion_mnist / cifar10 come from: folder (data.root, torchvision's layout)
    # | asset (the pinned package asset of shared/assets.py, the real rung; fashion_mnist only)
    source: str = "folder"
    root: str | None = None  # local folder of the paper-scale data set; never downloaded
    n_train: int | None = None  # first n of a seeded permutation of the training set; None: all
    subset_seed: int = 0  # seed of that permutation (fixed across training seeds)
    n_eval_train: int | None = None  # train loss on the first N training examples; None: all
    n_eval_test: int | None = None  # test loss on N fixed random test examples; None: all
    mean: list[float] = field(default_factory=lambda: [0.0])  # per-channel normalisation
    std: list[float] = field(default_factory=lambda: [1.0])


@dataclass
class ModelConfig:
    name: str = "mlp"  # mlp | convnet (the paper's CNN and VGG are convnets)
    hidden: list[int] = field(default_factory=lambda: [64])  # MLP hidden widths
    conv_blocks: list[list[int]] = field(default_factory=list)  # convnet: channels per block
    first_kernel: int = 3  # convnet: kernel of the first conv (5 in the paper's CNN)
    fc_hidden: list[int] = field(default_factory=list)  # convnet: widths of the FC head


@dataclass
class OptimConfig:
    lr: float = 1e-3  # alpha; the step size used at step t is alpha / sqrt(t)
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    lam: float = 1.0 - 1e-8  # beta1 decay: beta1_t = beta1 * lam^(t-1)


@dataclass
class SamplerConfig:
    batch_size: int = 128  # K
    gamma: float = 0.4  # exploration of the bandit samplers
    alpha_p: float | None = None  # sampler step size; None: (gamma / n)^3 as in the official code
    adambs_alpha_p: float = 1e-16  # original AdamBS step size (official code)
    adambs_exp_clip: float = 100.0  # original AdamBS clips the exponent to +-this
    per_sample_chunk: int | None = None  # examples per vmap chunk of conv layers; None: all


@dataclass
class Config(ExperimentConfig):
    methods: list[str] = field(
        default_factory=lambda: ["adam", "adambs_corrected", "adamcb", "adamx_uniform_wor"]
    )
    epochs: int = 10  # iterations = epochs * (n // K)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)

    def validate(self) -> None:
        super().validate()
        require_at_least("epochs", self.epochs, 1)
        require_choice("data.name", self.data.name, DATA_NAMES)
        require_choice("data.source", self.data.source, DATA_SOURCES)
        require_choice("model.name", self.model.name, MODEL_NAMES)
        require_at_least("sampler.batch_size", self.sampler.batch_size, 1)
        require(
            0 < self.sampler.gamma <= 1, "sampler.gamma", self.sampler.gamma, "must be in (0, 1]"
        )
        require_positive("optim.lr", self.optim.lr)
        for key in ("n_train", "n_eval_train", "n_eval_test"):
            value = getattr(self.data, key)
            if value is not None:
                require_at_least(f"data.{key}", value, 1)
        if self.data.n_train is not None:  # else the data set's size decides (train.run)
            n_train = f"data.n_train ({self.data.n_train})"
            require_at_most(
                "sampler.batch_size", self.sampler.batch_size, self.data.n_train, n_train
            )
            check_eval_interval(
                self.loop.eval_every,
                self.data.n_train // self.sampler.batch_size,
                f"data.n_train {self.data.n_train} // sampler.batch_size {self.sampler.batch_size}",
            )
