"""AdamCB's toy acceptance claim (brief Sec. 5), declared as data and checked in CI.

Setting: configs/adamcb/toy.yaml (digits n=300, K=150, 60 epochs, lr 1e-2, seeds 0-4).
"""

from shared.claims import Claim, Diagnosis, MeanBelow, PairedWins, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2, 3, 4]
CI_SEEDS = SEEDS  # the whole protocol fits CI's per-paper budget
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["adam", "amsgrad", "adamx", "adambs_corrected", "adamcb", "adamx_uniform_wor"]
PRIMARY = ("adamcb", "final_train_ce")
PLOT = "train_ce.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["final_train_ce", "mean_train_ce", "final_test_ce", "final_test_acc"]
CPU_BUDGET_UNITS = 120.0  # one core, every seed and method; 180 CPU s on the Intel CI machine

LABELS = {
    "adam": "Adam",
    "amsgrad": "AMSGrad",
    "adamx": "AdamX",
    "adambs": "AdamBS",
    "adambs_corrected": "corrected AdamBS",
    "adamcb": "AdamCB",
    "adamx_uniform_wor": "diagnostic: AdamX, uniform w/o replacement",
    "adamcb_no_feedback": "ablation: AdamCB without gradient feedback",
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

# ---------------------------------------------------------------------------------------------
# The real rung (configs/adamcb/real.yaml): Fashion-MNIST, MLP 784-512-256-10, K = 128, the
# official constants, 3 epochs x 4 seeds (what 20 CPU-minutes hold). Declared before the first
# full real run and never retuned. The paper reports curves only (no numbers the brief could
# retrieve), so the sizes are the toy claim's: 5% lower final training loss than Adam and than
# corrected AdamBS, and a paired win on (nearly) every seed: the toy's >= 4 of 5 is >= 80% of
# seeds, which is 4 of 4 here. The paper also claims lower test loss (direction only).
# Issue 51 reran it at the paper's protocol (official main.py: 10 epochs, seeds 10-50); the first
# protocol's record is results/real_first.json. The paired-wins bar stays 4 seeds: with five
# seeds it is the toy's own rule, 4 of 5 (>= 80%), so the claim is renamed, not retuned.
REAL_SEEDS = [10, 20, 30, 40, 50]
REAL_METHODS = [
    "adam",
    "amsgrad",
    "adamx",
    "adambs",
    "adambs_corrected",
    "adamcb",
    "adamx_uniform_wor",
]
REAL_PLOT = "train_ce.png"
REAL_TABLE_METRICS = ["final_train_ce", "mean_train_ce", "final_test_ce", "final_test_acc"]
REAL_LABELS = {**LABELS, "adambs": "AdamBS (as coded)"}
REAL_PAPER_NUMBER = "not reported (curves only)"
# in units of the reference workload (tests/cpu_units.py): 3,600 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 2400.0  # one core; first protocol 592 s, the paper protocol ~4x (README)
REAL_CI = False  # ~45 CPU-minutes: far over CI's 120 s
# End to end on the real files in a few CPU seconds: a 2560-example subset, one epoch, one seed,
# one uniform and every bandit sampler.
REAL_SMOKE_OVERRIDES = (
    "data.n_train=2560",
    "data.n_eval_train=1000",
    "data.n_eval_test=1000",
    "epochs=1",
    "seeds=[10]",
    "methods=[adam,adambs,adambs_corrected,adamcb]",
    "loop.eval_every=20",
    "loop.checkpoint_every=20",
)

REAL_CLAIMS = [
    Claim("beats Adam by 5%", RatioAtMost(METRIC, "adamcb", "adam", 0.95)),
    Claim("beats corrected AdamBS by 5%", RatioAtMost(METRIC, "adamcb", "adambs_corrected", 0.95)),
    Claim("beats Adam on 4 of 5 seeds", PairedWins(METRIC, "adamcb", "adam", 4)),
    Claim(
        "lower test loss than Adam",
        RatioAtMost("final_test_ce", "adamcb", "adam", 1.0),
    ),
    Claim(
        "every method trains",
        MeanBelow(METRIC, ("adam", "amsgrad", "adamx", "adambs_corrected", "adamcb"), 0.6),
    ),
    Claim(
        "AdamX does not beat Adam by 5%",
        RatioAtMost(METRIC, "adamx", "adam", 0.95),
        role="negative_control",
    ),
    Claim(
        "AdamCB vs AMSGrad",
        RatioAtMost(METRIC, "adamcb", "amsgrad", 1.0),
        role="diagnostic",
    ),
    Claim(
        "AdamCB vs AdamBS (as coded)",
        RatioAtMost(METRIC, "adamcb", "adambs", 1.0),
        role="diagnostic",
    ),
    Claim(
        "AdamCB vs uniform w/o replacement",
        RatioAtMost(METRIC, "adamcb", "adamx_uniform_wor", 1.0),
        role="diagnostic",
    ),
    Claim(
        "AdamCB test accuracy vs Adam",
        PairedWins("final_test_acc", "adamcb", "adam", 3, lower_is_better=False),
        role="diagnostic",
    ),
]

# Issue 51: why the four headline real claims failed, settled by papers/adamcb/diagnose.py
# (its numbers: results/diagnosis.json). The paper's protocol (official main.py: 10 epochs,
# seeds 10-50) for Adam, AdamCB and AdamCB with its gradient feedback removed, plus what the
# bandit's weights hold after one epoch; the official ADAMCB loop on the same arrays beside it.
DIAGNOSE = "python -m papers.adamcb.diagnose --write"
_OFFICIAL = (
    "the official ADAMCB loop (TJLJT0929/AdamCB@49c2c7f, seed 10, same arrays and init) after "
    "{official_epochs} epoch(s): train CE {official_train_ce_last:.4f} vs ours "
    "{ours_train_ce_same_epoch:.4f} (largest per-epoch gap {official_max_abs_curve_diff:.4f}); "
    "its log-weights after one epoch: R^2 on play counts {official_r2_logw_plays:.3f}, median "
    "normalised norm {official_median_gbar:.3f}, median feedback share at its last step "
    "{official_median_loss_share:.2g}"
)
REAL_DIAGNOSES = [
    Diagnosis(
        claims=(
            "beats Adam by 5%",
            "beats Adam on 4/4 seeds",  # the first protocol's name (4 seeds)
            "beats Adam on 4 of 5 seeds",
            "lower test loss than Adam",
        ),
        word="method",
        headline=(
            "paper protocol ({pp_epochs:.0f} epochs x {pp_seeds:.0f} seeds): AdamCB / Adam "
            "{pp_ratio_adamcb_adam:.4f}, lower on {pp_wins_adamcb_vs_adam:.0f} of {pp_seeds:.0f} "
            "seeds; level with its no-feedback ablation ({pp_ratio_adamcb_no_feedback:.4f})"
        ),
        official_headline=(
            "1 epoch, same init: train CE {official_train_ce_last:.4f} (ours "
            "{ours_train_ce_same_epoch:.4f}); log-weights vs plays R^2 "
            "{official_r2_logw_plays:.3f} (ours {r2_logw_plays:.3f})"
        ),
        reason=(
            "at the paper's protocol ({pp_epochs} epochs x {pp_seeds} seeds) AdamCB / Adam = "
            "{pp_ratio_adamcb_adam:.4f} in final train CE (lower on {pp_wins_adamcb_vs_adam} "
            "of {pp_seeds} seeds, test CE ratio {pp_test_ratio_adamcb_adam:.4f}), and AdamCB "
            "/ AdamCB without gradient feedback = {pp_ratio_adamcb_no_feedback:.4f}: the "
            "feedback term is {mean_loss_share:.2g} of 1/p_min^2 on average (median "
            "normalised norm {median_gbar:.3f}), so after one epoch the log-weights are a "
            "function of the play counts (R^2 {r2_logw_plays:.3f}); what is left, K distinct "
            "draws at K/n = 0.2%, gains nothing (first protocol: AdamCB / uniform w/o "
            "replacement {first_ratio_adamcb_uniform_wor:.4f})"
        ),
        experiment=DIAGNOSE,
        official=_OFFICIAL,
    ),
    Diagnosis(
        claims=("beats corrected AdamBS by 5%",),
        word="method",
        headline=(
            "AdamCB matches Adam at the paper's protocol ({pp_ratio_adamcb_adam:.4f}), corrected "
            "AdamBS matches it too (first protocol {first_ratio_adambs_corrected_adam:.4f}; "
            "10 epochs: real.json): neither bandit gains"
        ),
        official_headline=(
            "1 epoch, same init: train CE {official_train_ce_last:.4f} (ours "
            "{ours_train_ce_same_epoch:.4f}); log-weights vs plays R^2 "
            "{official_r2_logw_plays:.3f} (ours {r2_logw_plays:.3f})"
        ),
        reason=(
            "AdamCB trails Adam at the paper's protocol ({pp_ratio_adamcb_adam:.4f}) and is level "
            "with its no-feedback ablation ({pp_ratio_adamcb_no_feedback:.4f}); corrected AdamBS "
            "matched Adam on the first protocol ({first_ratio_adambs_corrected_adam:.4f}; "
            "AdamCB / corrected AdamBS {first_ratio_adamcb_adambs_corrected:.4f}): both "
            "bandits leave the sampling as good as uniform, so neither can lead by 5% (the "
            "paper-protocol real run, results/real.json, measures AdamCB / corrected AdamBS "
            "at 10 epochs x 5 seeds: the real table above)"
        ),
        experiment=DIAGNOSE,
        official=_OFFICIAL,
    ),
]
