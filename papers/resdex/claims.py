"""ResDex's toy acceptance claims (brief Sec. 5.3), declared as data and checked in CI.

KinematicDexGrasp, 48 training and 48 unseen objects per seed, K = 4 base policies on the
k-means representatives (40 PPO iterations each), then ResDex, PPO from scratch (full
observation) and one expert + residual for 40 iterations of 256 envs x 40 steps; success of the
deterministic means, 512 envs x 3 episodes, at iterations 20 and 40. Means over seeds 0, 1, 2.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, MeanAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# One seed costs ~105 CPU-s (4 base policies, ResDex and scratch at ~16-20 s each); three do
# not fit CI's 180 CPU-s, so CI gates seed 0 and scripts/reproduce.py runs seeds 0, 1, 2.
CI_SEEDS = [0]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
BASES = ("base_pinch", "base_power", "base_wide", "base_hook")
METHODS = ["resdex", "scratch", "single_residual", *BASES]
# single + residual enters only a diagnostic; CI leaves it to scripts/reproduce.py. PPO from
# scratch too: seed 0 with it measured 166 and 170 CPU-s in two quiet CI runs on 2026-12-06
# (192 in the CI of an earlier commit), within 10 % of the 180 ceiling after the same-numbers
# speedups (67a4bac); each of the six PPO runs is ~1/6 of it, compute-bound in the paper's
# 128 x 128 ELU MLPs. So CI trains the four experts and ResDex on seed 0 (gating claims 2a, 3a,
# 3b and comparing their numbers bit for bit), and the claims and controls that need the
# scratch run are gated by reproduce.py on claim and held-out seeds (REPRODUCE_ONLY below).
CI_METHODS = ["resdex", *BASES]
_NEEDS_SCRATCH = "needs the PPO-from-scratch run, which CI leaves out (~28 CPU-s; CI_METHODS)"
# Claim 2b is a mean over seeds 0-2 (-0.018; held-out 1000-1002: -0.005), and one seed's gap
# is noisier than that mean: seed 0 alone is the worst of the six seeds, -0.054 under the
# pinned Intel float path (-0.020 on AMD's), with seeds 1 and 2 at -0.001 and 0.000. Gating the
# three-seed mean costs ~360 CPU-s, so reproduce.py gates it on both seed sets and CI shows
# seed 0's value without gating it (CI still compares seed 0's numbers bit for bit).
REPRODUCE_ONLY = {
    "2b: no generalisation gap: ResDex unseen >= train - 0.05 at iteration 40": "a mean over "
    "three seeds (~360 CPU-s in CI); one seed's gap is noisier than the claim (seed 0: -0.054)",
    "1: efficiency: ResDex train success at iteration 20 >= scratch + 0.30": _NEEDS_SCRATCH,
    "4: scratch overfits more: gap(scratch) >= gap(ResDex) + 0.05 at iteration 40": _NEEDS_SCRATCH,
}
PRIMARY = ("resdex", "unseen_it40")
PLOT = "resdex.png"  # learning curves + mixture-weight heat map, saved as results/toy.png
TABLE_METRICS = ["train_it20", "unseen_it20", "train_it40", "unseen_it40", "own_it40"]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)
LABELS = {
    "resdex": "ResDex (4 experts + residual)",
    "scratch": "PPO from scratch (full obs)",
    "single_residual": "single expert (power) + residual",
    **{b: f"base policy alone ({b.removeprefix('base_')} rep.)" for b in BASES},
}

CLAIMS = [
    Claim(
        "1: efficiency: ResDex train success at iteration 20 >= scratch + 0.30",
        MarginAtLeast("train_it20", "resdex", "scratch", 0.30),
    ),
    Claim(
        "2a: ResDex train success at iteration 40 >= 0.65",
        MeanAtLeast("train_it40", ("resdex",), 0.65),
    ),
    Claim(
        "2b: no generalisation gap: ResDex unseen >= train - 0.05 at iteration 40",
        MeanAtLeast("unseen_minus_train_it40", ("resdex",), -0.05),
    ),
    Claim(
        "3a: each base policy succeeds >= 0.6 on its own representative",
        MeanAtLeast("own_it40", BASES, 0.6),
    ),
    Claim(
        "3b: each base policy succeeds <= 0.5 on the training pool",
        MeanAtMost("train_it40", BASES, 0.5),
    ),
    Claim(
        "4: scratch overfits more: gap(scratch) >= gap(ResDex) + 0.05 at iteration 40",
        MarginAtLeast("gap_final", "scratch", "resdex", 0.05),
    ),
    # Negative controls: the claims' bars with PPO from scratch in ResDex's place. Same budget,
    # same evaluator; the geometry-aware observation alone does not give efficiency or transfer.
    Claim(
        "PPO from scratch in ResDex's place: train success at iteration 20 >= 0.65",
        MeanAtLeast("train_it20", ("scratch",), 0.65),
        role="negative_control",
    ),
    Claim(
        "PPO from scratch in ResDex's place: unseen >= train - 0.05 at iteration 40",
        MeanAtLeast("unseen_minus_train_it40", ("scratch",), -0.05),
        role="negative_control",
    ),
    # Reported, not gated: the brief found "MoE beats one expert + residual" not robust here.
    Claim(
        "ResDex vs single expert + residual: train success at iteration 40, margin >= 0",
        MarginAtLeast("train_it40", "resdex", "single_residual", 0.0),
        role="diagnostic",
    ),
    Claim(
        "ResDex vs single expert + residual: unseen success at iteration 40, margin >= 0",
        MarginAtLeast("unseen_it40", "resdex", "single_residual", 0.0),
        role="diagnostic",
    ),
    Claim(
        "ResDex: matching expert's mean mixture weight >= 0.5",
        MeanAtLeast("matching_weight", ("resdex",), 0.5),
        role="diagnostic",
    ),
]
