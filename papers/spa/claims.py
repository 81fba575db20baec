"""SPA's toy acceptance claims (brief Sec. 5.5), declared as data and checked in CI.

A tiny GPT-2 policy over 8 response tokens (length 4, 4096 responses) is SFT-trained on a
behaviour distribution unrelated to the true reward r*; DPO on 128 ground-truth-labelled
prompts gives pi_0; three SPA iterations (512, 1024, 2048 fresh prompts) self-label pairs
with the implicit reward against pi_init. Metric: exact win rate against pi_init (every
response enumerated, ties half), after iteration 3. Seeds 0, 1, 2.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, MeanWithin

SCALE = "toy"
SEEDS = [0, 1, 2]
# All three seeds cost ~124 CPU s even after the bit-identical savings (issue 44: collate,
# no CPU gc.collect, cached pi_init enumeration and win-rate weights), over CI's 85 CPU s
# target, so CI runs every method on seeds 0, 1 (every claim, and every negative control's
# failure, holds on each of them and on their mean in results/toy.json) and
# `scripts/reproduce.py` runs all three.
CI_SEEDS = [0, 1]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001, 1002]
METHODS = ["sft", "dpo_seed", "spa", "spa_nosr", "oracle", "coin_flip", "full_label"]
PRIMARY = ("spa", "win_rate")
PLOT = "win_rate.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "win_rate",
    "gain",
    "win_rate_it1",
    "win_rate_it2",
    "expected_reward",
    "judge_acc_it1",
    "judge_acc_it3",
    "gap_closed",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

LABELS = {
    "sft": "SFT (pi_init)",
    "dpo_seed": "DPO on the seed (pi_0)",
    "spa": "SPA (self-judge + self-refinement)",
    "spa_nosr": "SPA-noSR (alpha = 0)",
    "oracle": "oracle judge (r*) in the loop",
    "coin_flip": "coin-flip judge (negative control)",
    "full_label": "full-label DPO (100% r* labels)",
}

CLAIMS = [
    Claim(
        "1a: SPA gain over DPO-seed >= 0.06 (mean over seeds)",
        MeanAtLeast("gain", ("spa",), 0.06),
    ),
    Claim(
        "1b: SPA gain over DPO-seed >= 0.02 on every seed",
        MeanAtLeast("gain", ("spa",), 0.02, every_seed=True),
    ),
    Claim(
        "2: self-judge label accuracy at iteration 1 >= 0.62 on every seed",
        MeanAtLeast("judge_acc_it1", ("spa",), 0.62, every_seed=True),
    ),
    # Reported, not gated (issue 29): the margin sits inside the float-path noise of two
    # trained policies (seed-0 win rates move by +-0.02 between CPUs' kernels): -0.005 on
    # seeds 0-2 here, -0.043 on an AVX-512 machine, -0.054 on the held-out seeds.
    Claim(
        "3: noise-aware loss non-inferior: WR(SPA) >= WR(SPA-noSR) - 0.03 (diagnostic: "
        "flips with the float path and on held-out seeds)",
        MarginAtLeast("win_rate", "spa", "spa_nosr", -0.03),
        role="diagnostic",
    ),
    Claim(
        "4a: sanity, WR(pi_init vs pi_init) = 0.5 within 1e-6",
        MeanWithin("win_rate", ("sft",), 1e-6, every_seed=True, target=0.5),
    ),
    Claim(
        "4b: sanity, WR(DPO-seed) >= 0.55 on every seed",
        MeanAtLeast("win_rate", ("dpo_seed",), 0.55, every_seed=True),
    ),
    # The same loop with a fair coin as judge must not reach the bar.
    Claim(
        "coin-flip judge: gain >= 0.06 (mean over seeds)",
        MeanAtLeast("gain", ("coin_flip",), 0.06),
        role="negative_control",
    ),
    Claim(
        "coin-flip judge: label accuracy at iteration 1 >= 0.62 on every seed",
        MeanAtLeast("judge_acc_it1", ("coin_flip",), 0.62, every_seed=True),
        role="negative_control",
    ),
    # The paper's "beats 100%-label DPO" does not reproduce in the toy (brief Sec. 5.4).
    Claim(
        "paper claim: SPA >= full-label DPO (not reproduced at toy scale)",
        MarginAtLeast("win_rate", "spa", "full_label", 0.0),
        role="diagnostic",
    ),
    Claim(
        "share of the DPO-seed -> full-label gap SPA closes >= 0.5",
        MeanAtLeast("gap_closed", ("spa",), 0.5),
        role="diagnostic",
    ),
    Claim(
        "oracle judge in the same loop: gain >= 0.06 (upper bound of the loop)",
        MeanAtLeast("gain", ("oracle",), 0.06),
        role="diagnostic",
    ),
]
