"""qNBO's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Toy 1: quadratic bilevel with closed forms (problem seeds 0, 1, 2, K = 200). Toy 2: data
hyper-cleaning on scikit-learn's digits (seeds 0, 1, 2, K = 90). "Each seed" claims measure
the worst seed.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, MeanAtMost, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# CI gates seeds 0, 1 (scripts/reproduce.py runs all three and the held-out three): all three
# measured 83-100 CPU s in CI on the Intel Xeon of 2026-12-06 and 120 on an AMD Zen 3, at the
# 120 CPU-s aim; every claim and the control read the same on each pair of seeds, claim and
# held-out alike (issue 44).
CI_SEEDS = [0, 1]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["qnbo", "qnbo_q0", "aid_bio", "amigo_cg"]
PRIMARY = ("quadratic/qnbo", "gap_final")
PLOT = "convergence.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "gap_at_report",
    "gap_final",
    "val_ce_at_report",
    "val_ce_final",
    "test_acc",
    "lower_gradients",
    "hvps",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

QUAD, CLEAN = "quadratic", "hyper_cleaning"
LABELS = {
    f"{toy}/{m}": f"{short}: {name}"
    for toy, short in ((QUAD, "quadratic"), (CLEAN, "hyper-cleaning"))
    for m, name in (
        ("qnbo", "qNBO (BFGS)"),
        ("qnbo_q0", "qNBO, Q = 0 (ablation)"),
        ("aid_bio", "AID-BIO"),
        ("amigo_cg", "AmIGO-CG"),
    )
}

CLAIMS = [
    Claim(
        "1a: gap(k=50) <= 0.01 x AID-BIO, each seed",
        RatioAtMost("gap_at_report", f"{QUAD}/qnbo", f"{QUAD}/aid_bio", 0.01, every_seed=True),
    ),
    Claim(
        "1b: gap(k=200) <= 1e-8 x initial gap, each seed",
        MeanAtMost("rel_gap_final", (f"{QUAD}/qnbo",), 1e-8, every_seed=True),
    ),
    Claim(
        "2: Q = 0 gap(k=200) >= 100 x qNBO's, each seed",
        RatioAtMost("gap_final", f"{QUAD}/qnbo", f"{QUAD}/qnbo_q0", 0.01, every_seed=True),
    ),
    Claim(
        "3a: val CE(k=30) <= 0.92 x AID-BIO, each seed",
        RatioAtMost("val_ce_at_report", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", 0.92, every_seed=True),
    ),
    Claim(
        "3b: final val CE <= 0.98 x AID-BIO, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", 0.98, every_seed=True),
    ),
    Claim(
        "4a: final val CE <= 1.01 x AmIGO-CG, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/amigo_cg", 1.01, every_seed=True),
    ),
    Claim(
        "4b: Q = 0 final val CE >= 1.05 x qNBO's, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/qnbo_q0", 1 / 1.05, every_seed=True),
    ),
    Claim(
        "5: test accuracy >= AID-BIO - 0.005",
        MarginAtLeast("test_acc", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", -0.005),
    ),
    # Without Subroutine B the lower-level qN matrix inverts the wrong directions.
    Claim(
        "Q = 0 in qNBO's place: gap(k=50) <= 0.01 x AID-BIO",
        RatioAtMost("gap_at_report", f"{QUAD}/qnbo_q0", f"{QUAD}/aid_bio", 0.01, every_seed=True),
        role="negative_control",
    ),
]

# ------------------------------------------------------------------------------------------
# The real rung (configs/qnbo/real.yaml): hyper-cleaning on Fashion-MNIST (n = 2000, 50% of
# the labels corrupted, 500 clean validation images, the 10k test split), seeds 0, 1, 2,
# K = 90. The claims are the brief's toy-2 claims (3a, 3b, 4a, 4b, 5) with their thresholds,
# fixed before the first full real run: the paper reports qNBO "comparable or superior" to
# AID/ITD-type baselines on hyper-cleaning, with no number we could read.
# ------------------------------------------------------------------------------------------
REAL_SEEDS = [0, 1, 2]
REAL_METHODS = METHODS
REAL_PLOT = PLOT  # convergence.png (val CE vs iterations and time, test accuracy), real.png
# in units of the reference workload (tests/cpu_units.py): 900 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 600.0  # the ceiling; measured CPU s in the README "Real data"
REAL_CI = False
REAL_SMOKE_OVERRIDES = (
    "seeds=[0]",
    "hyper_cleaning.n_train=500",
    "hyper_cleaning.n_val=200",
    "hyper_cleaning.n_test=1000",
    "hyper_cleaning.budget.outer_steps=6",
    "hyper_cleaning.budget.report_at=2",
)
REAL_PAPER_NUMBER = "not reported (numbers out of reach; 'comparable or superior' to AID/ITD)"
REAL_TABLE_METRICS = [
    "val_ce_at_report",
    "val_ce_final",
    "val_acc",
    "test_acc",
    "test_ce",
    "corruption_auc",
    "lower_gradients",
    "hvps",
]
REAL_LABELS = {
    f"{CLEAN}/{m}": f"Fashion-MNIST: {name}"
    for m, name in (
        ("qnbo", "qNBO (BFGS)"),
        ("qnbo_q0", "qNBO, Q = 0 (ablation)"),
        ("aid_bio", "AID-BIO"),
        ("amigo_cg", "AmIGO-CG"),
    )
}
REAL_CLAIMS = [
    Claim(
        "R3a: val CE(k=30) <= 0.92 x AID-BIO, each seed",
        RatioAtMost("val_ce_at_report", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", 0.92, every_seed=True),
    ),
    Claim(
        "R3b: final val CE <= 0.98 x AID-BIO, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", 0.98, every_seed=True),
    ),
    Claim(
        "R4a: final val CE <= 1.01 x AmIGO-CG, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/amigo_cg", 1.01, every_seed=True),
    ),
    Claim(
        "R4b: Q = 0 final val CE >= 1.05 x qNBO's, each seed",
        RatioAtMost("val_ce_final", f"{CLEAN}/qnbo", f"{CLEAN}/qnbo_q0", 1 / 1.05, every_seed=True),
    ),
    Claim(
        "R5: test accuracy >= AID-BIO - 0.005",
        MarginAtLeast("test_acc", f"{CLEAN}/qnbo", f"{CLEAN}/aid_bio", -0.005),
    ),
    # The 8% early lead of R3a is no property of any AID-type pair: AID-BIO against AmIGO-CG
    # (same lower-level GD, only the linear solver differs) must not show it.
    Claim(
        "AID-BIO in qNBO's place: val CE(k=30) <= 0.92 x AmIGO-CG",
        RatioAtMost(
            "val_ce_at_report", f"{CLEAN}/aid_bio", f"{CLEAN}/amigo_cg", 0.92, every_seed=True
        ),
        role="negative_control",
    ),
    # Does hyper-cleaning clean? qNBO's weights sigma(x_i) rank clean above corrupted labels.
    Claim(
        "qNBO's weights flag corrupted labels: AUC >= 0.8",
        MeanAtLeast("corruption_auc", (f"{CLEAN}/qnbo",), 0.8),
        role="diagnostic",
    ),
]
