"""MatryoshkaKV's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

A 2-layer Llama (4 heads, head_dim d = 16) pre-trained 600 steps on a synthetic character
corpus with long-range copies is the teacher; per-head orthogonal key/value projections are
initialised by PCA (post-RoPE statistics) and trained 300 steps with a random rank per head
and step (Matryoshka) to minimise KL(teacher || compressed). Metric: per-token KL on 64
held-out sequences at uniform rank r (budget r / d). Seeds 0, 1, 2.
"""

from shared.claims import Claim, MeanBelow, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# One seed costs ~50 CPU s, compute-bound (the teacher's 600 pre-training steps are ~60 % of it,
# at the core's peak matmul rate), so three seeds (~150 CPU s, ~175 under CI's two-worker load)
# leave no margin under the 180 CPU-second budget: CI gates the mean over seeds 0, 1 and
# `scripts/reproduce.py` runs all three (results/toy.json).
CI_SEEDS = [0, 1]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
SEARCHED = "matryoshka_searched"  # trained projections at searched heterogeneous ranks
METHODS = ["pca", "matryoshka", "fixed_rank", SEARCHED]
# The gated claims need only PCA and MatryoshkaKV; the fixed-rank negative control adds a
# third training per seed (~22 s x 3) and the greedy search (a diagnostic) ~4 s per seed,
# which would take CI past its budget, so CI runs the claims and `scripts/reproduce.py` runs
# everything (results/toy.json).
CI_METHODS = ["pca", "matryoshka"]
PRIMARY = ("matryoshka", "kl_r6")
PLOT = "kl_by_budget.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["kl_r4", "kl_r6", "kl_r8", "kl_r12", "abs_kl_r16", "ce_r6"]
CPU_BUDGET_S = 180.0
LABELS = {
    "pca": "PCA projections",
    "matryoshka": "MatryoshkaKV (trained, random ranks)",
    "fixed_rank": "trained at rank 8 only (ablation)",
    SEARCHED: "MatryoshkaKV, searched ranks at 37.5%",
}

CLAIMS = [
    *(
        Claim(
            f"trained KL <= 0.8 x PCA's at rank {r} (budget {r / 16:.1%})",
            RatioAtMost(f"kl_r{r}", "matryoshka", "pca", 0.8),
        )
        for r in (4, 6, 8)
    ),
    Claim(
        "exact at full rank: |KL| < 1e-5 for PCA and trained projections",
        MeanBelow("abs_kl_r16", ("pca", "matryoshka"), 1e-5, every_seed=True),
    ),
    # Training at one rank does not make every prefix of the basis good.
    Claim(
        "fixed-rank (r = 8) training: KL <= 0.8 x PCA's at rank 4",
        RatioAtMost("kl_r4", "fixed_rank", "pca", 0.8),
        role="negative_control",
    ),
    Claim(
        "searched heterogeneous ranks beat uniform rank 6 at the same 37.5% budget",
        RatioAtMost("kl_r6", SEARCHED, "matryoshka", 1.0),
        role="diagnostic",
    ),
]
