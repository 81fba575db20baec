"""Typed config of the ETCD experiment (schema for configs/etcd/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from papers.etcd.data import SACHS_ROW_SETS
from papers.etcd.method import CLUSTER_ORDERS
from shared.config import ExperimentConfig, ReadOnlyWhere, checked, require, require_choices

METHODS = ("etcd", "etcd_no_error", "direct_lingam", "gin")
SIMULATED_GRAPHS = ("case4", "violating")
REAL_SETS = ("holzinger_swineford", "sachs")  # real data sets a ``graphs`` entry may name
OWN = "own"  # a user's own data set (the ``own`` section), also a ``graphs`` entry


@dataclass
class HSICConfig:
    """The HSIC spectral test with random Fourier features (brief Sec. 3.1)."""

    width: float = checked(1.0, gt=0)  # Gaussian kernel width, fixed; inputs are not standardised
    n_frequencies: int = checked(15, ge=1)  # 2 x 15 = 30 random Fourier features
    # null draws: p-value floor 1 / (n_null + 1) must be < alpha_ip
    n_null: int = checked(1000, ge=1)


@dataclass
class AlgorithmConfig:
    """ETCD's tests and thresholds (brief Sec. 3.2-3.3, official constants)."""

    alpha_ip: float = checked(0.001, gt=0, lt=1)  # identifiable pairs
    alpha_type1: float = checked(0.01, gt=0, lt=1)  # parent -> pure child
    alpha_quintuple: float = checked(0.05, gt=0, lt=1)  # type-III (triangle) check
    alpha_corr: float = checked(0.01, gt=0, lt=1)  # Pearson correlation gate in Stage 2
    # trust check: raise when the best root's p-value is below
    alpha_error: float = checked(0.001, gt=0, lt=1)
    edge_threshold: float = checked(0.25, ge=0)  # |A[i, j]| above which j -> i is declared
    # optional FindIP instrument guard (0: official choice)
    instrument_min_corr: float = checked(0.0, ge=0, le=1)
    # order of the merged type-II clusters (new latents' ids, Stage-2 tie-breaks): "official"
    # = utils.Mergelist (merged clusters first, then lone pairs in input order) | "sorted"
    cluster_order: str = checked("official", choices=CLUSTER_ORDERS)
    hsic: HSICConfig = field(default_factory=HSICConfig)


@dataclass
class DataConfig:
    n: int = checked(2000, ge=1)  # samples per data set
    # [low, high] of the edge weights' magnitudes (each edge gets a random sign)
    weight_range: list[float] = checked(factory=lambda: [0.5, 2.0], ge=0)
    faithfulness_min: float = checked(0.25, ge=0)  # every nonzero total effect must exceed this
    noise_power: int = checked(7, ge=1)  # noise u^power, u ~ U(-1, 1): strongly non-Gaussian
    # [low, high] of the per-variable noise scales (a zero scale makes a constant variable)
    noise_scale_range: list[float] = checked(factory=lambda: [0.5, 1.0], gt=0)
    # fewer samples than this is refused (the tests need them)
    min_samples: int = checked(100, ge=2)


@dataclass
class RealDataConfig:
    """The real rung's data sets (``graphs: [holzinger_swineford, sachs]``; real.yaml)."""

    # Sachs rows: "observational" = the first 853 cells (CD3/CD28, no intervention on the
    # network) | "all" = the 7,466 cells of the nine conditions pooled
    sachs_rows: str = checked("observational", choices=SACHS_ROW_SETS)
    sachs_log: bool = True  # natural log of the (positive, skewed) Sachs intensities first
    standardize: bool = True  # z-score each variable once (HSIC's kernel width is fixed at 1)
    # use only the first rows of each data set (0: all; smoke runs)
    max_samples: int = checked(0, ge=0)
    # a returned graph counts as correct when its accuracy reaches the toy's bar (claims.py
    # CASE4_F1): cluster ARI on Holzinger-Swineford, directed-edge F1 on Sachs
    correct_min: float = checked(0.85, ge=0, le=1)


@dataclass
class OwnDataConfig:
    """A user's data set (``graphs: [own]``): one numeric CSV, a column per observed variable,
    read and checked at start like the shipped sets (data.load_own)."""

    path: str | None = None  # the CSV: a header row, numbers only, no gaps
    columns: list[str] | None = None  # the variables, by name (None: every column)
    log: bool = False  # natural log of each variable first (positive, skewed data, as Sachs)
    # optional, to score the graph: the known cluster of each variable, in ``columns`` order
    # (cluster ARI against ETCD's, as Holzinger-Swineford's abilities) ...
    clusters: list[str] | None = None
    # ... and/or a CSV of known edges, columns Cause and Effect (directed F1, as Sachs)
    edges: str | None = None


@dataclass
class ApplyConfig:
    """``python -m papers.etcd.apply``: ETCD's graph of a user's data set, or the
    AssumptionInvalid it raises (configs/apply/etcd.yaml; shared/apply.py)."""

    data: str | None = None  # CSV: a column per observed variable (header row, numbers)
    columns: list[str] | None = None  # the variables, by name (None: every column)
    log: bool = False  # natural log of each variable first (positive, skewed data)
    standardize: bool = True  # z-score each variable once (HSIC's kernel width is fixed at 1)
    seed: int = checked(0, ge=0)  # ETCD's random Fourier features and null draws
    min_samples: int = checked(100, ge=2)  # ETCD's floor: fewer rows are refused
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)  # official constants
    out: str = "outputs/etcd/apply"

    def validate(self) -> None:
        require(bool(self.data), "data", self.data, "is needed: the CSV of observed variables")


@dataclass
class Config(ExperimentConfig):
    # the own section is read only where graphs names it
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=(OWN,),
            where=f"a run whose graphs name {OWN}",
            reads=lambda _, cfg: OWN in cfg.graphs,
        ),
    )
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "numpy and scipy conditional-independence tests: no tensor goes to a device"
    # etcd (error signal on), etcd_no_error (ablation), direct_lingam; gin (paper scale only)
    methods: list[str] = field(default_factory=lambda: ["etcd", "etcd_no_error", "direct_lingam"])
    # simulated graphs (case4, violating) and/or real data sets (holzinger_swineford, sachs,
    # own: a user's CSV, the own section)
    graphs: list[str] = checked(
        factory=lambda: ["case4", "violating"], choices=(*SIMULATED_GRAPHS, *REAL_SETS, OWN)
    )
    seeds: list[int] = checked(factory=lambda: list(range(10)), ge=0)
    data: DataConfig = field(default_factory=DataConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    real: RealDataConfig = field(default_factory=RealDataConfig)
    own: OwnDataConfig = field(default_factory=OwnDataConfig)
    lingam_threshold: float = checked(0.25, ge=0)  # |b| above which DirectLiNGAM declares an edge
    gin_alpha: float = checked(0.05, gt=0, lt=1)  # GIN's independence-test level (paper scale)
    plot_seed: int = checked(0, ge=0)  # the seed whose recovered graph is drawn

    def validate(self) -> None:
        super().validate()
        require_choices("methods", self.methods, METHODS)
        require(bool(self.graphs), "graphs", self.graphs, "name at least one graph or data set")
        if OWN in self.graphs:  # data.load_own: the file is checked at start (data_preflight)
            own = self.own
            require(bool(own.path), "own.path", own.path, f"graphs={OWN} needs the CSV's path")
            if own.clusters is not None and own.columns is not None:
                require(
                    len(own.clusters) == len(own.columns),
                    "own.clusters",
                    own.clusters,
                    f"one cluster per variable of own.columns ({len(own.columns)})",
                )
        d = self.data
        require(
            d.n >= d.min_samples,
            "data.n",
            d.n,
            f"must be >= data.min_samples ({d.min_samples}): ETCD's independence tests need "
            "that many samples",
        )
        for key in ("weight_range", "noise_scale_range"):  # U(low, high) draws
            low_high = getattr(d, key)
            require(
                len(low_high) == 2 and low_high[0] <= low_high[1],
                f"data.{key}",
                low_high,
                "must be [low, high] with low <= high",
            )
        m = self.real.max_samples  # 0: all rows; else the first rows, checked like data.n
        require(
            m == 0 or m >= d.min_samples,
            "real.max_samples",
            m,
            f"must be 0 (all rows) or >= data.min_samples ({d.min_samples})",
        )
