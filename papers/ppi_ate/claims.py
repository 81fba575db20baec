"""PPI-ATE's toy acceptance claim (brief Sec. 5, RCT variant), declared as data.

Setting: configs/ppi_ate/toy.yaml (closed-form DGP, n = 200, N = 4000, alpha = 0.05,
300 replications from one stream seeded 0).
"""

from shared.claims import Claim, MeanAtLeast, MeanAtMost, MeanWithin, RatioAtMost

SCALE = "toy"
SEEDS = [0]
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["aipw", "ppi", "d2_only", "ppi_fit_on_d1"]
PRIMARY = ("rct/ppi", "half_width")
PLOT = "intervals.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["coverage", "half_width", "bias"]
CPU_BUDGET_S = 180.0

RCT, OBS = "rct", "observational"
LABELS = {
    f"{RCT}/aipw": "RCT D1: AIPW on D1 only",
    f"{RCT}/ppi": "RCT D1: PPI (D1 + D2)",
    f"{RCT}/d2_only": "RCT D1: D2 only (confounded)",
    f"{RCT}/ppi_fit_on_d1": "RCT D1: ablation, measure of fit on D1's X",
    f"{OBS}/aipw": "observational D1: AIPW on D1 only",
    f"{OBS}/ppi": "observational D1: PPI (D1 + D2)",
    f"{OBS}/d2_only": "observational D1: D2 only (confounded)",
    f"{OBS}/ppi_fit_on_d1": "observational D1: ablation, measure of fit on D1's X",
}

CLAIMS = [
    Claim("PPI coverage >= 0.88", MeanAtLeast("coverage", (f"{RCT}/ppi",), 0.88)),
    Claim("PPI coverage <= 0.99", MeanAtMost("coverage", (f"{RCT}/ppi",), 0.99)),
    Claim(
        "PPI half-width <= 0.70 x AIPW",
        RatioAtMost("half_width", f"{RCT}/ppi", f"{RCT}/aipw", 0.70),
    ),
    Claim("PPI abs(bias) <= 0.05", MeanWithin("bias", (f"{RCT}/ppi",), 0.05)),
    Claim("D2-only coverage <= 0.10", MeanAtMost("coverage", (f"{RCT}/d2_only",), 0.10)),
    Claim("AIPW coverage >= 0.88", MeanAtLeast("coverage", (f"{RCT}/aipw",), 0.88)),
    # Dropping the rectifier (= the D2-only estimate) must not pass the validity claim.
    Claim(
        "no rectifier: coverage >= 0.88",
        MeanAtLeast("coverage", (f"{RCT}/d2_only",), 0.88),
        role="negative_control",
    ),
    # Evaluating the measure of fit on D1's own X collapses PPI to AIPW: no narrower interval.
    Claim(
        "fit on D1's X: half-width <= 0.70 x AIPW",
        RatioAtMost("half_width", f"{RCT}/ppi_fit_on_d1", f"{RCT}/aipw", 0.70),
        role="negative_control",
    ),
]
