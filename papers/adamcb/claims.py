"""AdamCB's toy acceptance claim (brief Sec. 5), declared as data and checked in CI.

Setting: configs/adamcb/toy.yaml (digits n=300, K=150, 60 epochs, lr 1e-2, seeds 0-4).
"""

from shared.claims import Claim, MeanBelow, PairedWins, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2, 3, 4]
CI_SEEDS = SEEDS  # the whole protocol fits CI's per-paper budget
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["adam", "amsgrad", "adamx", "adambs_corrected", "adamcb", "adamx_uniform_wor"]
PRIMARY = ("adamcb", "final_train_ce")
PLOT = "train_ce.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["final_train_ce", "mean_train_ce", "final_test_ce", "final_test_acc"]
CPU_BUDGET_S = 180.0  # one core, every seed and method

LABELS = {
    "adam": "Adam",
    "amsgrad": "AMSGrad",
    "adamx": "AdamX",
    "adambs": "AdamBS",
    "adambs_corrected": "corrected AdamBS",
    "adamcb": "AdamCB",
    "adamx_uniform_wor": "diagnostic: AdamX, uniform w/o replacement",
}

METRIC = "final_train_ce"

CLAIMS = [
    Claim("beats Adam by 5%", RatioAtMost(METRIC, "adamcb", "adam", 0.95)),
    Claim("beats corrected AdamBS by 5%", RatioAtMost(METRIC, "adamcb", "adambs_corrected", 0.95)),
    Claim("beats Adam on >= 4/5 seeds", PairedWins(METRIC, "adamcb", "adam", 4)),
    Claim(
        "every method trains",
        MeanBelow(METRIC, ("adam", "amsgrad", "adamx", "adambs_corrected", "adamcb"), 0.6),
    ),
    # A baseline with AdamCB's optimizer but uniform i.i.d. sampling must not pass the claim.
    Claim(
        "AdamX does not beat Adam by 5%",
        RatioAtMost(METRIC, "adamx", "adam", 0.95),
        role="negative_control",
    ),
    # Caveat the toy exposes: most of the gain comes from drawing K distinct examples.
    Claim(
        "AdamCB vs uniform w/o replacement",
        RatioAtMost(METRIC, "adamcb", "adamx_uniform_wor", 1.0),
        role="diagnostic",
    ),
]
