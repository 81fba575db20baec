"""LeReT's toy acceptance claims (brief Sec. 5.6), declared as data and checked in CI.

Synthetic 2-hop retrieval over 300 documents with BM25 (top 2 per hop); a pointer-network
query writer whose base habit ("restate subject and first relation") finds one of the two
gold documents. Metric: test recall after 2 hops (300 questions, greedy, zero-shot prompt for
trained policies). Seeds 0, 1, 2.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, PairedWins

SCALE = "toy"
SEEDS = [0, 1, 2]
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001, 1002]
METHODS = ["base", "few_shot", "leret_cd", "leret", "temperature_only", "ipo_flipped"]
PRIMARY = ("leret", "recall")
PLOT = "recall.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["recall", "ap", "recall_hop1", "recall_it1", "recall_it2", "ap_it2"]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

LABELS = {
    "base": "base (zero-shot habit policy)",
    "few_shot": "few-shot (best bootstrapped prompt)",
    "leret_cd": "LeReT-CD (SFT on top-level queries)",
    "leret": "LeReT (SFT + IPO)",
    "temperature_only": "temperature-only sampling (ablation)",
    "ipo_flipped": "IPO on sign-flipped pairs (negative control)",
}

CLAIMS = [
    Claim(
        "1a: LeReT it2 recall >= few-shot + 0.10 (mean over seeds)",
        MarginAtLeast("recall", "leret", "few_shot", 0.10),
    ),
    # Reported, not gated (issue 29): seed 1 wins by 0.003 recall, too thin a margin to gate
    # across float paths; 1a gates the mean margin over seeds.
    Claim(
        "1b: LeReT it2 recall > few-shot on every seed (diagnostic: seed 1 holds by 0.003)",
        PairedWins("recall", "leret", "few_shot", len(SEEDS), lower_is_better=False),
        role="diagnostic",
    ),
    Claim(
        "2: LeReT it2 recall >= base + 0.30 (mean over seeds)",
        MarginAtLeast("recall", "leret", "base", 0.30),
    ),
    Claim(
        "3: LeReT >= LeReT-CD - 0.02 in every seed and iteration",
        MeanAtLeast("margin_over_cd", ("leret",), -0.02, every_seed=True),
    ),
    Claim(
        "4: LeReT it2 >= LeReT it1 - 0.02 in every seed",
        MeanAtLeast("last_minus_first", ("leret",), -0.02, every_seed=True),
    ),
    Claim(
        "5: prompts matter, few-shot >= base + 0.05 in every seed",
        MeanAtLeast("gain_over_base", ("few_shot",), 0.05, every_seed=True),
    ),
    # IPO pushed toward the worse query of every pair must not reach claim 2's bar.
    Claim(
        "IPO on sign-flipped pairs: recall >= base + 0.30",
        MarginAtLeast("recall", "ipo_flipped", "base", 0.30),
        role="negative_control",
    ),
    Claim(
        "prompt diversity vs temperature: LeReT >= temperature-only (paper Sec. 5.5)",
        MarginAtLeast("recall", "leret", "temperature_only", 0.0),
        role="diagnostic",
    ),
    # Both arms end near the policy's ceiling after two rounds, so the final-recall comparison
    # above ties; the sampler itself and round 1 are where the toy can tell them apart.
    Claim(
        "prompt diversity vs temperature after round 1: LeReT it1 >= temperature-only it1",
        MarginAtLeast("recall_it1", "leret", "temperature_only", 0.0),
        role="diagnostic",
    ),
    Claim(
        "prompts explore better: best sampled hop-2 AP (it1), LeReT > temperature-only per seed",
        PairedWins(
            "best_sampled_ap_hop2_it1",
            "leret",
            "temperature_only",
            len(SEEDS),
            lower_is_better=False,
        ),
        role="diagnostic",
    ),
    Claim(
        "paper: LeReT > LeReT-CD at iteration 2 (the toy saturates: ties expected)",
        MarginAtLeast("recall", "leret", "leret_cd", 0.005),
        role="diagnostic",
    ),
]
