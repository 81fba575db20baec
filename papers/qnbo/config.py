"""Typed config of the qNBO experiment (schema for configs/qnbo/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    ReadOnlyWhere,
    checked,
    require,
    require_at_most,
)
from shared.images import IMAGE_SOURCES

TOYS = ("quadratic", "hyper_cleaning")  # train.py imports it
KINDS = ("bfgs", "sr1")  # method.QNMemory's quasi-Newton recursions
CURVATURES = ("finite_difference", "autograd")  # method.subroutine_b's Hessian products
# digits | fashion_mnist | a user's image set: idx (MNIST layout) | npz (shared/images.py);
# data.py imports it (config imports no torch)
SOURCES = ("digits", "fashion_mnist", *IMAGE_SOURCES)
DIGITS_IMAGES = 1797  # scikit-learn's bundled digits
FASHION_TRAIN_IMAGES = 60000  # Fashion-MNIST's training split
FASHION_TEST_IMAGES = 10000  # and its test split


@dataclass
class BudgetConfig:
    """Per-method budgets of one toy (brief Sec. 3.5, 5)."""

    qnbo_P: int = checked(3, ge=0)  # Subroutine A warm-up GD steps
    qnbo_T: int = checked(10, ge=1)  # Subroutine A qN steps
    qnbo_Q: int = checked(10, ge=0)  # Subroutine B qN iterations (the ablation sets it to 0)
    aid_T: int = checked(13, ge=1)  # AID-BIO / AmIGO-CG lower-level GD steps
    aid_N: int = checked(10, ge=1)  # Richardson or CG steps on the linear system
    # upper-level step; None: the toy's closed-form choice
    alpha: float | None = checked(None, gt=0)
    outer_steps: int = checked(200, ge=1)  # K
    report_at: int = checked(50, ge=1)  # k at which the intermediate metric is read


@dataclass
class QuadraticConfig:
    d_y: int = checked(50, ge=1)
    d_x: int = checked(20, ge=1)
    condition: float = checked(100.0, ge=1)  # kappa of A (eigenvalues log-spaced in [1, kappa])
    target_sd: float = checked(3.0, ge=0)  # y_tgt ~ N(0, 9)
    rho: float = checked(0.1, ge=0)  # ridge weight of the upper level
    budget: BudgetConfig = field(default_factory=BudgetConfig)


@dataclass
class HyperCleaningConfig:
    n_train: int = checked(1000, ge=1)
    n_val: int = checked(300, ge=1)  # the rest of the 1797 digits is the test set
    # fraction of training labels replaced by random classes
    corruption: float = checked(0.5, ge=0, le=1)
    mu: float = checked(1e-2, ge=0)  # ridge weight of the lower level
    # digits (scikit-learn's bundled 8 x 8 digits, the toy) | fashion_mnist (the real rung:
    # Debian's dataset-fashion-mnist idx.gz files, fetched by scripts/fetch_assets.py) |
    # idx / npz: a user's image set at ``path`` (shared/images.py: pixels put on [0, 1] by
    # the set's own range; train and val drawn from its training images, test its test split)
    source: str = checked("digits", choices=SOURCES)
    path: str | None = None  # idx: the folder of the four MNIST-named files; npz: the file
    # npz without x_test / y_test: the share of x held out for testing, by split_seed (fixed
    # across seeds, as Fashion-MNIST's test split)
    test_fraction: float = checked(1 / 7, gt=0, lt=1)
    split_seed: int = checked(0, ge=0)
    # test examples: None = all (digits: those left after train/val; fashion_mnist: the 10k
    # test split); a number draws that many per seed
    n_test: int | None = checked(None, ge=1)
    # also record validation/test accuracy, test CE and the corruption-detection AUC of the
    # weights, and accuracy curves per outer step (the real rung; off for the toy, whose
    # committed results hold the metrics above only)
    track_accuracy: bool = False
    # upper-level step per training example: alpha = alpha_per_example * n_train, since the
    # per-example weights' hypergradients are O(1/n) (brief Sec. 3.4; the toy's alpha = 100
    # at n = 1000 is 0.1 per example); None: budget.alpha as given
    alpha_per_example: float | None = checked(None, gt=0)
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
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "float64 torch on the CPU: its solvers never move a tensor to a device"
    # a user's image set's keys are read only where hyper_cleaning.source names one
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=("hyper_cleaning.path",),
            where=f"hyper_cleaning.source={' or '.join(IMAGE_SOURCES)}",
            reads=lambda h, _: h.source in IMAGE_SOURCES,
        ),
        ReadOnlyWhere(
            keys=("hyper_cleaning.test_fraction", "hyper_cleaning.split_seed"),
            where="hyper_cleaning.source=npz",
            reads=lambda h, _: h.source == "npz",
        ),
    )
    # qnbo, qnbo_q0 (ablation: Q = 0), aid_bio (Richardson), amigo_cg (conjugate gradients)
    methods: list[str] = field(default_factory=lambda: ["qnbo", "qnbo_q0", "aid_bio", "amigo_cg"])
    toys: list[str] = checked(factory=lambda: list(TOYS), choices=TOYS)
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    kind: str = checked("bfgs", choices=KINDS)  # quasi-Newton variant: bfgs | sr1
    # Subroutine B's Hessian products: or autograd
    curvature: str = checked("finite_difference", choices=CURVATURES)
    gamma: float = checked(1.0, gt=0)  # qN step
    quadratic: QuadraticConfig = field(default_factory=QuadraticConfig)
    hyper_cleaning: HyperCleaningConfig = field(default_factory=HyperCleaningConfig)

    def validate(self) -> None:
        super().validate()
        require(bool(self.toys), "toys", self.toys, "name at least one toy")
        require(len(set(self.toys)) == len(self.toys), "toys", self.toys, "lists a toy twice")
        for toy in self.toys:  # case 5: report_at past the last outer step indexed nothing
            budget = getattr(self, toy).budget
            require_at_most(
                f"{toy}.budget.report_at",
                budget.report_at,
                budget.outer_steps,
                f"{toy}.budget.outer_steps ({budget.outer_steps})",
            )
        h = self.hyper_cleaning
        if "hyper_cleaning" in self.toys:  # data._hyper_cleaning_pool draws from the data set
            fit = h.n_train + h.n_val
            if h.source == "digits":  # train and val from the 1797 digits, the rest tests
                test = DIGITS_IMAGES - fit
                require(
                    test >= 1,
                    "hyper_cleaning.n_train",
                    h.n_train,
                    f"+ n_val ({h.n_val}) leaves none of the {DIGITS_IMAGES} digits for testing",
                )
            elif h.source == "fashion_mnist":  # train, val: the 60k training images; test: 10k
                test = FASHION_TEST_IMAGES
                require(
                    fit <= FASHION_TRAIN_IMAGES,
                    "hyper_cleaning.n_train",
                    h.n_train,
                    f"+ n_val ({h.n_val}) exceeds the {FASHION_TRAIN_IMAGES} Fashion-MNIST "
                    "training images",
                )
            else:  # a user's set: its sizes are checked against the file at start
                require(
                    bool(h.path),
                    "hyper_cleaning.path",
                    h.path,
                    f"hyper_cleaning.source={h.source} needs the image set's path",
                )
                test = None
            if h.n_test is not None and test is not None:
                require_at_most("hyper_cleaning.n_test", h.n_test, test, f"the {test} test images")
