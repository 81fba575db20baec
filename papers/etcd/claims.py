"""ETCD's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Setting: configs/etcd/toy.yaml (the official Case-4 graph and the assumption-violating
graph, n = 2000, u^7 noise, seeds 0-9). Per-seed metrics of graphs ETCD declined to return
(it raised its error signal) are undefined and left out of the means over returned graphs.
"""

from shared.claims import Claim, MarginAtLeast, MeanAtLeast

SCALE = "toy"
SEEDS = list(range(10))
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["etcd", "etcd_no_error", "direct_lingam"]
PRIMARY = ("case4/etcd", "f1")
PLOT = "graphs.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["returned", "f1", "ordering_rate", "latent_exact", "observed_f1"]
CPU_BUDGET_S = 180.0

CASE4, VIOLATING = "case4", "violating"
CASE4_F1 = 0.85  # brief Sec. 5: ETCD's accuracy bar on Case 4
LABELS = {
    f"{CASE4}/etcd": "Case 4: ETCD",
    f"{CASE4}/etcd_no_error": "Case 4: ETCD without error signal (ablation)",
    f"{CASE4}/direct_lingam": "Case 4: DirectLiNGAM",
    f"{VIOLATING}/etcd": "violating: ETCD",
    f"{VIOLATING}/etcd_no_error": "violating: ETCD without error signal (ablation)",
    f"{VIOLATING}/direct_lingam": "violating: DirectLiNGAM",
}

CLAIMS = [
    # Reported, not gated (issue 29): 9/10 on seeds 0-9 but 5/10 on the held-out seeds
    # 1000-1009, so the rate sits near the bar; the graphs ETCD does return are gated below.
    Claim(
        "Case 4: returns a graph in >= 6/10 seeds (diagnostic: 5/10 on held-out seeds)",
        MeanAtLeast("returned", (f"{CASE4}/etcd",), 0.6),
        role="diagnostic",
    ),
    Claim(
        "Case 4: mean F1 of returned graphs >= 0.85",
        MeanAtLeast("f1", (f"{CASE4}/etcd",), CASE4_F1),
    ),
    Claim(
        "Case 4: mean ordering rate >= 0.85", MeanAtLeast("ordering_rate", (f"{CASE4}/etcd",), 0.85)
    ),
    Claim(
        "Case 4: exact latent count in >= 80% of returned",
        MeanAtLeast("latent_exact", (f"{CASE4}/etcd",), 0.8),
    ),
    Claim(
        "violating: error raised in >= 9/10 seeds",
        MeanAtLeast("raised", (f"{VIOLATING}/etcd",), 0.9),
    ),
    Claim(
        "Case 4: observed-edge F1 beats DirectLiNGAM by >= 0.25",
        MarginAtLeast("observed_f1", f"{CASE4}/etcd", f"{CASE4}/direct_lingam", 0.25),
    ),
    # Why the error signal matters, measured: without it ETCD returns a graph on every
    # violating data set, and those graphs are wrong; they miss the F1 bar ETCD clears on
    # Case 4. (The ablation never raises by construction, so "it raises" could not fail.)
    Claim(
        "ablation without error signal, violating graphs: mean F1 of its graphs >= 0.85",
        MeanAtLeast("f1", (f"{VIOLATING}/etcd_no_error",), CASE4_F1),
        role="negative_control",
    ),
    # A latent-blind method cannot reach ETCD's accuracy bar on the observed edges.
    Claim(
        "DirectLiNGAM: observed-edge F1 >= 0.85",
        MeanAtLeast("observed_f1", (f"{CASE4}/direct_lingam",), 0.85),
        role="negative_control",
    ),
]
