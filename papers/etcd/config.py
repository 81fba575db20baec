"""Typed config of the ETCD experiment (schema for configs/etcd/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig


@dataclass
class HSICConfig:
    """The HSIC spectral test with random Fourier features (brief Sec. 3.1)."""

    width: float = 1.0  # Gaussian kernel width, fixed; inputs are not standardised
    n_frequencies: int = 15  # 2 x 15 = 30 random Fourier features
    n_null: int = 1000  # null draws: p-value floor 1 / (n_null + 1) must be < alpha_ip


@dataclass
class AlgorithmConfig:
    """ETCD's tests and thresholds (brief Sec. 3.2-3.3, official constants)."""

    alpha_ip: float = 0.001  # identifiable pairs
    alpha_type1: float = 0.01  # parent -> pure child
    alpha_quintuple: float = 0.05  # type-III (triangle) check
    alpha_corr: float = 0.01  # Pearson correlation gate in Stage 2
    alpha_error: float = 0.001  # trust check: raise when the best root's p-value is below
    edge_threshold: float = 0.25  # |A[i, j]| above which j -> i is declared
    instrument_min_corr: float = 0.0  # optional FindIP instrument guard (0: official choice)
    # order of the merged type-II clusters (new latents' ids, Stage-2 tie-breaks): "official"
    # = utils.Mergelist (merged clusters first, then lone pairs in input order) | "sorted"
    cluster_order: str = "official"
    hsic: HSICConfig = field(default_factory=HSICConfig)


@dataclass
class DataConfig:
    n: int = 2000  # samples per data set
    weight_range: list[float] = field(default_factory=lambda: [0.5, 2.0])
    faithfulness_min: float = 0.25  # every nonzero total effect must exceed this
    noise_power: int = 7  # noise u^power, u ~ U(-1, 1): strongly non-Gaussian
    noise_scale_range: list[float] = field(default_factory=lambda: [0.5, 1.0])
    min_samples: int = 100  # fewer samples than this is refused (the tests need them)


@dataclass
class Config(ExperimentConfig):
    # etcd (error signal on), etcd_no_error (ablation), direct_lingam; gin (paper scale only)
    methods: list[str] = field(default_factory=lambda: ["etcd", "etcd_no_error", "direct_lingam"])
    graphs: list[str] = field(default_factory=lambda: ["case4", "violating"])
    seeds: list[int] = field(default_factory=lambda: list(range(10)))
    data: DataConfig = field(default_factory=DataConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    lingam_threshold: float = 0.25  # |b| above which DirectLiNGAM declares an edge
    gin_alpha: float = 0.05  # GIN's independence-test level (paper scale)
    plot_seed: int = 0  # the seed whose recovered graph is drawn
