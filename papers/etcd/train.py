"""ETCD experiment: ``python -m papers.etcd.train [scale=smoke|toy|paper] [key=value ...]``.

Wall times are not metrics (they differ between identical runs); ``papers/etcd/benchmark.py``
measures them.

No training loop: for every graph family and seed, simulate a linear non-Gaussian model with
latent variables, run ETCD once with the error signal recorded but not raised, and read off
both ETCD (which declines to answer when its trust check fires) and the ablation without the
error signal; DirectLiNGAM (and GIN at paper scale) run on the same data. The recovered
graph of one seed is drawn beside the true one.
"""

from __future__ import annotations

import os

# One BLAS thread: the many small HSIC products are ~10x slower with thread contention
# (brief Sec. 3.4). Only when run as the entry point (an importer keeps its environment), and
# before numpy's first import in this process.
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from papers.etcd.config import Config  # noqa: E402
from papers.etcd.data import (  # noqa: E402
    LatentGraph,
    case4_graph,
    sample_weights,
    simulate,
    violating_graph,
)
from papers.etcd.method import (  # noqa: E402
    ETCDResult,
    ETCDSettings,
    HSICSettings,
    etcd,
    observed_edge_f1,
    performance,
    to_networkx,
)
from shared.entry import main  # noqa: E402
from shared.experiment import RunOutput, check_names, run_grid  # noqa: E402
from shared.logger import MetricsLogger  # noqa: E402
from shared.plotting import plt  # noqa: E402
from shared.preflight import missing_packages  # noqa: E402
from shared.records import Results, by_setting  # noqa: E402

HAS_TRAINABLE_PARAMETERS = False  # causal discovery: nothing is trained
METHODS = ("etcd", "etcd_no_error", "direct_lingam", "gin")
GRAPHS = {"case4": case4_graph, "violating": violating_graph}
UNDEFINED = float("nan")  # metric of a graph that was not returned
# Optional packages by method: GIN, a paper-scale baseline, comes from causal-learn.
OPTIONAL_PACKAGES = {"gin": {"causallearn": "pip install -e '.[paper]' for causal-learn"}}


def preflight(cfg: Config) -> list[str]:
    """Paper scale simulates its data; only the GIN baseline needs an optional package."""
    return [
        f"method {method!r}: {problem}"
        for method in cfg.methods
        for problem in missing_packages(OPTIONAL_PACKAGES.get(method, {}))
    ]


def settings_from(cfg: Config, error: bool) -> ETCDSettings:
    a = cfg.algorithm
    return ETCDSettings(
        alpha_ip=a.alpha_ip,
        alpha_type1=a.alpha_type1,
        alpha_quintuple=a.alpha_quintuple,
        alpha_corr=a.alpha_corr,
        alpha_error=a.alpha_error,
        edge_threshold=a.edge_threshold,
        error=error,
        hsic=HSICSettings(a.hsic.width, a.hsic.n_frequencies, a.hsic.n_null),
        min_samples=cfg.data.min_samples,
        instrument_min_corr=a.instrument_min_corr,
        cluster_order=a.cluster_order,
    )


def draw_data(graph_name: str, seed: int, cfg: Config) -> tuple[LatentGraph, np.ndarray]:
    """The weighted true graph and its observed data (p_obs, n) for one seed."""
    if graph_name not in GRAPHS:
        raise ValueError(f"unknown graph {graph_name!r}; choose from {sorted(GRAPHS)}")
    rng = np.random.default_rng(seed)
    d = cfg.data
    graph = sample_weights(GRAPHS[graph_name](), rng, tuple(d.weight_range), d.faithfulness_min)
    X = simulate(graph, d.n, rng, d.noise_power, tuple(d.noise_scale_range))
    return graph, X


def graph_metrics(graph: LatentGraph, adjacency: np.ndarray, n_observed: int) -> dict:
    latent_error, ordering_rate, f1 = performance(graph.B, graph.n_latent, adjacency, n_observed)
    return {
        "f1": f1,
        "ordering_rate": ordering_rate,
        "latent_error": float(latent_error),
        "latent_exact": float(latent_error == 0),
        "observed_f1": observed_edge_f1(
            graph.B, graph.n_latent, adjacency[:n_observed, :n_observed]
        ),
    }


def run_direct_lingam(X: np.ndarray, seed: int, threshold: float) -> np.ndarray:
    """DirectLiNGAM (the ``lingam`` package) on the observed variables: (p, p) adjacency."""
    import lingam

    model = lingam.DirectLiNGAM(random_state=seed).fit(X.T)
    B = model.adjacency_matrix_  # B[i, j]: j -> i
    return np.where(np.abs(B) > threshold, B, 0.0)


def run_gin(X: np.ndarray, alpha: float) -> np.ndarray:
    """GIN (causal-learn) at paper scale: adjacency over observed + its latent nodes."""
    try:
        from causallearn.search.HiddenCausal.GIN.GIN import GIN
    except ImportError as err:
        raise ImportError("GIN needs causal-learn: pip install -e '.[paper]'") from err
    G, _ = GIN(X.T, indep_test_method="hsic", alpha=alpha)
    nodes = G.get_nodes()

    # causal-learn names observed columns X1..Xp and latents L1..; order both by number
    def number(node) -> int:
        return int(node.get_name()[1:])

    observed = sorted((nd for nd in nodes if not nd.get_name().startswith("L")), key=number)
    latents = sorted((nd for nd in nodes if nd.get_name().startswith("L")), key=number)
    index = {nd.get_name(): i for i, nd in enumerate(observed + latents)}
    A = np.zeros((len(index), len(index)))
    for edge in G.get_graph_edges():
        a, b = edge.get_node1().get_name(), edge.get_node2().get_name()
        A[index[b], index[a]] = 1.0  # GIN's edges point from node1 to node2
    return A


def run_graph_seed(graph_name: str, seed: int, cfg: Config) -> tuple[RunOutput, ETCDResult]:
    """All methods on one simulated data set."""
    graph, X = draw_data(graph_name, seed, cfg)
    p = X.shape[0]
    metrics: dict[str, float] = {}

    if {"etcd", "etcd_no_error"} & set(cfg.methods):
        # One run records the trust statistic instead of raising: error mode would raise
        # exactly when the smallest root p-value falls below alpha_error (Sec. 3.3 step 1).
        result = etcd(X, settings_from(cfg, error=False), np.random.default_rng(seed))
        found = graph_metrics(graph, result.adjacency, p)
        raised = result.min_root_pvalue < cfg.algorithm.alpha_error
        for method, refuses in (("etcd", raised), ("etcd_no_error", False)):
            if method in cfg.methods:
                metrics[f"{method}.returned"] = float(not refuses)
                metrics[f"{method}.raised"] = float(refuses)
                for key, value in found.items():
                    metrics[f"{method}.{key}"] = UNDEFINED if refuses else value
    else:
        result = None

    baselines = {
        "direct_lingam": lambda: run_direct_lingam(X, seed, cfg.lingam_threshold),
        "gin": lambda: run_gin(X, cfg.gin_alpha),
    }
    for method, fit in baselines.items():
        if method in cfg.methods:
            adjacency = fit()
            metrics[f"{method}.returned"], metrics[f"{method}.raised"] = 1.0, 0.0
            for key, value in graph_metrics(graph, adjacency, p).items():
                metrics[f"{method}.{key}"] = value
    return RunOutput(metrics=metrics), result


def layered_layout(g: nx.DiGraph) -> dict:
    """Causes above effects: one row per topological generation (spring layout if cyclic)."""
    if not nx.is_directed_acyclic_graph(g):
        return nx.kamada_kawai_layout(g, weight=None)
    for layer, nodes in enumerate(nx.topological_generations(g)):
        for node in nodes:
            g.nodes[node]["layer"] = layer
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    return {node: (x, -y) for node, (x, y) in pos.items()}  # roots on top


def draw_graphs(cfg: Config, path: Path) -> None:
    """The true Case-4 graph beside ETCD's recovered graph for ``plot_seed``."""
    graph, X = draw_data("case4", cfg.plot_seed, cfg)
    result = etcd(X, settings_from(cfg, error=False), np.random.default_rng(cfg.plot_seed))
    n_obs = X.shape[0]
    # the true B is ordered [latents..., observed...]; to_networkx wants observed first
    order = list(range(graph.n_latent, len(graph.B))) + list(range(graph.n_latent))
    true_names = [graph.names[i] for i in order]
    true = to_networkx(graph.B[np.ix_(order, order)], n_obs, names=true_names)
    found = to_networkx(result.adjacency, n_obs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), dpi=120)
    for ax, g, title in (
        (axes[0], true, "true graph (Case 4)"),
        (axes[1], found, f"ETCD, seed {cfg.plot_seed} (trust p = {result.min_root_pvalue:.3g})"),
    ):
        pos = layered_layout(g)
        colors = ["#f4a582" if g.nodes[v]["latent"] else "#92c5de" for v in g.nodes]
        nx.draw_networkx(g, pos, ax=ax, node_color=colors, node_size=520, font_size=8, arrowsize=12)
        ax.set_title(title)
        ax.axis("off")
    fig.suptitle(
        "latent variables in orange (estimated latents are numbered arbitrarily), observed in blue"
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every (graph, seed), the graph drawing, and the per-method results."""
    check_names("methods", cfg.methods, METHODS)
    check_names("graphs", cfg.graphs, GRAPHS)
    per_graph, _ = run_grid(
        cfg.graphs,
        cfg.seeds,
        out_dir,
        lambda name, seed, run_dir: run_graph_seed(name, seed, cfg)[0],
        progress=cfg.runtime.progress,
        logger=MetricsLogger(Path(out_dir) / "metrics.jsonl"),
    )
    results = by_setting(per_graph)
    if "case4" in cfg.graphs:
        draw_graphs(cfg, Path(out_dir) / "graphs.png")
    return results


if __name__ == "__main__":
    main("etcd")
