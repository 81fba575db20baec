"""Typed config of the AdamCB experiment (schema for configs/adamcb/*.yaml).

Every key here is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, LoopConfig


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
