"""LucidPPN's toy acceptance claims (brief Sec. 5, claims 1-5), declared as data.

Setting: configs/lucidppn/toy.yaml. Synthetic iso-luminant "birds" (32 x 32, K = 3 parts,
M = 8 classes: 4 shape configurations x 2 body colours of equal luma), 2 000 training and
1 000 test images, the brief's toy CNN (8 x 8 maps), AdamW 2e-3, batch 64, 8 epochs, one
network per (method, seed). Seeds 0, 1, 2. Metrics of ``lucidppn`` named ``shapetex_*`` are
its grayscale branch's own prediction p^S, from the same trained model.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast, MeanAtMost, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# Each training is compute-bound (~12-25 CPU s: conv2d forward and backward are ~80 % of a
# profile; the convolutions already run channels-last). Two seeds (six trainings) measured
# 107-154 CPU s in CI, over the 120 CPU s aim, so CI trains the three methods on seed 0 and
# `scripts/reproduce.py` runs all three seeds (results/toy.json, the verdicts) and the
# held-out three.
CI_SEEDS = [0]
# One seed measures claim 2's margin too noisily for its -0.05 bar: seed 0 alone is -0.057
# (fused 0.924 vs RGB 0.981; the three-seed margin passes, results/toy.json). It is gated by
# reproduce.py over three seeds and shown, not gated, in CI, which gates every other claim and
# control on seed 0 (and compares seed 0's numbers bit for bit). CI's seed is not chosen by
# which seed passes.
REPRODUCE_ONLY = {
    "2: fused accuracy >= RGB baseline - 0.05": "a margin of three-seed means (~130 CPU-s for "
    "two seeds in CI); one seed measures it too noisily (seed 0: -0.057)",
}
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["lucidppn", "rgb", "no_align"]
PRIMARY = ("lucidppn", "acc")
PLOT = "explanation.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "acc",
    "shapetex_acc",
    "shapetex_group_acc",
    "colornet_acc",
    "hue_acc",
    "gap_head",
    "gap_body",
    "gap_tail",
    "rho",
    "iou_body",
]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

LABELS = {
    "lucidppn": "LucidPPN",
    "rgb": "single-branch RGB baseline",
    "no_align": "LucidPPN, alpha_D = 0",
}

CLAIMS = [
    # 1. Complementarity: fused accurate, the grayscale branch alone at chance inside each
    #    colour-twin pair but right about the shape group.
    Claim("1: fused accuracy >= 0.90", MeanAtLeast("acc", ("lucidppn",), 0.90)),
    Claim("1: ShapeTexNet-alone accuracy <= 0.60", MeanAtMost("shapetex_acc", ("lucidppn",), 0.60)),
    Claim(
        "1: ShapeTexNet-alone shape-group accuracy >= 0.90",
        MeanAtLeast("shapetex_group_acc", ("lucidppn",), 0.90),
    ),
    # 2. Comparable to the entangled single-branch baseline.
    Claim(
        "2: fused accuracy >= RGB baseline - 0.05",
        MarginAtLeast("acc", "lucidppn", "rgb", -0.05),
    ),
    # 3. Colour is the colour branch's job: the luminance-preserving hue rotation is invisible
    #    to ShapeTexNet and breaks the fused decision (every seed).
    Claim(
        "3: hue rotation changes r^S by <= 1e-4 (every seed)",
        MeanAtMost("hue_max_abs_dr_shape", ("lucidppn",), 1e-4, every_seed=True),
    ),
    Claim(
        "3: hue rotation drops fused accuracy by >= 0.30 (every seed)",
        MeanAtLeast("hue_acc_drop", ("lucidppn",), 0.30, every_seed=True),
    ),
    # 4. Unambiguous explanation: the evidence separating colour twins sits in the body's
    #    colour prototype; rho = body gap / max(|head gap|, |tail gap|, 0.01).
    Claim("4: body colour-twin gap >= 0.20", MeanAtLeast("gap_body", ("lucidppn",), 0.20)),
    Claim("4: localisation ratio rho >= 3", MeanAtLeast("rho", ("lucidppn",), 3.0)),
    Claim(
        "4: rho >= 2 x the RGB baseline's rho",
        RatioAtMost("rho", "rgb", "lucidppn", 0.5),
    ),
    # 5. Part alignment is what makes the colour branch work.
    Claim(
        "5: fused accuracy(alpha_D = 1.4) - fused accuracy(alpha_D = 0) >= 0.20",
        MarginAtLeast("acc", "lucidppn", "no_align", 0.20),
    ),
    # Negative controls: the same bars where they must not hold.
    Claim(
        "RGB baseline: rho >= 3 (entangled evidence is spread over all parts)",
        MeanAtLeast("rho", ("rgb",), 3.0),
        role="negative_control",
    ),
    Claim(
        "RGB baseline: hue rotation changes its r by <= 1e-4 (it sees colour)",
        MeanAtMost("hue_max_abs_dr_shape", ("rgb",), 1e-4),
        role="negative_control",
    ),
    Claim(
        "alpha_D = 0 ablation: fused accuracy >= 0.90",
        MeanAtLeast("acc", ("no_align",), 0.90),
        role="negative_control",
    ),
    # Reported, not gated (brief: absolute part IoU at 8 x 8 is low).
    Claim(
        "part IoU of the body >= 0.20",
        MeanAtLeast("iou_body", ("lucidppn",), 0.20),
        role="diagnostic",
    ),
]
