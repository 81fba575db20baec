"""ETCD's toy acceptance claims (brief Sec. 5), declared as data and checked in CI.

Setting: configs/etcd/toy.yaml (the official Case-4 graph and the assumption-violating
graph, n = 2000, u^7 noise, seeds 0-9). Per-seed metrics of graphs ETCD declined to return
(it raised its error signal) are undefined and left out of the means over returned graphs.
"""

from shared.claims import Claim, Diagnosis, MarginAtLeast, MeanAtLeast

SCALE = "toy"
SEEDS = list(range(10))
CI_SEEDS = SEEDS
# Held-out check (scripts/reproduce.py --heldout): as many seeds, disjoint from all used so far.
HELDOUT_SEEDS = [1000 + i for i in range(len(SEEDS))]
METHODS = ["etcd", "etcd_no_error", "direct_lingam"]
PRIMARY = ("case4/etcd", "f1")
PLOT = "graphs.png"  # the run's main figure, saved as results/toy.png
TABLE_METRICS = ["returned", "f1", "ordering_rate", "latent_exact", "observed_f1"]
CPU_BUDGET_UNITS = 120.0  # 180 CPU s on the Intel CI machine (tests/cpu_units.py)

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

# ------------------------------------------------------------------------------------------
# The real rung (configs/etcd/real.yaml; scripts/reproduce.py --paper etcd --scale real).
# Declared before the first full real run and never retuned. The paper reports no real-data
# number we could reach, so the claims are the paper's promise with the toy's bars: on real
# data ETCD either raises AssumptionInvalid or returns a correct graph (accuracy >= the toy's
# 0.85 F1 bar: cluster ARI on Holzinger-Swineford, directed-edge F1 against the consensus
# graph on Sachs), in >= 80% of the seeds (the toy's 80% bar). The seeds only move ETCD's
# random Fourier features and null draws: the data are fixed. "returned" says which of the
# two happened; a returned wrong graph is the failure the promise rules out.
# ------------------------------------------------------------------------------------------
HS, SACHS = "holzinger_swineford", "sachs"
REAL_SEEDS = list(range(10))
REAL_METHODS = ["etcd", "etcd_no_error", "direct_lingam"]
REAL_PLOT = "real_graphs.png"  # the real run's figure, saved as results/real.png
REAL_TRUST_RATE = 0.8  # the toy's 80% bar (latent count exact in >= 80% of returned graphs)
# in units of the reference workload (tests/cpu_units.py): 90 CPU s on the Intel CI machine
REAL_CPU_BUDGET_UNITS = 60.0  # estimated ~30 CPU s (10 seeds x ~2 s + imports) x 3
REAL_CI = True
REAL_SMOKE_OVERRIDES = ("seeds=[0]", "real.max_samples=400")
REAL_PAPER_NUMBER = "not reported"
REAL_TABLE_METRICS = [
    "returned",
    "trustworthy",
    "trust_pvalue",
    "n_latent",
    "cluster_ari",
    "directed_f1",
    "skeleton_f1",
    "normality_rejected",
]
REAL_LABELS = {
    f"{HS}/etcd": "Holzinger-Swineford: ETCD",
    f"{HS}/etcd_no_error": "Holzinger-Swineford: ETCD without error signal (ablation)",
    f"{HS}/direct_lingam": "Holzinger-Swineford: DirectLiNGAM",
    f"{HS}/data": "Holzinger-Swineford: the data (non-Gaussianity)",
    f"{SACHS}/etcd": "Sachs (observational): ETCD",
    f"{SACHS}/etcd_no_error": "Sachs (observational): ETCD without error signal (ablation)",
    f"{SACHS}/direct_lingam": "Sachs (observational): DirectLiNGAM",
    f"{SACHS}/data": "Sachs (observational): the data (non-Gaussianity)",
}
REAL_CLAIMS = [
    Claim(
        "Holzinger-Swineford: trustworthy in >= 80% of seeds (raises AssumptionInvalid, or "
        "returns the 3 known indicator clusters, ARI >= 0.85)",
        MeanAtLeast("trustworthy", (f"{HS}/etcd",), REAL_TRUST_RATE),
    ),
    Claim(
        "Sachs observational: trustworthy in >= 80% of seeds (raises AssumptionInvalid, or "
        "returns a graph with directed F1 >= 0.85 vs the consensus)",
        MeanAtLeast("trustworthy", (f"{SACHS}/etcd",), REAL_TRUST_RATE),
    ),
    # The same comparator on a method that never raises: its promise reduces to its graph
    # being correct. DirectLiNGAM has no latent variables, so on Holzinger-Swineford every
    # test is a cluster of its own (ARI 0) by construction; on Sachs its edges would have to
    # reach the 0.85 bar.
    Claim(
        "DirectLiNGAM, Holzinger-Swineford: trustworthy in >= 80% of seeds",
        MeanAtLeast("trustworthy", (f"{HS}/direct_lingam",), REAL_TRUST_RATE),
        role="negative_control",
    ),
    Claim(
        "DirectLiNGAM, Sachs observational: trustworthy in >= 80% of seeds",
        MeanAtLeast("trustworthy", (f"{SACHS}/direct_lingam",), REAL_TRUST_RATE),
        role="negative_control",
    ),
    # Which way it went, and how good the graph ETCD would have returned is.
    Claim(
        "Holzinger-Swineford: ETCD returns a graph in >= 6/10 seeds",
        MeanAtLeast("returned", (f"{HS}/etcd",), 0.6),
        role="diagnostic",
    ),
    Claim(
        "Holzinger-Swineford: cluster ARI of ETCD's graph (error signal off) >= 0.85",
        MeanAtLeast("cluster_ari", (f"{HS}/etcd_no_error",), CASE4_F1),
        role="diagnostic",
    ),
    Claim(
        "Sachs observational: ETCD returns a graph in >= 6/10 seeds",
        MeanAtLeast("returned", (f"{SACHS}/etcd",), 0.6),
        role="diagnostic",
    ),
    Claim(
        "Sachs observational: directed F1 of ETCD's graph (error signal off) beats "
        "DirectLiNGAM's by >= 0.25",
        MarginAtLeast("directed_f1", f"{SACHS}/etcd_no_error", f"{SACHS}/direct_lingam", 0.25),
        role="diagnostic",
    ),
    # How non-Gaussian the data are (ETCD's tests need it): D'Agostino-Pearson at 0.01.
    Claim(
        "Holzinger-Swineford data: normality rejected for >= half of the 9 tests",
        MeanAtLeast("normality_rejected", (f"{HS}/data",), 0.5),
        role="diagnostic",
    ),
    Claim(
        "Sachs data (log): normality rejected for >= half of the 11 proteins",
        MeanAtLeast("normality_rejected", (f"{SACHS}/data",), 0.5),
        role="diagnostic",
    ),
]

# ------------------------------------------------------------------------------------------
# Why the two real claims failed (issue 51): papers/etcd/diagnose.py, numbers from
# results/diagnosis.json. The official code was run from a checkout of
# XiuchuanLi/ICLR2025-ETCD (commit 3298ad5) outside the repository.
# ------------------------------------------------------------------------------------------
DIAGNOSE_COMMAND = (
    "python -m papers.etcd.diagnose --write --official <checkout of the official code>"
)
REAL_DIAGNOSES = [
    Diagnosis(
        claims=(REAL_CLAIMS[0].name,),
        word="method",
        headline=(
            "n = 301 is too small: where every assumption holds, trustworthy "
            "{sweep_trustworthy_n301:.1f} / {sweep_trustworthy_n1000:.1f} / "
            "{sweep_trustworthy_n2000:.1f} / {sweep_trustworthy_n5000:.1f} at n = 301 / 1k / 2k / "
            "5k; Stage 1 passes HS's sibling pairs {type1_sibling_accept_hs:.2f}"
        ),
        official_headline=(
            "same raise decision in {holzinger_swineford_same_raise:.1f} of seeds; trustworthy "
            "{holzinger_swineford_official_trustworthy:.1f} (ours "
            "{holzinger_swineford_ours_trustworthy:.1f})"
        ),
        reason=(
            "n = 301 is far below what ETCD needs: on simulated data that meet every assumption "
            "(3 correlated latents x 3 pure indicators, u^7 noise, z-scored like the real rung), "
            "it returns a wrong graph without raising in {sweep_wrong_n301:.2f} of seeds at "
            "n = 301; trustworthy {sweep_trustworthy_n301:.2f} / {sweep_trustworthy_n1000:.2f} "
            "/ {sweep_trustworthy_n2000:.2f} / {sweep_trustworthy_n5000:.2f} at n = 301 / 1000 "
            "/ 2000 / 5000 (the 0.8 bar from n = {sweep_n_needed:.0f}). Stage 1's type-I test "
            "accepts sibling pairs as parent and pure child in {type1_sibling_accept_n301:.3f} "
            "of cases at n = 301 ({type1_sibling_accept_n5000:.3f} at 5000) and in "
            "{type1_sibling_accept_hs:.3f} on Holzinger-Swineford's own within-ability pairs, "
            "so the tests are absorbed as pure children and Stage 2, the only place the error "
            "can fire, has nothing left to test (raised {holzinger_swineford_ours_raised:.2f}); "
            "not the z-scoring (raw data: trustworthy "
            "{raw_holzinger_swineford_trustworthy:.2f}; spread x3: "
            "{spread_holzinger_swineford_trustworthy:.2f})"
        ),
        experiment=DIAGNOSE_COMMAND,
        official=(
            "the official code on the same arrays and seeds: trustworthy "
            "{holzinger_swineford_official_trustworthy:.2f} (ours "
            "{holzinger_swineford_ours_trustworthy:.2f}), raised "
            "{holzinger_swineford_official_raised:.2f} (ours "
            "{holzinger_swineford_ours_raised:.2f}), the same raise decision in "
            "{holzinger_swineford_same_raise:.2f} of seeds and the identical graph in "
            "{holzinger_swineford_same_graph:.2f} (its random features differ from ours); on "
            "the sweep's data trustworthy {official_sweep_official_trustworthy_n301:.2f} at "
            "n = 301 and {official_sweep_official_trustworthy_n5000:.2f} at 5000 (ours "
            "{official_sweep_ours_trustworthy_n301:.2f} and "
            "{official_sweep_ours_trustworthy_n5000:.2f})"
        ),
    ),
    Diagnosis(
        claims=(REAL_CLAIMS[1].name,),
        word="method",
        headline=(
            "853 cells, below what ETCD needs (trustworthy {sweep_trustworthy_n1000:.1f} at n = 1k "
            "where it holds); raised in {sachs_ours_raised:.1f} of seeds, wrong graphs in the rest"
        ),
        official_headline=(
            "raised {sachs_official_raised:.1f} (ours {sachs_ours_raised:.1f}); directed F1 "
            "{sachs_official_accuracy:.3f} (ours {sachs_ours_accuracy:.3f})"
        ),
        reason=(
            "Sachs's 853 observational cells are below what ETCD needs even where its "
            "assumptions hold (the simulated sweep: trustworthy {sweep_trustworthy_n1000:.2f} "
            "at n = 1000, the 0.8 bar from n = {sweep_n_needed:.0f}), and signalling with "
            "feedback lies outside the linear acyclic model, which Stage 1 does not test: ETCD "
            "raised in {sachs_ours_raised:.2f} of seeds and returned wrong graphs in the rest "
            "(its graphs, error signal off: directed F1 {sachs_ours_accuracy:.3f}); not the "
            "z-scoring (raw log data: trustworthy {raw_sachs_trustworthy:.2f}; spread x3: "
            "{spread_sachs_trustworthy:.2f})"
        ),
        experiment=DIAGNOSE_COMMAND,
        official=(
            "the official code on the same arrays and seeds: trustworthy "
            "{sachs_official_trustworthy:.2f} (ours {sachs_ours_trustworthy:.2f}), raised "
            "{sachs_official_raised:.2f} (ours {sachs_ours_raised:.2f}), directed F1 "
            "{sachs_official_accuracy:.3f} (ours {sachs_ours_accuracy:.3f}), the same raise "
            "decision in {sachs_same_raise:.2f} of seeds and the identical graph in "
            "{sachs_same_graph:.2f}"
        ),
    ),
]
