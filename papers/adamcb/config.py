"""Typed config of the AdamCB experiment (schema for configs/adamcb/*.yaml).

Every key here is checked at start: an unknown key or a wrong type by Hydra, and the values
types cannot constrain by :meth:`Config.validate`, each failing in one line naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    LoopConfig,
    ReadOnlyWhere,
    checked,
    require,
)
from shared.images import IMAGE_SOURCES

DATA_NAMES = ("digits", "mnist", "fashion_mnist", "cifar10")
# folder | asset | a user's own image set: idx (a folder in the MNIST layout) | npz (one file)
DATA_SOURCES = ("folder", "asset", *IMAGE_SOURCES)
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
    # digits (toy, bundled with scikit-learn) | mnist | fashion_mnist | cifar10
    name: str = checked("digits", choices=DATA_NAMES)
    # where mnist / fashion_mnist / cifar10 come from: folder (data.root, torchvision's layout)
    # | asset (the pinned package asset of shared/assets.py, the real rung; fashion_mnist only)
    # | idx / npz: a user's own image set at data.path (shared/images.py), normalised by its
    # own training images' mean and std (data.name, root, mean and std are not read)
    source: str = checked("folder", choices=DATA_SOURCES)
    path: str | None = None  # idx: the folder of the four MNIST-named files; npz: the file
    # npz without x_test / y_test: the share of x held out for testing (MNIST's 10k of 70k),
    # drawn by data.subset_seed
    test_fraction: float = checked(1 / 7, gt=0, lt=1)
    root: str | None = None  # local folder of the paper-scale data set; never downloaded
    n_train: int | None = checked(
        None, ge=1
    )  # first n of a seeded permutation of the training set; None: all
    subset_seed: int = checked(0, ge=0)  # seed of that permutation (fixed across training seeds)
    n_eval_train: int | None = checked(
        None, ge=1
    )  # train loss on the first N training examples; None: all
    n_eval_test: int | None = checked(
        None, ge=1
    )  # test loss on N fixed random test examples; None: all
    # per-channel normalisation: (x - mean) / std
    mean: list[float] = checked(factory=lambda: [0.0], free="a channel mean may be any real")
    std: list[float] = checked(factory=lambda: [1.0], gt=0)


@dataclass
class ModelConfig:
    name: str = checked("mlp", choices=MODEL_NAMES)  # (the paper's CNN and VGG are convnets)
    hidden: list[int] = checked(factory=lambda: [64], ge=1)  # MLP hidden widths
    conv_blocks: list[list[int]] = checked(factory=list, ge=1)  # convnet: channels per block
    first_kernel: int = checked(3, ge=1)  # convnet: kernel of the first conv (5 in the paper's CNN)
    fc_hidden: list[int] = checked(factory=list, ge=1)  # convnet: widths of the FC head


@dataclass
class OptimConfig:
    lr: float = checked(1e-3, gt=0)  # alpha; the step size used at step t is alpha / sqrt(t)
    beta1: float = checked(0.9, ge=0, lt=1)
    beta2: float = checked(0.999, ge=0, lt=1)
    eps: float = checked(1e-8, gt=0)
    lam: float = checked(1.0 - 1e-8, gt=0, le=1)  # beta1 decay: beta1_t = beta1 * lam^(t-1)


@dataclass
class SamplerConfig:
    batch_size: int = checked(128, ge=1, le_key="data.n_train")  # K
    gamma: float = checked(0.4, gt=0, le=1)  # exploration of the bandit samplers
    alpha_p: float | None = checked(
        None, gt=0
    )  # sampler step size; None: (gamma / n)^3 as in the official code
    adambs_alpha_p: float = checked(1e-16, gt=0)  # original AdamBS step size (official code)
    adambs_exp_clip: float = checked(100.0, gt=0)  # original AdamBS clips the exponent to +-this
    per_sample_chunk: int | None = checked(
        None, ge=1
    )  # examples per vmap chunk of conv layers; None: all


def _own_images(data: DataConfig) -> bool:
    return data.source in IMAGE_SOURCES


@dataclass
class Config(ExperimentConfig):
    # a user's image set (data.source idx / npz) replaces the named data set and its statistics
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=("data.path",),
            where=f"data.source={' or '.join(IMAGE_SOURCES)}",
            reads=lambda data, _: _own_images(data),
        ),
        ReadOnlyWhere(
            keys=("data.test_fraction",),
            where="data.source=npz",
            reads=lambda data, _: data.source == "npz",
        ),
        ReadOnlyWhere(
            keys=("data.name", "data.root", "data.mean", "data.std"),
            where="a shipped or local data set (data.source folder or asset)",
            reads=lambda data, _: not _own_images(data),
        ),
    )
    methods: list[str] = field(
        default_factory=lambda: ["adam", "adambs_corrected", "adamcb", "adamx_uniform_wor"]
    )
    epochs: int = checked(10, ge=1)  # iterations = epochs * (n // K)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)

    def validate(self) -> None:
        super().validate()
        if _own_images(self.data):  # shared.images.load_image_set reads it at start
            require(
                bool(self.data.path),
                "data.path",
                self.data.path,
                f"data.source={self.data.source} needs the image set's path",
            )
        if self.data.n_train is not None:  # else the data set's size decides (train.run)
            check_eval_interval(
                self.loop.eval_every,
                self.data.n_train // self.sampler.batch_size,
                f"data.n_train {self.data.n_train} // sampler.batch_size {self.sampler.batch_size}",
            )
