"""LiMAC's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

ToyDroid: 500 training and 300 test episodes per seed (four task families, shuffled element
order, text-less icons). AcT (contrastive click head), AcT with an index head, the flat
classifier and a random-click stub, evaluated offline with teacher-forced history; means over
seeds 0, 1, 2. Mask causality, which claim 2 cannot detect, is a unit test.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, MeanAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# CI runs seed 0 alone; `scripts/reproduce.py` runs all three (issue 44). Two seeds cost ~122
# CPU s here, 119-133 in CI, over its 85 CPU s target, and nothing cheaper keeps the numbers:
# a profile is ~85 % AcT training, most of it scaled_dot_product_attention's unfused path (a
# per-example mask with attention dropout materialises the (B, H, L, L) scores and draws a
# dropout mask over them, ~70 ms a layer-step against ~23 ms without dropout), which any
# cheaper layout (e.g. packing away padded element slots) changes bit for bit. Every claim,
# and every negative control's failure, holds on seed 0 alone in results/toy.json (claim 1:
# AcT overall - flat overall = 0.127 >= 0.10).
CI_SEEDS = [0]
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001, 1002]
METHODS = ["act", "act_index", "flat", "random_click"]
PRIMARY = ("act", "overall")
PLOT = "limac_toy.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "type_acc",
    "click_acc",
    "overall",
    "click_acc_strict",
    "overall_strict",
    "text_acc",
    "text_call_fraction",
    "gating_mismatch",
    "parameters",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

LABELS = {
    "act": "AcT (contrastive click head)",
    "act_index": "AcT + index head (ablation)",
    "flat": "flat classifier (baseline)",
    "random_click": "random click stub (control)",
}

CLAIMS = [
    Claim(
        "1: AcT overall accuracy >= flat overall + 0.10",
        MarginAtLeast("overall", "act", "flat", 0.10),
    ),
    Claim("2a: AcT click-target accuracy >= 0.85", MeanAtLeast("click_acc", ("act",), 0.85)),
    Claim(
        "2b: AcT click-target accuracy >= flat click + 0.20",
        MarginAtLeast("click_acc", "act", "flat", 0.20),
    ),
    Claim("3: AcT action-type accuracy >= 0.85", MeanAtLeast("type_acc", ("act",), 0.85)),
    Claim(
        "4: the index head loses >= 0.30 click accuracy (contrastive objective matters)",
        MarginAtLeast("click_acc", "act", "act_index", 0.30),
    ),
    Claim(
        "5: gating, text model called exactly on predicted input-text / open-app steps",
        MeanAtMost("gating_mismatch", ("act",), 0.0, every_seed=True),
    ),
    # A stub that always clicks a random element must fail claims 2 and 3 (brief Sec. 5).
    Claim(
        "random-click stub: click-target accuracy >= 0.85",
        MeanAtLeast("click_acc", ("random_click",), 0.85),
        role="negative_control",
    ),
    Claim(
        "random-click stub: action-type accuracy >= 0.85",
        MeanAtLeast("type_acc", ("random_click",), 0.85),
        role="negative_control",
    ),
    # Claim 2 applied to the index-head ablation: the same transformer without the
    # contrastive objective must not reach it.
    Claim(
        "index-head ablation: click-target accuracy >= 0.85",
        MeanAtLeast("click_acc", ("act_index",), 0.85),
        role="negative_control",
    ),
    Claim(
        "strict metrics: AcT overall accuracy >= flat overall + 0.10 (strict click match)",
        MarginAtLeast("overall_strict", "act", "flat", 0.10),
        role="diagnostic",
    ),
]
