"""MatryoshkaKV's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

A 2-layer Llama (4 heads, head_dim d = 16) pre-trained 600 steps on a synthetic character
corpus with long-range copies is the teacher; per-head orthogonal key/value projections are
initialised by PCA (post-RoPE statistics) and trained 300 steps with a random rank per head
and step (Matryoshka) to minimise KL(teacher || compressed). Metric: per-token KL on 64
held-out sequences at uniform rank r (budget r / d). Seeds 0, 1, 2.
"""

from shared.claims import Claim, Diagnosis, MeanAtLeast, MeanBelow, MeanWithin, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# One seed costs ~70 CPU s on the Intel CI machines, compute-bound (the teacher's 600
# pre-training steps are ~55 % of it at the core's peak matmul rate, the projection training
# ~40 %; profiled 2026-12-06, no bit-identical saving found), so two seeds measured 141-156 CPU s
# in CI (187 on a loaded machine), over the 120 aim and near the 180 ceiling. CI gates seed 0
# and `scripts/reproduce.py` gates all three (results/toy.json) and the held-out three.
CI_SEEDS = [0]
# One seed measures the rank-8 ratio too noisily for its 0.8 bar: seed 0 alone is 0.802 (seeds
# 1 and 2: 0.612, 0.549; the three-seed ratio 0.64, held-out 0.78). Its ranks 4 and 6 (0.699,
# 0.590) and the full-rank check are gated on seed 0 in CI; the rank-8 claim is gated by
# reproduce.py over three seeds, and CI shows seed 0's value without gating it (CI still
# compares seed 0's numbers bit for bit).
REPRODUCE_ONLY = {
    "trained KL <= 0.8 x PCA's at rank 8 (budget 50.0%)": "a ratio of three-seed means (~140 "
    "CPU-s for the two seeds CI ran before); one seed measures it too noisily (seed 0: 0.802)",
}
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
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)
LABELS = {
    "pca": "PCA projections",
    "matryoshka": "MatryoshkaKV (trained, random ranks)",
    "fixed_rank": "trained at rank 8 only (ablation)",
    SEARCHED: "MatryoshkaKV, searched ranks at 37.5%",
}


def config_labels(cfg) -> dict[str, str]:
    """The labels that quote a config value: the ablation's rank, the search's budget."""
    return {
        "fixed_rank": f"trained at rank {cfg.projection.fixed_rank} only (ablation)",
        SEARCHED: f"MatryoshkaKV, searched ranks at {cfg.rank_search.budget:.1%}",
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


# ------------------------------------------------------------------ the real rung (scale=real)
# SmolLM2-135M-Instruct (30 layers, 3 KV heads of d = 64) on the docutils documentation, cut
# into 256-token segments: PCA on 32 training segments, then the paper's distillation objective
# (0.25 KL + 0.75 CE, random rank 8 U{1..8} per layer, head, K and V every step) for 480 steps
# of 2 training segments (the first protocol's 120: results/real_first.json; issue 51 doubled
# it twice, what its CPU afforded); KL(full cache || compressed) and next-token top-1 accuracy on 12
# test segments (3,072 tokens of 6 documents never trained on) at uniform ranks 16 / 24 / 32 /
# 64 = 25 / 37.5 / 50 / 100 % of the cache (configs/matryoshka_kv/real.yaml). Thresholds fixed
# before the first full real run (issue 42): the toy's 0.8 KL ratio, and the paper's 93.1 % of
# baseline accuracy at 37.5 % (LLaMA2-7B) rounded down to 90 %.
REAL_SEEDS = [0]
REAL_METHODS = ["pca", "matryoshka"]
REAL_PLOT = "real_kl_accuracy.png"
REAL_TABLE_METRICS = [
    "kl_r16",
    "kl_r24",
    "kl_r32",
    "abs_kl_r64",
    "acc_ratio_r16",
    "acc_ratio_r24",
    "acc_ratio_r32",
    "acc_ratio_r64",
]
# ~4,200 CPU s expected on one core (120 steps measured 1,251 CPU s, 240 steps 2,231; about
# 8.5 CPU s a step of 2 x 256 tokens, plus PCA and evaluation), x 1.5 headroom
# in units of the reference workload (tests/cpu_units.py): 6,300 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 4200.0
REAL_CI = False  # ~70 CPU minutes: scripts/reproduce.py --paper matryoshka_kv --scale real
# The real path end to end on a few hundred tokens (tests/test_real.py): 64-token segments,
# 2 for PCA, 2 training steps of 1, 2 test segments at the four ranks.
REAL_SMOKE_OVERRIDES = (
    "corpus.seq_len=64",
    "eval.pca_sequences=2",
    "eval.n_sequences=2",
    "projection.steps=2",
    "projection.batch_size=1",
    "projection.warmup_steps=0",
    "loop.checkpoint_every=1",
)
REAL_PAPER_NUMBER = (
    "93.1 % of full-cache accuracy at a 37.5 % budget (LLaMA2-7B, 6 zero-shot benchmarks; "
    "PCA about 70 %)"
)
REAL_LABELS = {
    "pca": "PCA projections (SmolLM2-135M)",
    "matryoshka": "MatryoshkaKV (trained, random ranks)",
}
REAL_CLAIMS = [
    *(
        Claim(
            f"trained KL <= 0.8 x PCA's at rank {r} (budget {r / 64:.1%})",
            RatioAtMost(f"kl_r{r}", "matryoshka", "pca", 0.8),
        )
        for r in (16, 24)
    ),
    Claim(
        "trained keeps >= 90% of the full cache's next-token accuracy at 37.5%",
        MeanAtLeast("acc_ratio_r24", ("matryoshka",), 0.90),
    ),
    # A check, not a tuned bar: at r = d the algebra is exact, up to float32 rounding over
    # 30 layers.
    Claim(
        "exact at full rank: |KL| < 1e-4 for PCA and trained projections",
        MeanBelow("abs_kl_r64", ("pca", "matryoshka"), 1e-4, every_seed=True),
    ),
    Claim(
        "exact at full rank: accuracy ratio within 0.005 of 1",
        MeanWithin("acc_ratio_r64", ("pca", "matryoshka"), 0.005, target=1.0),
    ),
    # PCA, the reconstruction-optimal basis, in the trained projections' place must not pass.
    Claim(
        "PCA reaches the trained KL at 25%",
        RatioAtMost("kl_r16", "pca", "matryoshka", 1.0),
        role="negative_control",
    ),
    Claim(
        "PCA keeps >= 90% of the full cache's next-token accuracy at 37.5%",
        MeanAtLeast("acc_ratio_r24", ("pca",), 0.90),
        role="negative_control",
    ),
    Claim(
        "trained KL <= 0.8 x PCA's at rank 32 (budget 50.0%)",
        RatioAtMost("kl_r32", "matryoshka", "pca", 0.8),
        role="diagnostic",
    ),
]

# Why the failing real claim failed (issue 51), with the numbers of the decisive experiment:
# python -m papers.matryoshka_kv.diagnose (the real run, 480 steps, evaluated on the same test
# segments at 120, 240 and 480 steps) -> results/diagnosis.json.
ACCURACY_CLAIM = "trained keeps >= 90% of the full cache's next-token accuracy at 37.5%"
REAL_DIAGNOSES = [
    Diagnosis(
        claims=(ACCURACY_CLAIM,),
        word="protocol",
        headline=(
            "accuracy ratio {first_protocol_acc_ratio_r24:.3f} -> {acc_ratio_r24_at_last:.3f} "
            "from 120 to {last_steps:.0f} steps: holds on the rung's 12 test segments, not on "
            "all {all_segments:.0f} ({acc_ratio_r24_all_segments:.3f}, fragile); the paper "
            "trains {doublings_to_paper:.1f} doublings longer"
        ),
        reason=(
            "length decides it: the same run trained longer keeps "
            "{acc_ratio_r24_at_120:.3f} at step 120, {acc_ratio_r24_at_240:.3f} at 240 and "
            "{acc_ratio_r24_at_last:.3f} at {last_steps:.0f} (first protocol "
            "{first_protocol_acc_ratio_r24:.3f}), +{acc_ratio_gain_per_doubling:.3f} a doubling "
            "of training (+{acc_ratio_gain_per_doubling_last:.3f} over the last, slowing): past "
            "the {accuracy_bar:.2f} bar on the rung's 12 test segments, but the same projections "
            "keep {acc_ratio_r24_all_segments:.3f} on all {all_segments:.0f} (5x the tokens), "
            "so the pass is fragile; {tokens_at_last:.0f} tokens are "
            "{doublings_to_paper:.1f} doublings short of the paper's {paper_tokens:.0f} (the KL "
            "claims hold throughout: {kl_ratio_r24_at_last:.2f} x PCA's at 37.5%, "
            "{kl_ratio_r24_all_segments:.2f} on all segments)"
        ),
        experiment=(
            "python -m papers.matryoshka_kv.diagnose --milestones 120 240 480 --all-segments 60 "
            "--write"
        ),
    ),
]
