"""Typed config of the PPI-ATE experiment (schema for configs/ppi_ate/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, require, require_at_least, require_choice


@dataclass
class LearnerConfig:
    """scikit-learn nuisance and CATE learners (see papers/ppi_ate/model.py)."""

    # D2's CATE model and its nuisances
    outcome: str = "spline"  # spline | linear | gradient_boosting (per-arm regressions)
    propensity: str = "logistic"  # logistic | gradient_boosting (the DR-learner's)
    cate: str = "t_learner"  # D2 CATE model: t_learner | dr_learner (linear final stage)
    # D1's AIPW nuisances (cross-fitted); the same choices as outcome / propensity
    d1_outcome: str = "spline"
    # logistic | gradient_boosting | constant (the training folds' treated share: an RCT's
    # design propensity estimated by its arm share); unused when the propensity is known
    d1_propensity: str = "logistic"
    n_knots: int = 6  # spline: SplineTransformer knots
    spline_degree: int = 3
    gb_n_estimators: int = 100  # gradient boosting (sklearn defaults)
    gb_max_depth: int = 3
    n_folds: int = 2  # cross-fitting folds for D1's nuisances (and the DR-learner's)
    propensity_clip: list[float] = field(default_factory=lambda: [0.01, 0.99])


@dataclass
class SettingConfig:
    """One data-generating setting: D1 (small, unconfounded) and D2 (large, confounded)."""

    # closed_form (the brief's toy DGP) | gp (official DGP) | real (an experiment a package
    # ships, configs/ppi_ate/real.yaml: D1 a random subset, D2 the rest, confounded)
    generator: str = "closed_form"
    d1_design: str = "rct"  # rct (known P(A=1)) | observational (estimated propensity)
    rct_propensity: float = 0.5
    use_known_propensity: bool = True  # RCT: plug in the known value instead of estimating
    n_d1: int = 200
    n_d2: int = 4000  # split into halves: CATE training / measure of fit
    # closed_form: mu0 = 1 + 0.5x + 2u, mu1 = mu0 + 1 + 3 sin(3x) + 2x^2 + u, Y = mu_A + sd eps
    noise_sd: float = 0.5
    d1_propensity_slope: float = 0.8  # observational D1: e(x) = sigmoid(slope x)
    d2_propensity_x: float = 0.5  # D2: e(x, u) = clip(sigmoid(bx x + bu u), clip)
    d2_propensity_u: float = 2.0
    d2_propensity_clip: list[float] = field(default_factory=lambda: [0.05, 0.95])
    # gp (official synthetic DGP, brief Sec. 6): GP outcome surfaces on [-1, 1]^2
    gp_data_seed: int = 17
    gp_grid_points: int = 51
    gp_variance: float = 5.0
    gp_outcome0_lengthscale: list[float] = field(default_factory=lambda: [1.0, 1.0])
    gp_outcome0_linear: list[float] = field(default_factory=lambda: [1.0, 1.0])
    gp_outcome1_lengthscale: list[float] = field(default_factory=lambda: [0.5, 0.5])
    gp_outcome1_linear: list[float] = field(default_factory=lambda: [5.0, 5.0])
    gp_selection_lengthscale: list[float] = field(default_factory=lambda: [1.0, 1.0e6])
    gp_selection_linear: list[float] = field(default_factory=lambda: [0.0, 0.0])
    gp_treatment_lengthscale: list[float] = field(default_factory=lambda: [1.0e6, 0.5])
    gp_treatment_linear: list[float] = field(default_factory=lambda: [0.0, 10.0])
    gp_propensity_clip: list[float] = field(default_factory=lambda: [0.1, 0.9])
    # real (data.REAL_DATASETS): black_politicians | thornton_hiv | nsw_cps
    real_dataset: str = ""
    # W: a D1 covariate that D2's treatment selection depends on and D2's covariates leave out
    # ("" = none). D2 keeps treated units with probability proportional to p(W) and controls
    # to 1 - p(W), p = clip(sigmoid(logit(pi) + selection_strength u(W)), d2_propensity_clip),
    # u(W) = W's rank mapped to [-1, 1]: P(A = 1 | W) in D2 becomes p(W), P(X) stays the
    # experiment's (data.confounded_keep_probability). nsw_cps: no selection, W only dropped.
    hidden_covariate: str = ""
    selection_strength: float = 2.0  # the toy's coefficient 2 on U ~ U[-1, 1]
    # real: n_d1 = D1's size (a random subset; nsw_cps: 0 = all of NSW); n_d2 = 0 keeps every
    # unit D2's selection keeps, n_d2 > 0 caps D2 at that many (a random subset)


@dataclass
class Config(ExperimentConfig):
    # aipw (D1 only), ppi, d2_only; ablation: ppi_fit_on_d1 (measure of fit on D1's own X)
    methods: list[str] = field(default_factory=lambda: ["aipw", "ppi", "d2_only"])
    settings: dict[str, SettingConfig | None] = field(default_factory=dict)
    alpha: float = 0.05
    replications: int = 300  # independent replications drawn in sequence from one stream
    aipw_variant: str = "correct"  # correct | official_code (operator-precedence quirk)
    learners: LearnerConfig = field(default_factory=LearnerConfig)
    checkpoint_every: int = 50  # replications between checkpoints
    plot_replications: int = 40  # intervals drawn in the plot
    # real settings: covariate-shift check of D1's against D2's covariates (method.shift_check)
    shift_alpha: float = 0.05  # family-wise level of the per-covariate z-tests (Bonferroni)
    shift_smd: float = 0.1  # ... and a standardised mean difference above this to flag

    def validate(self) -> None:
        super().validate()
        require(0 < self.alpha < 1, "alpha", self.alpha, "must be in (0, 1)")
        require(0 < self.shift_alpha < 1, "shift_alpha", self.shift_alpha, "must be in (0, 1)")
        require_at_least("replications", self.replications, 1)
        require_at_least("checkpoint_every", self.checkpoint_every, 1)
        require_at_least("plot_replications", self.plot_replications, 0)
        require_choice("aipw_variant", self.aipw_variant, ("correct", "official_code"))
        require_at_least("learners.n_folds", self.learners.n_folds, 2)
        for name, setting in self.settings.items():
            if setting is None:  # disabled
                continue
            require_choice(
                f"settings.{name}.generator", setting.generator, ("closed_form", "gp", "real")
            )
            require_choice(
                f"settings.{name}.d1_design", setting.d1_design, ("rct", "observational")
            )
