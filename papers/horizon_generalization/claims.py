"""Horizon generalization's toy acceptance claims (brief Sec. 5), declared as data.

Open 11 x 11 grid, one-hot states, offline contrastive RL on 3 000 random trajectories of
length 50 with hindsight goals at most 10 steps ahead (so training pairs are mostly within 6
steps), B = 128, 2 000 steps; 1 000 evaluation pairs, greedy policy argmax_a f(s, a, g);
near d <= 5, mid 6-10, far > 10 (BFS). Seeds 0, 1, 2.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast

SCALE = "toy"
SEEDS = [0, 1, 2]
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
# The dot-product critic is not part of any claim: it runs in the default toy
# (`python -m papers.horizon_generalization.train`) and is reported in the README.
METHODS = ["l2", "mrn", "mlp", "oracle", "untrained"]
# Every gated claim and the negative control need only these; the monolithic MLP (35 s a run,
# compute-bound) enters only the diagnostics, which scripts/reproduce.py runs.
CI_METHODS = ["l2", "mrn", "oracle", "untrained"]
PRIMARY = ("open/l2", "far_success")
PLOT = "success_by_distance.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = [
    "near_success",
    "mid_success",
    "far_success",
    "eta",
    "far_optimal_action_rate",
    "pi_rate",
]
CPU_BUDGET_S = 180.0
UNTRAINED = "untrained"  # the l2 critic at initialisation, no training step
PI_MARGIN = 0.30

OPEN = "open"
_NAMES = {
    "l2": "metric critic (l2)",
    "mrn": "quasimetric critic (MRN)",
    "dot": "dot-product critic",
    "mlp": "monolithic MLP critic",
    "oracle": "oracle critic (-BFS)",
    "untrained": "untrained l2 critic (control)",
}
LABELS = {
    f"{layout}/{m}": f"{layout}: {name}"
    for layout in ("open", "wall")
    for m, name in _NAMES.items()
}

CLAIMS = [
    *(
        Claim(
            f"{critic}: far-goal success >= 0.85",
            MeanAtLeast("far_success", (f"{OPEN}/{critic}",), 0.85),
        )
        for critic in ("l2", "mrn")
    ),
    Claim(
        "l2 and MRN keep their accuracy with horizon: far >= near - 0.05",
        MeanAtLeast("far_minus_near", (f"{OPEN}/l2", f"{OPEN}/mrn"), -0.05),
    ),
    Claim(
        "l2 and MRN: far optimal-action rate >= 0.95",
        MeanAtLeast("far_optimal_action_rate", (f"{OPEN}/l2", f"{OPEN}/mrn"), 0.95),
    ),
    Claim("l2: near-goal success >= 0.9", MeanAtLeast("near_success", (f"{OPEN}/l2",), 0.9)),
    *(
        Claim(
            f"oracle critic scores 1.0 on {b} goals",
            MeanAtLeast(f"{b}_success", (f"{OPEN}/oracle",), 1.0, every_seed=True),
        )
        for b in ("near", "mid", "far")
    ),
    # Negative control: the l2 critic at its initialisation, through the same evaluator. The
    # far-goal bar is reached by what the critic learned, not by the metric architecture or
    # by the evaluator (an untrained metric critic is a random embedding of the grid).
    Claim(
        "untrained l2 critic: far-goal success >= 0.85",
        MeanAtLeast("far_success", (f"{OPEN}/{UNTRAINED}",), 0.85),
        role="negative_control",
    ),
    # The paper's central comparison through the mechanism the toy shows best: metric and
    # quasimetric critics are planning invariant (the greedy action towards g is the one
    # towards a waypoint w on the way to g), the unconstrained monolithic critic less so. With
    # PyTorch's default initialisation l2 - MLP was 0.40 on seeds 0-2; with the official
    # LeCun-uniform initialisation (the default) the MLP is far more planning invariant and
    # the 0.30 margin (the brief's separation margin, carried over) holds on neither seed set
    # (README, "What the toy does not show"). Reported, not gated.
    *(
        Claim(
            f"planning invariance: {critic} PI rate >= monolithic MLP's + 0.30 (not reproduced)",
            MarginAtLeast("pi_rate", f"{OPEN}/{critic}", f"{OPEN}/mlp", PI_MARGIN),
            role="diagnostic",
        )
        for critic in ("l2", "mrn")
    ),
    # The brief's separation on far-goal *success* did not reproduce: our monolithic MLP
    # reaches ~0.84 on far goals (brief's prototype: 0.26). Reported as measured, not gated.
    *(
        Claim(
            f"{critic}: far-goal success >= monolithic MLP's + 0.30 (brief claim, not reproduced)",
            MarginAtLeast("far_success", f"{OPEN}/{critic}", f"{OPEN}/mlp", 0.30),
            role="diagnostic",
        )
        for critic in ("l2", "mrn")
    ),
    Claim(
        "monolithic MLP critic: far-goal success >= 0.85 (brief's negative control)",
        MeanAtLeast("far_success", (f"{OPEN}/mlp",), 0.85),
        role="diagnostic",
    ),
]
