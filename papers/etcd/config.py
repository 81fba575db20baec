"""Typed config of the ETCD experiment (schema for configs/etcd/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from papers.etcd.data import SACHS_ROW_SETS
from papers.etcd.method import CLUSTER_ORDERS
from shared.config import (
    ExperimentConfig,
    require,
    require_at_least,
    require_choice,
    require_choices,
)

METHODS = ("etcd", "etcd_no_error", "direct_lingam", "gin")
SIMULATED_GRAPHS = ("case4", "violating")
REAL_SETS = ("holzinger_swineford", "sachs")  # real data sets a ``graphs`` entry may name


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
class RealDataConfig:
    """The real rung's data sets (``graphs: [holzinger_swineford, sachs]``; real.yaml)."""

    # Sachs rows: "observational" = the first 853 cells (CD3/CD28, no intervention on the
    # network) | "all" = the 7,466 cells of the nine conditions pooled
    sachs_rows: str = "observational"
    sachs_log: bool = True  # natural log of the (positive, skewed) Sachs intensities first
    standardize: bool = True  # z-score each variable once (HSIC's kernel width is fixed at 1)
    max_samples: int = 0  # use only the first rows of each data set (0: all; smoke runs)
    # a returned graph counts as correct when its accuracy reaches the toy's bar (claims.py
    # CASE4_F1): cluster ARI on Holzinger-Swineford, directed-edge F1 on Sachs
    correct_min: float = 0.85


@dataclass
class Config(ExperimentConfig):
    # etcd (error signal on), etcd_no_error (ablation), direct_lingam; gin (paper scale only)
    methods: list[str] = field(default_factory=lambda: ["etcd", "etcd_no_error", "direct_lingam"])
    # simulated graphs (case4, violating) and/or real data sets (holzinger_swineford, sachs)
    graphs: list[str] = field(default_factory=lambda: ["case4", "violating"])
    seeds: list[int] = field(default_factory=lambda: list(range(10)))
    data: DataConfig = field(default_factory=DataConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    real: RealDataConfig = field(default_factory=RealDataConfig)
    lingam_threshold: float = 0.25  # |b| above which DirectLiNGAM declares an edge
    gin_alpha: float = 0.05  # GIN's independence-test level (paper scale)
    plot_seed: int = 0  # the seed whose recovered graph is drawn

    def validate(self) -> None:
        super().validate()
        require_choices("methods", self.methods, METHODS)
        require_choices("graphs", self.graphs, (*SIMULATED_GRAPHS, *REAL_SETS))
        d = self.data
        require_at_least("data.min_samples", d.min_samples, 2)
        require(
            d.n >= d.min_samples,
            "data.n",
            d.n,
            f"must be >= data.min_samples ({d.min_samples}): ETCD's independence tests need "
            "that many samples",
        )
        require_choice("algorithm.cluster_order", self.algorithm.cluster_order, CLUSTER_ORDERS)
        require_at_least("algorithm.hsic.n_frequencies", self.algorithm.hsic.n_frequencies, 1)
        require_at_least("algorithm.hsic.n_null", self.algorithm.hsic.n_null, 1)
        for key in ("alpha_ip", "alpha_type1", "alpha_quintuple", "alpha_corr", "alpha_error"):
            value = getattr(self.algorithm, key)
            require(0 < value < 1, f"algorithm.{key}", value, "must be in (0, 1)")
        require_choice("real.sachs_rows", self.real.sachs_rows, SACHS_ROW_SETS)
        require_at_least("real.max_samples", self.real.max_samples, 0)
