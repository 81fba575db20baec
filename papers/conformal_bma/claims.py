"""CBMA's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Setting A (quadratic truth; candidates linear, quadratic, cubic) and setting B
(heteroskedastic truth; candidates homoskedastic linear, linear with the known variance
profile, homoskedastic quadratic): n = 100, 40 replications x 50 test points, alpha = 0.1,
one generator stream seeded 0 per setting (configs/conformal_bma/toy.yaml).
"""

from pathlib import Path

from shared.claims import Claim, MeanAtLeast, MeanAtMost, MeanWithin, RatioAtMost

SCALE = "toy"
SEEDS = [0]
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["cb", "cbma", "cbma_frozen", "bma_credible", "split_conformal"]
PRIMARY = ("quadratic/cbma", "length")
PLOT = "prediction_bands.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["coverage", "coverage_error", "length", "true_model_weight"]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

A, B, S = "quadratic", "heteroskedastic", "small_n"
LABELS = {
    f"{A}/cb_linear": "A: CB linear (misspecified)",
    f"{A}/cb_quadratic": "A: CB quadratic (true)",
    f"{A}/cb_cubic": "A: CB cubic",
    f"{A}/cbma": "A: CBMA",
    f"{A}/cbma_frozen": "A: ablation, CBMA with frozen weights",
    f"{A}/bma_credible": "A: BMA credible interval",
    f"{A}/split_conformal": "A: split conformal (OLS)",
    f"{B}/cb_homo_linear": "B: CB homoskedastic linear",
    f"{B}/cb_het_linear": "B: CB heteroskedastic linear (true)",
    f"{B}/cb_homo_quadratic": "B: CB homoskedastic quadratic",
    f"{B}/cbma": "B: CBMA",
    f"{B}/cbma_frozen": "B: ablation, CBMA with frozen weights",
    f"{B}/bma_credible": "B: BMA credible interval",
    f"{B}/split_conformal": "B: split conformal (OLS)",
    f"{S}/cb_homo_linear": "n=9: CB homoskedastic linear",
    f"{S}/cb_het_linear": "n=9: CB heteroskedastic linear (true)",
    f"{S}/cb_homo_quadratic": "n=9: CB homoskedastic quadratic",
    f"{S}/cbma": "n=9: CBMA",
    f"{S}/cbma_frozen": "n=9: ablation, CBMA with frozen weights",
}
CONFORMAL = (
    f"{A}/cb_linear",
    f"{A}/cb_quadratic",
    f"{A}/cb_cubic",
    f"{A}/cbma",
    f"{B}/cb_homo_linear",
    f"{B}/cb_het_linear",
    f"{B}/cb_homo_quadratic",
    f"{B}/cbma",
)

CLAIMS = [
    Claim("valid: coverage >= 0.87", MeanAtLeast("coverage", CONFORMAL, 0.87)),
    Claim("valid: coverage <= 0.94", MeanAtMost("coverage", CONFORMAL, 0.94)),
    Claim(
        "A: CBMA <= 0.75 x CB linear", RatioAtMost("length", f"{A}/cbma", f"{A}/cb_linear", 0.75)
    ),
    Claim(
        "A: CBMA <= 1.03 x CB quadratic",
        RatioAtMost("length", f"{A}/cbma", f"{A}/cb_quadratic", 1.03),
    ),
    Claim(
        "B: CBMA <= 0.90 x CB homo linear",
        RatioAtMost("length", f"{B}/cbma", f"{B}/cb_homo_linear", 0.90),
    ),
    Claim(
        "B: CBMA <= 1.03 x CB het linear",
        RatioAtMost("length", f"{B}/cbma", f"{B}/cb_het_linear", 1.03),
    ),
    Claim(
        "A: weight on the true model >= 0.8", MeanAtLeast("true_model_weight", (f"{A}/cbma",), 0.8)
    ),
    Claim(
        "B: weight on the true model >= 0.8", MeanAtLeast("true_model_weight", (f"{B}/cbma",), 0.8)
    ),
    # Exactness at small n (our addition): full conformal's coverage is exactly 0.90 here.
    Claim(
        "small n: CBMA coverage exact within 0.0065",
        MeanWithin("coverage_error", (f"{S}/cbma", f"{S}/cb_het_linear"), 0.0065),
    ),
    # Frozen weights p(M_k | Z_1:n) break the symmetry of the score; at small n it shows, but
    # by little: 0.0112 on seed 0, 0.0065 (the bar itself) on held-out seed 1000, with a
    # standard error of 0.0021 at 20,000 replications (80,000 would cost ~4 CPU minutes more
    # than CI has). Reported, not gated (issue 29): its verdict flips on held-out seeds.
    Claim(
        "small n: frozen-weight CBMA coverage exact (diagnostic: the control's held-out "
        "error sits on the bar)",
        MeanWithin("coverage_error", (f"{S}/cbma_frozen",), 0.0065),
        role="diagnostic",
    ),
    # CB of one misspecified model in CBMA's place must not pass the efficiency claims.
    Claim(
        "A: CB linear <= 1.03 x CB quadratic",
        RatioAtMost("length", f"{A}/cb_linear", f"{A}/cb_quadratic", 1.03),
        role="negative_control",
    ),
    Claim(
        "B: CB homo quadratic <= 1.03 x CB het linear",
        RatioAtMost("length", f"{B}/cb_homo_quadratic", f"{B}/cb_het_linear", 1.03),
        role="negative_control",
    ),
]


# ------------------------------------------------------------------ the real rung (scale=real)
# scikit-learn's diabetes table (442 x 10), 50 random splits of 342 train / 50 test points,
# candidates demographic (age, sex), linear (all ten) and quadratic (all ten and their squares),
# alpha = 0.1 (configs/conformal_bma/real.yaml). Thresholds are the toy's, fixed before the
# first full real run: the paper's numbers were out of reach (brief Sec. 1-2).
REAL_SEEDS = [0]
REAL_METHODS = ["cb", "cbma", "bma_credible", "split_conformal"]
REAL_PLOT = "real_coverage_length.png"
REAL_TABLE_METRICS = ["coverage", "coverage_error", "length", "length_over_best_cb"]
# in units of the reference workload (tests/cpu_units.py): 90 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 60.0  # measured 47 CPU s on one core (seed 99, same sizes), plus headroom
REAL_CI = True
# CI's end-to-end pass over the real files (a few CPU s): 3 splits of 342 / 10, coarser grid.
REAL_SMOKE_OVERRIDES = ("replications=3", "n_test=10", "grid_size=100")
REAL_PAPER_NUMBER = "not reported"
D = "diabetes"
REAL_LABELS = {
    f"{D}/cb_demographic": "CB demographic (age, sex)",
    f"{D}/cb_linear": "CB linear (10 covariates)",
    f"{D}/cb_quadratic": "CB quadratic (+ squares)",
    f"{D}/cbma": "CBMA",
    f"{D}/bma_credible": "BMA credible interval",
    f"{D}/split_conformal": "split conformal (OLS)",
}


def config_labels(cfg) -> dict[str, str]:
    """A csv setting (a user's table) labels its rows by its file and its candidates' names,
    not by the diabetes table's."""
    labels = {}
    for name, setting in cfg.settings.items():
        if setting is None or setting.source != "csv" or not setting.path:
            continue
        table = Path(setting.path).name
        for model in setting.models:
            labels[f"{name}/cb_{model.name}"] = f"CB {model.name} ({table})"
        labels[f"{name}/cbma"] = f"CBMA ({table})"
        labels[f"{name}/bma_credible"] = f"BMA credible interval ({table})"
        labels[f"{name}/split_conformal"] = f"split conformal, OLS ({table})"
    return labels


REAL_CONFORMAL = (
    f"{D}/cb_demographic",
    f"{D}/cb_linear",
    f"{D}/cb_quadratic",
    f"{D}/cbma",
    f"{D}/split_conformal",
)
REAL_CLAIMS = [
    # Full and split conformal are valid whatever the model: the toy's band around 0.90
    # (exact full-conformal coverage at n = 342 is 1 - 34/343 = 0.901).
    Claim("valid: coverage >= 0.87", MeanAtLeast("coverage", REAL_CONFORMAL, 0.87)),
    Claim("valid: coverage <= 0.94", MeanAtMost("coverage", REAL_CONFORMAL, 0.94)),
    # Efficiency under model uncertainty: CBMA about as short as the best single candidate
    # (the toy's 1.03, whichever candidate is best) and clearly shorter than the worst (the
    # toy's setting-B bar, 0.90).
    Claim(
        "CBMA <= 1.03 x best CB candidate",
        MeanAtMost("length_over_best_cb", (f"{D}/cbma",), 1.03),
    ),
    Claim(
        "CBMA <= 0.90 x worst CB candidate",
        MeanAtMost("length_over_worst_cb", (f"{D}/cbma",), 0.90),
    ),
    # CB of the one candidate without the lab values in CBMA's place must not pass.
    Claim(
        "CB demographic <= 1.03 x best CB candidate",
        MeanAtMost("length_over_best_cb", (f"{D}/cb_demographic",), 1.03),
        role="negative_control",
    ),
    # The paper reports shorter intervals than the competing approaches; split conformal is
    # one, but at n = 342 its half-sample fit and quantile cost little: reported, not gated.
    Claim(
        "CBMA <= split conformal (diagnostic)",
        RatioAtMost("length", f"{D}/cbma", f"{D}/split_conformal", 1.0),
        role="diagnostic",
    ),
    # Bayesian credible intervals have no coverage guarantee: reported, not gated.
    Claim(
        "BMA credible coverage >= 0.87 (diagnostic: no guarantee)",
        MeanAtLeast("coverage", (f"{D}/bma_credible",), 0.87),
        role="diagnostic",
    ),
]
