"""Typed config of the PPI-ATE experiment (schema for configs/ppi_ate/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from shared.config import ExperimentConfig, ReadOnlyWhere, checked, require

# model.outcome_factory, model.propensity_factory, train.intervals' CATE models
OUTCOME_LEARNERS = ("spline", "linear", "gradient_boosting")
PROPENSITY_LEARNERS = ("logistic", "gradient_boosting", "constant")
CATE_LEARNERS = ("t_learner", "dr_learner")
GENERATORS = ("closed_form", "gp", "real")
REAL = "real"
D1_DESIGNS = ("rct", "observational")
# data.REAL_DATASETS' covariates, in their column order (data.py imports this module, not the
# reverse): a setting's hidden_covariate is checked against them before any data is read
REAL_COVARIATES = {
    # Butler & Broockman (2011): e-mails to 5,593 U.S. state legislators
    "black_politicians": (
        "leg_black",
        "totalpop",
        "medianhhincom",
        "black_medianhh",
        "white_medianhh",
        "blackpercent",
        "statessquireindex",
        "nonblacknonwhite",
        "urbanpercent",
        "leg_senator",
        "leg_democrat",
        "south",
    ),
    # Thornton (2008): HIV-result incentives in Malawi
    "thornton_hiv": ("age", "distvct", "hiv2004"),
    # LaLonde (1986) via Dehejia & Wahba: NSW and the CPS comparison group
    "nsw_cps": ("age", "educ", "black", "hisp", "marr", "nodegree", "re74", "re75"),
}
REAL_DATASET_NAMES = tuple(REAL_COVARIATES)  # the shipped experiments (shared/assets.py)
# real_dataset=csv: a user's own randomised experiment, one CSV whose treatment, outcome and
# covariate columns the setting names (data.load_experiment_csv)
CSV_DATASET = "csv"
# the CSV's own columns, read only by a real_dataset=csv setting
CSV_KEYS = ("path", "treatment", "outcome", "covariates")
# configs/ppi_ate/real.yaml's slot for a user's experiment: off until its path names a file
OWN_SETTING = "own"
AIPW_VARIANTS = ("correct", "official_code")  # method.py imports it
# method.split_d2: D2 is cut into a training and an evaluation half of at least two rows each
MIN_D2_ROWS = 4


def _check_clip(key: str, clip: list[float]) -> None:
    """A [low, high] clip of propensities (np.clip(e, *clip)); the entries' range is a bound."""
    require(len(clip) == 2, key, clip, "must be [low, high]")
    require(clip[0] <= clip[1], key, clip, "must be [low, high] with low <= high")


def is_off(setting: SettingConfig) -> bool:
    """A real_dataset=csv setting whose path is unset (configs/ppi_ate/real.yaml's ``own``
    slot, waiting for a user's file): it runs nothing and its other keys are not read."""
    return setting.generator == REAL and setting.real_dataset == CSV_DATASET and not setting.path


def _check_csv_columns(key: str, setting: SettingConfig) -> None:
    """real_dataset=csv: the file and its columns are named, the covariates at least one, and
    no column plays two parts (data.load_experiment_csv reads them; the file is checked at
    start by train.data_preflight)."""
    for name in ("treatment", "outcome"):
        require(
            bool(getattr(setting, name)),
            f"{key}.{name}",
            getattr(setting, name),
            f"real_dataset={CSV_DATASET} with a path needs its treatment and outcome columns",
        )
    require(
        bool(setting.covariates),
        f"{key}.covariates",
        setting.covariates,
        f"real_dataset={CSV_DATASET} needs at least one covariate column",
    )
    roles = [setting.treatment, setting.outcome, *setting.covariates]
    require(
        len(set(roles)) == len(roles),
        f"{key}.covariates",
        setting.covariates,
        "each column plays one part: the treatment, the outcome and the covariates differ",
    )


@dataclass
class LearnerConfig:
    """scikit-learn nuisance and CATE learners (see papers/ppi_ate/model.py)."""

    # D2's CATE model and its nuisances
    # spline | linear | gradient_boosting (per-arm regressions)
    outcome: str = checked("spline", choices=OUTCOME_LEARNERS)
    # logistic | gradient_boosting (the DR-learner's)
    propensity: str = checked("logistic", choices=PROPENSITY_LEARNERS)
    # D2 CATE model: t_learner | dr_learner (linear final stage)
    cate: str = checked("t_learner", choices=CATE_LEARNERS)
    # D1's AIPW nuisances (cross-fitted); the same choices as outcome / propensity
    d1_outcome: str = checked("spline", choices=OUTCOME_LEARNERS)
    # logistic | gradient_boosting | constant (the training folds' treated share: an RCT's
    # design propensity estimated by its arm share); unused when the propensity is known
    d1_propensity: str = checked("logistic", choices=PROPENSITY_LEARNERS)
    n_knots: int = checked(6, ge=2)  # spline: SplineTransformer knots (it needs two)
    spline_degree: int = checked(3, ge=0)
    gb_n_estimators: int = checked(100, ge=1)  # gradient boosting (sklearn defaults)
    gb_max_depth: int = checked(3, ge=1)
    n_folds: int = checked(2, ge=2)  # cross-fitting folds for D1's nuisances (and the DR-learner's)
    # [low, high]: estimated propensities clipped into (0, 1)
    propensity_clip: list[float] = checked(factory=lambda: [0.01, 0.99], gt=0, lt=1)


@dataclass
class SettingConfig:
    """One data-generating setting: D1 (small, unconfounded) and D2 (large, confounded)."""

    # closed_form (the brief's toy DGP) | gp (official DGP) | real (an experiment a package
    # ships, configs/ppi_ate/real.yaml: D1 a random subset, D2 the rest, confounded)
    generator: str = checked("closed_form", choices=GENERATORS)
    # rct (known P(A=1)) | observational (estimated propensity)
    d1_design: str = checked("rct", choices=D1_DESIGNS)
    rct_propensity: float = checked(0.5, gt=0, lt=1)
    use_known_propensity: bool = True  # RCT: plug in the known value instead of estimating
    n_d1: int = checked(200, ge=0)  # real nsw_cps: 0 = all of NSW (below)
    n_d2: int = checked(4000, ge=0)  # split into halves: CATE training / measure of fit
    # closed_form: mu0 = 1 + 0.5x + 2u, mu1 = mu0 + 1 + 3 sin(3x) + 2x^2 + u, Y = mu_A + sd eps
    noise_sd: float = checked(0.5, ge=0)
    # observational D1: e(x) = sigmoid(slope x)
    d1_propensity_slope: float = checked(0.8, free="a logistic slope may take either sign")
    # D2: e(x, u) = clip(sigmoid(bx x + bu u), clip)
    d2_propensity_x: float = checked(0.5, free="a logistic slope may take either sign")
    d2_propensity_u: float = checked(2.0, free="a logistic slope may take either sign")
    d2_propensity_clip: list[float] = checked(factory=lambda: [0.05, 0.95], gt=0, lt=1)
    # gp (official synthetic DGP, brief Sec. 6): GP outcome surfaces on [-1, 1]^2
    gp_data_seed: int = checked(17, ge=0)
    # the bicubic spline through the grid needs four points per axis
    gp_grid_points: int = checked(51, ge=4)
    gp_variance: float = checked(5.0, gt=0)
    # per axis (x, u), or one value for both: RBF lengthscales > 0, linear-kernel weights >= 0
    gp_outcome0_lengthscale: list[float] = checked(factory=lambda: [1.0, 1.0], gt=0)
    gp_outcome0_linear: list[float] = checked(factory=lambda: [1.0, 1.0], ge=0)
    gp_outcome1_lengthscale: list[float] = checked(factory=lambda: [0.5, 0.5], gt=0)
    gp_outcome1_linear: list[float] = checked(factory=lambda: [5.0, 5.0], ge=0)
    gp_selection_lengthscale: list[float] = checked(factory=lambda: [1.0, 1.0e6], gt=0)
    gp_selection_linear: list[float] = checked(factory=lambda: [0.0, 0.0], ge=0)
    gp_treatment_lengthscale: list[float] = checked(factory=lambda: [1.0e6, 0.5], gt=0)
    gp_treatment_linear: list[float] = checked(factory=lambda: [0.0, 10.0], ge=0)
    gp_propensity_clip: list[float] = checked(factory=lambda: [0.1, 0.9], gt=0, lt=1)
    # real (data.REAL_DATASETS): black_politicians | thornton_hiv | nsw_cps | csv (your own)
    real_dataset: str = checked("", choices=("", *REAL_DATASET_NAMES, CSV_DATASET))
    # real_dataset=csv: a randomised experiment as one CSV with a header row; the treatment
    # column (0/1), the outcome and the covariates by name, every one numeric and complete (a
    # missing column, a text value, a gap or a non-binary treatment stops the run at start,
    # naming the file and the column). D1 and the confounded D2 are split from it as for the
    # shipped experiments; hidden_covariate names one of ``covariates``.
    path: str | None = None
    treatment: str | None = None
    outcome: str | None = None
    covariates: list[str] | None = None
    # W: a D1 covariate that D2's treatment selection depends on and D2's covariates leave out
    # ("" = none). D2 keeps treated units with probability proportional to p(W) and controls
    # to 1 - p(W), p = clip(sigmoid(logit(pi) + selection_strength u(W)), d2_propensity_clip),
    # u(W) = W's rank mapped to [-1, 1]: P(A = 1 | W) in D2 becomes p(W), P(X) stays the
    # experiment's (data.confounded_keep_probability). nsw_cps: no selection, W only dropped.
    hidden_covariate: str = ""
    # the toy's coefficient 2 on U ~ U[-1, 1]
    selection_strength: float = checked(
        2.0, free="a selection coefficient may take either sign (it reverses the selection)"
    )
    # real: n_d1 = D1's size (a random subset; nsw_cps: 0 = all of NSW); n_d2 = 0 keeps every
    # unit D2's selection keeps, n_d2 > 0 caps D2 at that many (a random subset)


@dataclass
class ApplyConfig:
    """``python -m papers.ppi_ate.apply``: PPI's interval of the ATE for one pair of data sets,
    a user's D1 and D2 (configs/apply/ppi_ate.yaml; shared/apply.py)."""

    d1: str | None = None  # CSV: the small unconfounded data set (an RCT, or every confounder)
    d2: str | None = None  # CSV: the large, possibly confounded one (same population, Sec. 3.1)
    treatment: str | None = None  # the 0/1 treatment column, in both files
    outcome: str | None = None  # the outcome column, in both files
    covariates: list[str] | None = None  # the columns both files hold: the CATE model's inputs
    # D1's own further columns (confounders D2 lacks): D1's nuisances read them too
    d1_only_covariates: list[str] = field(default_factory=list)
    d1_design: str = checked("rct", choices=D1_DESIGNS)  # rct | observational
    use_known_propensity: bool = False  # an RCT: plug in rct_propensity instead of estimating
    rct_propensity: float = checked(0.5, gt=0, lt=1)
    alpha: float = checked(0.05, gt=0, lt=1)
    aipw_variant: str = checked("correct", choices=AIPW_VARIANTS)
    learners: LearnerConfig = field(default_factory=LearnerConfig)
    shift_alpha: float = checked(0.05, gt=0, lt=1)  # the covariate-shift check (shift_check)
    shift_smd: float = checked(0.1, ge=0)
    seed: int = checked(0, ge=0)  # D2's two halves and the cross-fitting folds
    out: str = "outputs/ppi_ate/apply"  # answer.json goes here

    def validate(self) -> None:
        for key in ("d1", "d2", "treatment", "outcome"):
            require(bool(getattr(self, key)), key, getattr(self, key), "is needed")
        require(bool(self.covariates), "covariates", self.covariates, "name at least one")
        roles = [self.treatment, self.outcome, *self.covariates, *self.d1_only_covariates]
        require(
            len(set(roles)) == len(roles),
            "covariates",
            self.covariates,
            "each column plays one part: treatment, outcome and covariates differ",
        )
        _check_clip("learners.propensity_clip", self.learners.propensity_clip)


@dataclass
class Config(ExperimentConfig):
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "numpy and scikit-learn estimators: no tensor goes to a device"
    # the covariate D2 leaves out exists in a real experiment only (data.load_real)
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=("settings.*.hidden_covariate",),
            where="a generator=real setting (scale=real)",
            reads=lambda setting, _: setting.generator == REAL,
        ),
        ReadOnlyWhere(
            keys=tuple(f"settings.*.{key}" for key in CSV_KEYS),
            where=f"a generator=real setting with real_dataset={CSV_DATASET}",
            reads=lambda setting, _: (
                setting.generator == REAL and setting.real_dataset == CSV_DATASET
            ),
        ),
        # a csv setting without its file (real.yaml's ``own``) runs nothing: its keys too
        # (but the three that switch it on: its path, or another generator or data set)
        ReadOnlyWhere(
            keys=tuple(
                f"settings.*.{f.name}"
                for f in fields(SettingConfig)
                if f.name not in ("generator", "real_dataset", "path")
            ),
            where=f"a real_dataset={CSV_DATASET} setting whose path names the file",
            reads=lambda setting, _: not is_off(setting),
        ),
    )
    # aipw (D1 only), ppi, d2_only; ablation: ppi_fit_on_d1 (measure of fit on D1's own X)
    methods: list[str] = field(default_factory=lambda: ["aipw", "ppi", "d2_only"])
    settings: dict[str, SettingConfig | None] = field(default_factory=dict)
    alpha: float = checked(0.05, gt=0, lt=1)
    # independent replications drawn in sequence from one stream
    replications: int = checked(300, ge=1)
    # correct | official_code (operator-precedence quirk)
    aipw_variant: str = checked("correct", choices=AIPW_VARIANTS)
    learners: LearnerConfig = field(default_factory=LearnerConfig)
    checkpoint_every: int = checked(50, ge=1)  # replications between checkpoints
    plot_replications: int = checked(40, ge=0)  # intervals drawn in the plot
    # real settings: covariate-shift check of D1's against D2's covariates (method.shift_check)
    # family-wise level of the per-covariate z-tests (Bonferroni)
    shift_alpha: float = checked(0.05, gt=0, lt=1)
    # ... and a standardised mean difference above this to flag
    shift_smd: float = checked(0.1, ge=0)

    def validate(self) -> None:
        super().validate()
        _check_clip("learners.propensity_clip", self.learners.propensity_clip)
        for name, setting in self.settings.items():
            if setting is None:  # disabled
                continue
            key = f"settings.{name}"
            real = setting.generator == REAL
            if is_off(setting):  # real.yaml's own slot before its path is set
                continue
            _check_clip(f"{key}.d2_propensity_clip", setting.d2_propensity_clip)
            _check_clip(f"{key}.gp_propensity_clip", setting.gp_propensity_clip)
            # data.load_real reads the experiment real_dataset names
            require(
                not real or bool(setting.real_dataset),
                f"{key}.real_dataset",
                setting.real_dataset,
                f"generator=real needs one of {', '.join((*REAL_DATASET_NAMES, CSV_DATASET))}",
            )
            if real and setting.real_dataset == CSV_DATASET:
                _check_csv_columns(key, setting)
            # data.real_draw hides this covariate from D2 and selects D2's treatment on it
            if real and setting.hidden_covariate:
                covariates = (
                    tuple(setting.covariates or ())
                    if setting.real_dataset == CSV_DATASET
                    else REAL_COVARIATES.get(setting.real_dataset, ())
                )
                require(
                    setting.hidden_covariate in covariates,
                    f"{key}.hidden_covariate",
                    setting.hidden_covariate,
                    f"choose a covariate of {setting.real_dataset} ({', '.join(covariates)}) "
                    "or '' (none)",
                )
            # D2's CATE model trains on one half and is measured on the other (method.split_d2);
            # real: n_d2 = 0 keeps every unit the selection keeps
            require(
                setting.n_d2 >= MIN_D2_ROWS or (real and setting.n_d2 == 0),
                f"{key}.n_d2",
                setting.n_d2,
                f"must be >= {MIN_D2_ROWS} (two halves of two rows)"
                + (" or 0 (every unit kept)" if real else ""),
            )
            # cross-fitting gives each of the learners.n_folds folds of D1 a row at least;
            # real: n_d1 = 0 takes all of the experiment (nsw_cps)
            n_folds = self.learners.n_folds
            require(
                setting.n_d1 >= n_folds or (real and setting.n_d1 == 0),
                f"{key}.n_d1",
                setting.n_d1,
                f"must be >= learners.n_folds ({n_folds})" + (" or 0 (all)" if real else ""),
            )
            if setting.generator != "gp":
                continue
            # data.rbf_linear_kernel scales the two inputs (x, u) by these, entry by entry
            for kind in ("outcome0", "outcome1", "selection", "treatment"):
                for part in ("lengthscale", "linear"):
                    field_name = f"gp_{kind}_{part}"
                    values = getattr(setting, field_name)
                    require(
                        len(values) in (1, 2),
                        f"{key}.{field_name}",
                        values,
                        "must hold one value per input (x, u), or one for both",
                    )
