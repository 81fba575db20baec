"""Typed config of the CBMA experiment (schema for configs/conformal_bma/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, require, require_at_least, require_positive


@dataclass
class CandidateConfig:
    """One candidate Bayesian model: NIG regression on polynomial features."""

    name: str = "linear"
    degree: int = 1  # features [1, x, ..., x^degree] per input column
    variance: str = "constant"  # constant (h = 1) | abs_linear (h = (offset + |x|_1)^2)
    variance_offset: float = 0.2
    # Real tables: the input columns the model reads, by name (a feature subset, brief Sec. 6);
    # None: every input column. An unknown name is refused, listing the table's columns.
    columns: list[str] | None = None


@dataclass
class SettingConfig:
    """One data setting and its candidate models (brief Sec. 5 settings A and B)."""

    # simulated | diabetes (scikit-learn's bundled table, through shared.assets) |
    # california_housing (scikit-learn's local cache under data_root) | csv (any numeric table)
    source: str = "simulated"
    # source=csv: the file, and the name of its response column; every other column is an
    # input (a missing column or a value that is not numeric is refused, naming file and column)
    path: str | None = None
    target: str | None = None
    # simulated: y = sum_k coefficients[k] x^k + noise_scale * s(x) * N(0, 1), x ~ U(x_low, x_high)
    coefficients: list[float] = field(default_factory=lambda: [0.5, 1.0, 1.5])
    noise: str = "constant"  # constant (s = 1) | abs_linear (s = noise_offset + |x|)
    noise_offset: float = 0.2
    noise_scale: float = 1.0
    x_low: float = -2.0
    x_high: float = 2.0
    true_model: str | None = None  # the data-generating candidate, if it is one of them
    models: list[CandidateConfig] = field(default_factory=list)
    # Prior model probabilities p(M_k), one positive weight per entry of ``models`` and in its
    # order, normalised to sum to 1 by us. None: uniform, p(M_k) = 1/K, the paper's default
    # (brief Sec. 3: "prior model probability p(M_k) (uniform by default)").
    model_prior: list[float] | None = None
    # Per-setting overrides of the experiment-wide sizes (None: use the experiment's).
    n_train: int | None = None
    n_test: int | None = None
    replications: int | None = None
    coverage_only: bool = False  # evaluate pi(Y_true) only: no grid, no set sizes
    checkpoint_every: int | None = None  # replications between checkpoints (None: experiment's)


@dataclass
class PriorConfig:
    g: float = 100.0  # beta | sigma^2 ~ N(0, sigma^2 g I)
    a0: float = 1.0  # sigma^2 ~ InvGamma(a0, b0)
    b0: float = 1.0


@dataclass
class Config(ExperimentConfig):
    # cb (one per candidate), cbma, cbma_frozen (ablation), bma_credible, split_conformal
    methods: list[str] = field(default_factory=lambda: ["cb", "cbma"])
    # name -> setting; null disables a setting inherited from another config file
    settings: dict[str, SettingConfig | None] = field(default_factory=dict)
    alpha: float = 0.1  # miscoverage level
    n_train: int = 100
    n_test: int = 50  # test points per replication
    replications: int = 40  # drawn in sequence from one generator per setting
    grid_size: int = 400  # G, y-grid points
    grid_margin_sd: float = 3.0  # grid = [min y - m sd y, max y + m sd y]
    prior: PriorConfig = field(default_factory=PriorConfig)
    split_conformal_degree: int = 2  # OLS features of the split-conformal baseline
    data_root: str | None = None  # local folder for real data sets (never downloaded)
    standardise: bool = False  # standardise x and y on the training split (real data)
    plot_x_points: int = 60  # x values of the prediction-band plot
    checkpoint_every: int = 10  # replications between checkpoints
    # Also report every interval's mean length relative to the shortest and the longest
    # single-candidate CB length (length_over_best_cb, length_over_worst_cb) and CBMA's mean
    # weight on each candidate at the true y (weight_<model>): the real rung's claims
    compare_candidates: bool = False

    def validate(self) -> None:
        super().validate()
        require(0 < self.alpha < 1, "alpha", self.alpha, "must be in (0, 1)")
        for key in ("n_train", "n_test", "replications", "checkpoint_every", "plot_x_points"):
            require_at_least(key, getattr(self, key), 1)
        require_at_least("grid_size", self.grid_size, 2)
        require_positive("grid_margin_sd", self.grid_margin_sd)
        for name, setting in self.settings.items():
            if setting is None:  # disabled
                continue
            for key in ("n_train", "n_test", "replications", "checkpoint_every"):
                value = getattr(setting, key)
                if value is not None:
                    require_at_least(f"settings.{name}.{key}", value, 1)
            require(bool(setting.models), f"settings.{name}.models", [], "name at least one model")
