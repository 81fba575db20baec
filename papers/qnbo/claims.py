"""qNBO's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Toy 1: quadratic bilevel with closed forms (problem seeds 0, 1, 2, K = 200). Toy 2: data
hyper-cleaning on scikit-learn's digits (seeds 0, 1, 2, K = 90). "Each seed" claims measure
the worst seed.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtMost, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
CI_SEEDS = SEEDS
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
CPU_BUDGET_S = 180.0

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
