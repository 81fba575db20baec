"""Typed config of the qNBO experiment (schema for configs/qnbo/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    require_at_least,
    require_at_most,
    require_choice,
    require_choices,
)


@dataclass
class BudgetConfig:
    """Per-method budgets of one toy (brief Sec. 3.5, 5)."""

    qnbo_P: int = 3  # Subroutine A warm-up GD steps
    qnbo_T: int = 10  # Subroutine A qN steps
    qnbo_Q: int = 10  # Subroutine B qN iterations (the ablation sets it to 0)
    aid_T: int = 13  # AID-BIO / AmIGO-CG lower-level GD steps
    aid_N: int = 10  # Richardson or CG steps on the linear system
    alpha: float | None = None  # upper-level step; None: the toy's closed-form choice
    outer_steps: int = 200  # K
    report_at: int = 50  # k at which the intermediate metric is read


@dataclass
class QuadraticConfig:
    d_y: int = 50
    d_x: int = 20
    condition: float = 100.0  # kappa of A (eigenvalues log-spaced in [1, kappa])
    target_sd: float = 3.0  # y_tgt ~ N(0, 9)
    rho: float = 0.1
    budget: BudgetConfig = field(default_factory=BudgetConfig)


@dataclass
class HyperCleaningConfig:
    n_train: int = 1000
    n_val: int = 300  # the rest of the 1797 digits is the test set
    corruption: float = 0.5  # fraction of training labels replaced by random classes
    mu: float = 1e-2  # ridge weight of the lower level
    # digits (scikit-learn's bundled 8 x 8 digits, the toy) | fashion_mnist (the real rung:
    # Debian's dataset-fashion-mnist idx.gz files, fetched by scripts/fetch_assets.py)
    source: str = "digits"
    # test examples: None = all (digits: those left after train/val; fashion_mnist: the 10k
    # test split); a number draws that many per seed
    n_test: int | None = None
    # also record validation/test accuracy, test CE and the corruption-detection AUC of the
    # weights, and accuracy curves per outer step (the real rung; off for the toy, whose
    # committed results hold the metrics above only)
    track_accuracy: bool = False
    # upper-level step per training example: alpha = alpha_per_example * n_train, since the
    # per-example weights' hypergradients are O(1/n) (brief Sec. 3.4; the toy's alpha = 100
    # at n = 1000 is 0.1 per example); None: budget.alpha as given
    alpha_per_example: float | None = None
    budget: BudgetConfig = field(
        default_factory=lambda: BudgetConfig(
            qnbo_P=5,
            qnbo_T=10,
            qnbo_Q=10,
            aid_T=15,
            aid_N=10,
            alpha=100.0,
            outer_steps=90,
            report_at=30,
        )
    )


@dataclass
class Config(ExperimentConfig):
    # qnbo, qnbo_q0 (ablation: Q = 0), aid_bio (Richardson), amigo_cg (conjugate gradients)
    methods: list[str] = field(default_factory=lambda: ["qnbo", "qnbo_q0", "aid_bio", "amigo_cg"])
    toys: list[str] = field(default_factory=lambda: ["quadratic", "hyper_cleaning"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    kind: str = "bfgs"  # quasi-Newton variant: bfgs | sr1
    curvature: str = "finite_difference"  # Subroutine B's Hessian products: or autograd
    gamma: float = 1.0  # qN step
    quadratic: QuadraticConfig = field(default_factory=QuadraticConfig)
    hyper_cleaning: HyperCleaningConfig = field(default_factory=HyperCleaningConfig)

    def validate(self) -> None:
        super().validate()
        require_choices("toys", self.toys, ("quadratic", "hyper_cleaning"))
        require_choice("kind", self.kind, ("bfgs", "sr1"))
        require_choice("curvature", self.curvature, ("finite_difference", "autograd"))
        for toy in self.toys:  # case 5: report_at past the last outer step indexed nothing
            budget = getattr(self, toy).budget
            require_at_least(f"{toy}.budget.outer_steps", budget.outer_steps, 1)
            require_at_least(f"{toy}.budget.report_at", budget.report_at, 1)
            require_at_most(
                f"{toy}.budget.report_at",
                budget.report_at,
                budget.outer_steps,
                f"{toy}.budget.outer_steps ({budget.outer_steps})",
            )
            for key in ("qnbo_P", "qnbo_T", "aid_T", "aid_N"):
                require_at_least(f"{toy}.budget.{key}", getattr(budget, key), 1)
            require_at_least(f"{toy}.budget.qnbo_Q", budget.qnbo_Q, 0)  # 0: the ablation
