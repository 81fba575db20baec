"""Horizon generalization's toy acceptance claims (brief Sec. 5), declared as data.

Open 11 x 11 grid, one-hot states, offline contrastive RL on 3 000 random trajectories of
length 50 with hindsight goals at most 10 steps ahead (so training pairs are mostly within 6
steps), B = 128, 2 000 steps; 1 000 evaluation pairs, greedy policy argmax_a f(s, a, g);
near d <= 5, mid 6-10, far > 10 (BFS). Seeds 0, 1, 2.
"""

from shared.claims import Claim, Diagnosis, MarginAtLeast, MeanAtLeast, MeanAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
# CI gates seeds 0 and 1 (two of three): all three cost 124-126 CPU s in quiet Intel CI runs,
# over the 120 s aim, and every claim holds on each pair of the three seeds with the same
# margins (far success >= 0.997 on each pair); scripts/reproduce.py gates all three.
CI_SEEDS = [0, 1]
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
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)
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


# --------------------------------------------------------------------------------------------
# The real rung (configs/horizon_generalization/real.yaml; declared before the first full run)
# --------------------------------------------------------------------------------------------
# gymnasium-robotics' PointMaze "MEDIUM_MAZE" (MuJoCo point mass, 26 free 1 m cells, diameter
# 11 cells), critics on a 3 x 3 tile coding per cell, offline data of the uniform random policy
# (2 000 trajectories of 50 decisions, about one 1/3 m tile a decision), hindsight goals <= 20
# decisions ahead: 99 % of training pairs lie within 2 cells, none 6 or more apart; 300
# evaluation pairs per seed, success = the env's 0.45 m; bins by start-goal cell distance:
# near 1-2, mid 3-5, far >= 6 (point_maze.py).
# Second protocol (issue 51; results/real_first.json keeps the first): the official evaluation
# protocol, a policy sampled from softmax(f / 1) instead of the greedy argmax (real.yaml cites
# the official lines), with the greedy policy also rolled out on the same pairs (greedy_*
# metrics), on MEDIUM_MAZE and on the wall-free OPEN map (layout "arena", the paper's open
# arena; far = 4-6 cells there). The claims below are unchanged; the "open: ..." claims were
# declared and committed before the second protocol's first full run.
MAZE = "medium"
ARENA = "arena"
REAL_SEEDS = [0, 1, 2]
# The dot-product critic runs in the plain command (real.yaml) but enters no real claim.
REAL_METHODS = ["l2", "mrn", "mlp", "oracle", "untrained"]
REAL_PLOT = PLOT
REAL_PAPER_NUMBER = "not reported"  # Ant 15 m -> 50 m (paper Table 1); numbers not retrievable
REAL_TABLE_METRICS = [
    "near_success",
    "mid_success",
    "far_success",
    "eta",
    "far_optimal_action_rate",
    "pi_rate",
    "train_far_fraction",
    "far_stuck_fraction",
    "greedy_far_success",
    "greedy_far_stuck_fraction",
]
REAL_LABELS = {
    f"{layout}/{m}": f"{layout}: {name}"
    for layout in ("medium", "large")
    for m, name in _NAMES.items()
} | {f"{ARENA}/{m}": f"open arena: {name}" for m, name in _NAMES.items()}
# Measured: the first protocol's full claim set (medium only) took 627 CPU s on one core
# (README "Real data"); the second adds the arena (2 000 steps instead of 3 000, 135 tiles
# instead of 234) and a second rollout set per run: measured 1 131 CPU s, plus headroom.
# in units of the reference workload (tests/cpu_units.py): 1,600 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 1070.0
REAL_CI = False  # the full set costs several CPU minutes (> 120 s)
REAL_SMOKE_OVERRIDES = (
    "seeds=[0]",
    "methods=[l2,mlp,oracle]",
    "layouts.medium.steps=30",
    "layouts.arena.steps=30",
    "data.n_trajectories=40",
    "data.length=20",
    "eval.n_pairs=20",
    "eval.max_steps=60",
    "eval.pi_pairs=5",
    "loop.checkpoint_every=20",
    "loop.log_every=10",
)


def horizon_claims(layout: str, prefix: str) -> list[Claim]:
    """The central claims on one real layout, named ``prefix + statement``."""
    return [
        # The paper's central claim (brief Sec. 2; toy claims 1-2, margin 0.30 carried over):
        # trained on near goals only, metric and quasimetric critics reach far goals, the
        # unconstrained monolithic critic does not.
        *(
            Claim(
                f"{prefix}{critic}: far-goal success >= monolithic MLP's + 0.30",
                MarginAtLeast("far_success", f"{layout}/{critic}", f"{layout}/mlp", 0.30),
            )
            for critic in ("l2", "mrn")
        ),
        # Toy claim 3: the (quasi)metric critics keep their near-goal success at long horizons.
        Claim(
            f"{prefix}l2 and MRN keep their accuracy with horizon: far >= near - 0.05",
            MeanAtLeast("far_minus_near", (f"{layout}/l2", f"{layout}/mrn"), -0.05),
        ),
        # Toy claim 4: the metric critic solves the goals it was trained on.
        Claim(
            f"{prefix}l2: near-goal success >= 0.9",
            MeanAtLeast("near_success", (f"{layout}/l2",), 0.9),
        ),
    ]


def training_range_claim(layout: str, prefix: str, role: str) -> Claim:
    """The set-up: training goals are near. Hindsight pairs drawn as the batches are, measured
    in maze cells: (almost) none as far apart as the far bin."""
    return Claim(
        f"{prefix}training pairs in the far bin <= 0.001 (trained on near goals only)",
        MeanAtMost("train_far_fraction", (f"{layout}/l2",), 0.001, every_seed=True),
        role=role,
    )


def sanity_claims(layout: str, prefix: str) -> list[Claim]:
    """The oracle in every bin and the negative control on one real layout."""
    return [
        # Sanity of the env, controller and evaluator: the oracle critic -BFS over tiles
        # reaches every bin (0.95, not the toy's 1.0: the ball is a physical body in MuJoCo).
        *(
            Claim(
                f"{prefix}oracle critic scores >= 0.95 on {b} goals",
                MeanAtLeast(f"{b}_success", (f"{layout}/oracle",), 0.95, every_seed=True),
            )
            for b in ("near", "mid", "far")
        ),
        # Negative control, the same comparator as the main claim: the l2 critic at its
        # initialisation (no training step). The margin comes from what the critic learned,
        # not from the metric architecture or the evaluator.
        Claim(
            f"{prefix}untrained l2 critic: far-goal success >= monolithic MLP's + 0.30",
            MarginAtLeast("far_success", f"{layout}/{UNTRAINED}", f"{layout}/mlp", 0.30),
            role="negative_control",
        ),
    ]


def planning_invariance_diagnostics(layout: str, prefix: str) -> list[Claim]:
    """Reported, not gated: the (quasi)metric critics' planning-invariance margin."""
    return [
        Claim(
            f"{prefix}planning invariance: {critic} PI rate >= monolithic MLP's + 0.30",
            MarginAtLeast("pi_rate", f"{layout}/{critic}", f"{layout}/mlp", PI_MARGIN),
            role="diagnostic",
        )
        for critic in ("l2", "mrn")
    ]


_M = MAZE
REAL_CLAIMS = [
    *horizon_claims(_M, ""),
    training_range_claim(_M, "", role="claim"),
    *sanity_claims(_M, ""),
    # Reported, not gated.
    Claim(
        "l2 and MRN: far optimal-action rate (tiles) >= 0.95",
        MeanAtLeast("far_optimal_action_rate", (f"{_M}/l2", f"{_M}/mrn"), 0.95),
        role="diagnostic",
    ),
    *planning_invariance_diagnostics(_M, ""),
    # The same claims on gymnasium-robotics' wall-free OPEN map (the paper's open arena), under
    # the second protocol; declared and committed before its first full run (issue 51). The
    # arena is 6 cells across: its far bin (4-6 cells) holds about 0.1 % of the training pairs
    # (measured on 200 trajectories before the run), at the 0.001 bar, so that one is reported
    # rather than gated.
    *horizon_claims(ARENA, "open: "),
    *sanity_claims(ARENA, "open: "),
    training_range_claim(ARENA, "open: ", role="diagnostic"),
    *planning_invariance_diagnostics(ARENA, "open: "),
]

# --------------------------------------------------------------------------------------------
# Issue 51: why the first protocol's failing claims failed (python -m
# papers.horizon_generalization.diagnose --write; numbers from results/diagnosis.json).
# --------------------------------------------------------------------------------------------
_DIAGNOSE = "python -m papers.horizon_generalization.diagnose --write"
REAL_DIAGNOSES = [
    Diagnosis(
        claims=(
            "l2: far-goal success >= monolithic MLP's + 0.30",
            "mrn: far-goal success >= monolithic MLP's + 0.30",
            # the same claims on the open arena, failing in the second protocol's run
            "open: l2: far-goal success >= monolithic MLP's + 0.30",
            "open: mrn: far-goal success >= monolithic MLP's + 0.30",
        ),
        word="method",
        headline=(
            "official sampled evaluation: far margins over the MLP {official_medium_margin_l2:.2f} "
            "/ {official_medium_margin_mrn:.2f} (l2 / MRN, maze) and "
            "{official_arena_margin_l2:.2f} / {official_arena_margin_mrn:.2f} in the open arena, "
            "where every critic reaches {official_arena_mlp_far:.2f}"
        ),
        reason=(
            "under the official evaluation (actions sampled from the critic's softmax) the far"
            " margins over the monolithic MLP are l2 {official_medium_margin_l2:.3f} / MRN"
            " {official_medium_margin_mrn:.3f} on MEDIUM_MAZE (MLP far"
            " {official_medium_mlp_far:.3f}) and {official_arena_margin_l2:.3f} /"
            " {official_arena_margin_mrn:.3f} on the open arena, where every critic, the MLP"
            " included, reaches far goals (MLP {official_arena_mlp_far:.3f}); sampling frees the"
            " rollouts the greedy policy left stuck (l2's far pairs stuck:"
            " {greedy_medium_l2_stuck:.3f} greedy, {official_medium_l2_stuck:.3f} sampled) but"
            " lifts the MLP's far success too ({greedy_medium_mlp_far:.3f} greedy,"
            " {official_medium_mlp_far:.3f} sampled), more than l2's and less than MRN's"
        ),
        experiment=_DIAGNOSE,
    ),
    Diagnosis(
        claims=("l2 and MRN keep their accuracy with horizon: far >= near - 0.05",),
        word="protocol",
        headline=(
            "open arena, the paper's setting: far - near {official_arena_far_minus_near:.2f}; the "
            "walled maze fails under either policy ({official_medium_far_minus_near:.2f} sampled)"
        ),
        reason=(
            "holds in the paper's setting, the open arena under the official sampled evaluation:"
            " far - near {official_arena_far_minus_near:.3f} (far success l2"
            " {official_arena_l2_far:.3f}, MRN {official_arena_mrn_far:.3f}); in the walled"
            " MEDIUM_MAZE it fails under either policy ({first_medium_far_minus_near:.3f} greedy,"
            " {official_medium_far_minus_near:.3f} sampled: far success l2"
            " {official_medium_l2_far:.3f}, MRN {official_medium_mrn_far:.3f}), far goals there"
            " needing detours that no training pair spans"
        ),
        experiment=_DIAGNOSE,
    ),
    Diagnosis(
        claims=("l2: near-goal success >= 0.9",),
        word="protocol",
        headline=(
            "the greedy argmax trapped rollouts (stuck {greedy_medium_l2_stuck:.2f}); sampled: "
            "near {official_medium_l2_near:.2f} in the maze, {official_arena_l2_near:.2f} in the "
            "open arena"
        ),
        reason=(
            "the first protocol's greedy argmax left rollouts pressed against walls (l2's far"
            " pairs stuck {greedy_medium_l2_stuck:.3f}); sampled as the official evaluator does,"
            " l2's near success rises from {first_medium_l2_near:.3f} to"
            " {official_medium_l2_near:.3f} on MEDIUM_MAZE (still short of the bar) and is"
            " {official_arena_l2_near:.3f} on the open arena, the paper's setting"
        ),
        experiment=_DIAGNOSE,
    ),
]
