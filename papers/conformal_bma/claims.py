"""CBMA's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Setting A (quadratic truth; candidates linear, quadratic, cubic) and setting B
(heteroskedastic truth; candidates homoskedastic linear, linear with the known variance
profile, homoskedastic quadratic): n = 100, 40 replications x 50 test points, alpha = 0.1,
one generator stream seeded 0 per setting (configs/conformal_bma/toy.yaml).
"""

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
CPU_BUDGET_S = 180.0

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
