"""Typed config of the CBMA experiment (schema for configs/conformal_bma/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, checked, require

# method.ModelSpec.variance_profile and data.simulate's noise: h = 1 | h = (offset + |x|_1)^2
VARIANCE_PROFILES = ("constant", "abs_linear")
SIMULATED = "simulated"
# data.load_real's sources (data.py imports them; it imports this module, not the reverse)
REAL_SOURCES = ("diabetes", "csv", "california_housing")
DATA_SOURCES = (SIMULATED, *REAL_SOURCES)


@dataclass
class CandidateConfig:
    """One candidate Bayesian model: NIG regression on polynomial features."""

    name: str = "linear"
    # features [1, x, ..., x^degree] per input column (0: the intercept alone)
    degree: int = checked(1, ge=0)
    # constant (h = 1) | abs_linear (h = (offset + |x|_1)^2)
    variance: str = checked("constant", choices=VARIANCE_PROFILES)
    variance_offset: float = checked(0.2, gt=0)  # h > 0 at x = 0
    # Real tables: the input columns the model reads, by name (a feature subset, brief Sec. 6);
    # None: every input column. An unknown name is refused, listing the table's columns.
    columns: list[str] | None = None


@dataclass
class SettingConfig:
    """One data setting and its candidate models (brief Sec. 5 settings A and B)."""

    # simulated | diabetes (scikit-learn's bundled table, through shared.assets) |
    # california_housing (scikit-learn's local cache under data_root) | csv (any numeric table)
    source: str = checked(SIMULATED, choices=DATA_SOURCES)
    # source=csv: the file, and the name of its response column; every other column is an
    # input (a missing column or a value that is not numeric is refused, naming file and column)
    path: str | None = None
    target: str | None = None
    # simulated: y = sum_k coefficients[k] x^k + noise_scale * s(x) * N(0, 1), x ~ U(x_low, x_high)
    coefficients: list[float] = checked(
        factory=lambda: [0.5, 1.0, 1.5], free="a polynomial coefficient may be any real"
    )
    # constant (s = 1) | abs_linear (s = noise_offset + |x|)
    noise: str = checked("constant", choices=VARIANCE_PROFILES)
    noise_offset: float = checked(0.2, ge=0)
    noise_scale: float = checked(1.0, ge=0)
    x_low: float = checked(-2.0, free="an end of the input interval may be any real")
    x_high: float = checked(2.0, free="an end of the input interval may be any real")
    true_model: str | None = None  # the data-generating candidate, if it is one of them
    models: list[CandidateConfig] = field(default_factory=list)
    # Prior model probabilities p(M_k), one positive weight per entry of ``models`` and in its
    # order, normalised to sum to 1 by us. None: uniform, p(M_k) = 1/K, the paper's default
    # (brief Sec. 3: "prior model probability p(M_k) (uniform by default)").
    model_prior: list[float] | None = checked(None, gt=0)
    # Per-setting overrides of the experiment-wide sizes (None: use the experiment's).
    n_train: int | None = checked(None, ge=1)
    n_test: int | None = checked(None, ge=1)
    replications: int | None = checked(None, ge=1)
    coverage_only: bool = False  # evaluate pi(Y_true) only: no grid, no set sizes
    # replications between checkpoints (None: experiment's)
    checkpoint_every: int | None = checked(None, ge=1)


@dataclass
class PriorConfig:
    g: float = checked(100.0, gt=0)  # beta | sigma^2 ~ N(0, sigma^2 g I)
    a0: float = checked(1.0, gt=0)  # sigma^2 ~ InvGamma(a0, b0)
    b0: float = checked(1.0, gt=0)


@dataclass
class ApplyConfig:
    """``python -m papers.conformal_bma.apply``: CBMA's prediction set (and each candidate's,
    with the model weights) for every row of a user's test table (configs/apply/
    conformal_bma.yaml; shared/apply.py)."""

    train: str | None = None  # CSV: the response column and the inputs (header row, numbers)
    test: str | None = None  # CSV: the same inputs (the response too, optionally: coverage)
    target: str | None = None  # the response column's name
    models: list[CandidateConfig] = field(default_factory=list)  # the candidates, as settings'
    model_prior: list[float] | None = checked(None, gt=0)  # None: uniform p(M_k) = 1/K
    alpha: float = checked(0.1, gt=0, lt=1)
    grid_size: int = checked(400, ge=2)  # G, y-grid points
    grid_margin_sd: float = checked(3.0, gt=0)
    prior: PriorConfig = field(default_factory=PriorConfig)
    standardise: bool = True  # x and y standardised on the training table (answers in y units)
    out: str = "outputs/conformal_bma/apply"

    def validate(self) -> None:
        for key in ("train", "test", "target"):
            require(bool(getattr(self, key)), key, getattr(self, key), "is needed")
        names = [m.name for m in self.models]
        require(bool(names), "models", names, "name at least one candidate")
        require(len(set(names)) == len(names), "models", names, "names a model twice")
        if self.model_prior is not None:
            require(
                len(self.model_prior) == len(names),
                "model_prior",
                self.model_prior,
                f"must hold one weight per model ({len(names)}: {names})",
            )


@dataclass
class Config(ExperimentConfig):
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "numpy and scikit-learn estimators: no tensor goes to a device"
    # cb (one per candidate), cbma, cbma_frozen (ablation), bma_credible, split_conformal
    methods: list[str] = field(default_factory=lambda: ["cb", "cbma"])
    # name -> setting; null disables a setting inherited from another config file
    settings: dict[str, SettingConfig | None] = field(default_factory=dict)
    alpha: float = checked(0.1, gt=0, lt=1)  # miscoverage level
    n_train: int = checked(100, ge=1)
    n_test: int = checked(50, ge=1)  # test points per replication
    # drawn in sequence from one generator per setting
    replications: int = checked(40, ge=1)
    grid_size: int = checked(400, ge=2)  # G, y-grid points
    # grid = [min y - m sd y, max y + m sd y]
    grid_margin_sd: float = checked(3.0, gt=0)
    prior: PriorConfig = field(default_factory=PriorConfig)
    # OLS features of the split-conformal baseline (0: the intercept alone)
    split_conformal_degree: int = checked(2, ge=0)
    data_root: str | None = None  # local folder for real data sets (never downloaded)
    standardise: bool = False  # standardise x and y on the training split (real data)
    plot_x_points: int = checked(60, ge=1)  # x values of the prediction-band plot
    checkpoint_every: int = checked(10, ge=1)  # replications between checkpoints
    # Also report every interval's mean length relative to the shortest and the longest
    # single-candidate CB length (length_over_best_cb, length_over_worst_cb) and CBMA's mean
    # weight on each candidate at the true y (weight_<model>): the real rung's claims
    compare_candidates: bool = False

    def validate(self) -> None:
        super().validate()
        for name, setting in self.settings.items():
            if setting is None:  # disabled
                continue
            key = f"settings.{name}"
            names = [m.name for m in setting.models]
            require(bool(names), f"{key}.models", [], "name at least one model")
            # the rows cb_<name> and the weights weight_<name> are keyed by the model's name
            require(len(set(names)) == len(names), f"{key}.models", names, "names a model twice")
            # log_model_prior: one weight per model, in its order
            if setting.model_prior is not None:
                require(
                    len(setting.model_prior) == len(names),
                    f"{key}.model_prior",
                    setting.model_prior,
                    f"must hold one weight per model ({len(names)}: {names})",
                )
            # run_setting reports CBMA's weight on the true model only when it is a candidate
            if setting.true_model is not None:
                require(
                    setting.true_model in names,
                    f"{key}.true_model",
                    setting.true_model,
                    f"choose one of {key}.models: {', '.join(names)}",
                )
            if setting.source != SIMULATED:
                continue
            # simulated data have one unnamed input column
            for k, model in enumerate(setting.models):
                require(
                    model.columns is None,
                    f"{key}.models.{k}.columns",
                    model.columns,
                    "only a real table has named columns (simulated data have one input)",
                )
            require(
                setting.x_low < setting.x_high,
                f"{key}.x_low",
                setting.x_low,
                f"must be < {key}.x_high ({setting.x_high})",
            )
            # method.check_inputs: each candidate's 1 + degree parameters need as many points
            n_train = setting.n_train or self.n_train
            for k, model in enumerate(setting.models):
                require(
                    n_train >= 1 + model.degree,
                    f"{key}.models.{k}.degree",
                    model.degree,
                    f"has {1 + model.degree} parameters, more than n_train ({n_train}) points",
                )
