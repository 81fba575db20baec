"""ETCD experiment: ``python -m papers.etcd.train [scale=smoke|toy|paper] [key=value ...]``.

Wall times are not metrics (they differ between identical runs); ``papers/etcd/benchmark.py``
measures them.

No training loop: for every graph family and seed, simulate a linear non-Gaussian model with
latent variables, run ETCD once with the error signal recorded but not raised, and read off
both ETCD (which declines to answer when its trust check fires) and the ablation without the
error signal; DirectLiNGAM (and GIN at paper scale) run on the same data. The recovered
graph of one seed is drawn beside the true one.

The real rung (``scale=real``, configs/etcd/real.yaml) runs the same methods on real data sets
named in ``graphs``: Holzinger-Swineford's test scores (are the three known clusters of
indicators recovered, and in which order do their latents come?) and Sachs's observational
cells (edges against the consensus graph); ETCD either returns a graph or raises its error
signal, and each data set's non-Gaussianity is reported beside.
"""

from __future__ import annotations

import os

# One BLAS thread: the many small HSIC products are ~10x slower with thread contention
# (brief Sec. 3.4). Only when run as the entry point (an importer keeps its environment), and
# before numpy's first import in this process.
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import json  # noqa: E402
from itertools import permutations  # noqa: E402
from pathlib import Path  # noqa: E402

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from papers.etcd.config import METHODS, OWN, REAL_SETS, Config  # noqa: E402
from papers.etcd.data import (  # noqa: E402
    LatentGraph,
    RealDataset,
    case4_graph,
    load_holzinger_swineford,
    load_own,
    load_sachs,
    prepare,
    sample_weights,
    simulate,
    violating_graph,
)
from papers.etcd.method import (  # noqa: E402
    ETCDResult,
    ETCDSettings,
    HSICSettings,
    adjusted_rand_index,
    cluster_pair_f1,
    edge_scores,
    etcd,
    indicator_clusters,
    observed_edge_f1,
    performance,
    to_networkx,
)
from shared.entry import main  # noqa: E402
from shared.experiment import RunOutput, check_names, run_grid  # noqa: E402
from shared.logger import MetricsLogger  # noqa: E402
from shared.plotting import plt  # noqa: E402
from shared.records import Results, by_setting  # noqa: E402

HAS_TRAINABLE_PARAMETERS = False  # causal discovery: nothing is trained
GRAPHS = {"case4": case4_graph, "violating": violating_graph}  # keyed by config.SIMULATED_GRAPHS
# Optional packages by method, checked at every scale before any work (shared/entry.py):
# GIN, a paper-scale baseline, comes from causal-learn.
OPTIONAL_PACKAGES = {"gin": {"causallearn": "pip install -e '.[paper]' for causal-learn"}}
REAL_ASSETS = REAL_SETS  # shared/assets.py names them alike; checked before a real run
REAL_GRAPH_FILE = "graph.json"  # per (data set, seed) run folder: the graphs, for the figure
REAL_PLOT = "real_graphs.png"
NORMALITY_ALPHA = 0.01  # D'Agostino-Pearson test level of the non-Gaussianity diagnostic
HS_ORDERS = list(permutations(range(3)))  # latent orders of (visual, textual, speed), coded
UNDEFINED = float("nan")  # metric of a graph that was not returned


def settings_from(cfg: Config, error: bool) -> ETCDSettings:
    return etcd_settings(cfg.algorithm, cfg.data.min_samples, error)


def etcd_settings(a, min_samples: int, error: bool) -> ETCDSettings:
    """ETCD's settings from the config's ``algorithm`` section (an :class:`AlgorithmConfig`)."""
    return ETCDSettings(
        alpha_ip=a.alpha_ip,
        alpha_type1=a.alpha_type1,
        alpha_quintuple=a.alpha_quintuple,
        alpha_corr=a.alpha_corr,
        alpha_error=a.alpha_error,
        edge_threshold=a.edge_threshold,
        error=error,
        hsic=HSICSettings(a.hsic.width, a.hsic.n_frequencies, a.hsic.n_null),
        min_samples=min_samples,
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


# ------------------------------------------------------------------------------------------
# The real rung
# ------------------------------------------------------------------------------------------
def real_assets(cfg: Config) -> tuple[str, ...]:
    """The shipped data sets this config's ``graphs`` name (not a user's own)."""
    return tuple(name for name in REAL_ASSETS if name in cfg.graphs)


def user_files(cfg: Config) -> dict[str, str]:
    """A user's CSV and known-edges file (``graphs: [own]``), recorded with their sha256."""
    if OWN not in cfg.graphs:
        return {}
    files = {"own.path": cfg.own.path}
    if cfg.own.edges:
        files["own.edges"] = cfg.own.edges
    return files


def data_preflight(cfg: Config) -> list[str]:
    """Every scale, before the first seed: a user's CSV (``graphs: [own]``) is read and
    checked (data.load_own: each problem names the file and the column), and its rows
    counted against ETCD's floor (``data.min_samples``, the independence tests' minimum)."""
    if OWN not in cfg.graphs:
        return []
    try:
        dataset, X = load_real(OWN, cfg)
    except ValueError as err:
        return [f"own.path: {err}"]
    floor = cfg.data.min_samples
    if X.shape[1] < floor:
        return [
            f"own.path={cfg.own.path}: {X.shape[1]} rows, ETCD's independence tests need at "
            f"least data.min_samples={floor} (and far more to find a graph: see the README)"
        ]
    return []


def load_real(name: str, cfg: Config) -> tuple[RealDataset, np.ndarray]:
    """A real data set and the array the methods see, (p, n): the first ``max_samples`` rows
    (all if 0), Sachs logged if ``sachs_log``, every variable z-scored if ``standardize``."""
    r = cfg.real
    if name == "holzinger_swineford":
        dataset, log = load_holzinger_swineford(), False
    elif name == "sachs":
        dataset, log = load_sachs(r.sachs_rows), r.sachs_log
    elif name == OWN:
        own = cfg.own
        dataset = load_own(own.path, own.columns, own.clusters, own.edges, own.log)
        log = own.log
    else:
        raise ValueError(f"unknown real data set {name!r}; choose from {list(REAL_SETS)}")
    X = dataset.X[:, : r.max_samples] if r.max_samples > 0 else dataset.X
    return dataset, prepare(X, log=log, standardize=r.standardize)


def non_gaussianity(X: np.ndarray) -> dict[str, float]:
    """How far each variable is from Gaussian: mean |excess kurtosis|, mean |skewness|, and
    the share of variables whose D'Agostino-Pearson normality test rejects at 0.01."""
    pvalues = stats.normaltest(X, axis=1).pvalue  # (p,)
    return {
        "abs_excess_kurtosis": float(np.mean(np.abs(stats.kurtosis(X, axis=1)))),
        "abs_skewness": float(np.mean(np.abs(stats.skew(X, axis=1)))),
        "normality_rejected": float(np.mean(pvalues < NORMALITY_ALPHA)),
    }


def hs_latent_order(labels: np.ndarray, truth: np.ndarray, order: list[int]) -> float:
    """The code (index into ``HS_ORDERS``) of the order in which ETCD's Stage 2 placed the
    latents of the three recovered clusters; NaN unless the clusters are exactly the known
    ones, each under its own latent."""
    if adjusted_rand_index(truth, labels) < 1.0:
        return UNDEFINED
    latent_of = {int(truth[v]): int(labels[v]) for v in range(len(truth))}  # factor -> latent
    if len(set(latent_of.values())) != 3 or min(latent_of.values()) < len(truth):
        return UNDEFINED
    factor_of = {latent: factor for factor, latent in latent_of.items()}
    ranked = tuple(factor_of[v] for v in order if v in factor_of)
    return float(HS_ORDERS.index(ranked)) if len(ranked) == 3 else UNDEFINED


def real_graph_metrics(dataset: RealDataset, adjacency: np.ndarray, cfg: Config) -> dict:
    """Accuracy of one graph on a real data set, and whether it counts as correct (reaches
    ``real.correct_min``): cluster recovery where clusters are known, edges where a graph is."""
    p = len(dataset.names)
    found: dict[str, float] = {"n_latent": float(adjacency.shape[0] - p)}
    if dataset.clusters is not None:
        labels = indicator_clusters(adjacency, p)
        found["cluster_ari"] = adjusted_rand_index(dataset.clusters, labels)
        found["cluster_pair_f1"] = cluster_pair_f1(dataset.clusters, labels)
        found["correct"] = float(found["cluster_ari"] >= cfg.real.correct_min)
    if dataset.edges is not None:
        found.update(edge_scores(dataset.adjacency(), adjacency[:p, :p]))
        found["correct"] = float(found["directed_f1"] >= cfg.real.correct_min)
    return found


def run_real_seed(name: str, seed: int, cfg: Config, run_dir: Path) -> RunOutput:
    """All methods on one real data set (the seed drives ETCD's random features and null).

    ETCD runs once with the error signal recorded: ``etcd`` declines to answer when it
    fires (``raised``; graph metrics undefined), the ablation always answers. ``trustworthy``
    is the paper's promise per run: the error was raised, or the returned graph is correct.
    The graphs go to ``run_dir/graph.json`` for the figure.
    """
    dataset, X = load_real(name, cfg)
    p = X.shape[0]
    metrics = {f"data.{k}": v for k, v in non_gaussianity(X).items()}
    metrics["data.n_samples"], metrics["data.n_variables"] = float(X.shape[1]), float(p)
    saved: dict = {"names": dataset.names, "n_observed": p}

    if {"etcd", "etcd_no_error"} & set(cfg.methods):
        result = etcd(X, settings_from(cfg, error=False), np.random.default_rng(seed))
        found = real_graph_metrics(dataset, result.adjacency, cfg)
        if name == "holzinger_swineford":
            found["latent_order"] = hs_latent_order(
                indicator_clusters(result.adjacency, p), dataset.clusters, result.order
            )
        raised = result.min_root_pvalue < cfg.algorithm.alpha_error
        for method, refuses in (("etcd", raised), ("etcd_no_error", False)):
            if method in cfg.methods:
                metrics[f"{method}.returned"] = float(not refuses)
                metrics[f"{method}.raised"] = float(refuses)
                metrics[f"{method}.trust_pvalue"] = result.min_root_pvalue
                metrics[f"{method}.trustworthy"] = float(refuses or found["correct"] == 1.0)
                for key, value in found.items():
                    metrics[f"{method}.{key}"] = UNDEFINED if refuses else value
        saved["etcd"] = {
            "adjacency": result.adjacency.tolist(),
            "order": result.order,
            "trust_pvalue": result.min_root_pvalue,
            "raised": bool(raised),
        }
    if "direct_lingam" in cfg.methods:
        adjacency = run_direct_lingam(X, seed, cfg.lingam_threshold)
        metrics["direct_lingam.returned"], metrics["direct_lingam.raised"] = 1.0, 0.0
        found = real_graph_metrics(dataset, adjacency, cfg)
        metrics["direct_lingam.trustworthy"] = found["correct"]
        metrics.update({f"direct_lingam.{k}": v for k, v in found.items()})
        saved["direct_lingam"] = {"adjacency": adjacency.tolist()}
    if "gin" in cfg.methods:
        raise ValueError("GIN is a paper-scale baseline; the real rung runs without it")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / REAL_GRAPH_FILE).write_text(json.dumps(saved))
    return RunOutput(metrics=metrics)


def _known_graph(name: str, cfg: Config) -> tuple[np.ndarray, list[str], int, str]:
    """The known structure of a real data set in ETCD's layout: Holzinger-Swineford's three
    abilities over their tests (their causal order is not known: no latent edges), Sachs's
    consensus graph."""
    if name == "holzinger_swineford":
        ds = load_holzinger_swineford()
        p = len(ds.names)
        A = np.zeros((p + 3, p + 3))
        A[np.arange(p), p + ds.clusters] = 1.0
        return A, ds.names + ds.cluster_names, p, "known: three abilities (order unknown)"
    if name == OWN:
        ds, _ = load_real(OWN, cfg)
        p = len(ds.names)
        if ds.edges is not None:
            return ds.adjacency(), ds.names, p, f"known: your {len(ds.edges)} edges"
        if ds.clusters is not None:
            k = len(ds.cluster_names)
            A = np.zeros((p + k, p + k))
            A[np.arange(p), p + ds.clusters] = 1.0
            return A, ds.names + ds.cluster_names, p, f"known: your {k} clusters"
        return None, ds.names, p, "known: nothing given (own.clusters, own.edges)"
    ds = load_sachs(cfg.real.sachs_rows)
    return ds.adjacency(), ds.names, len(ds.names), "known: consensus graph (18 edges)"


def draw_real(cfg: Config, out_dir: Path, path: Path) -> None:
    """The real rung's figure for ``plot_seed``, one row per data set: the known structure,
    ETCD's graph (the one it finds even where its error signal fires, so marked) and
    DirectLiNGAM's. Holzinger-Swineford's tests are coloured by their known ability."""
    rows = []
    for name in (n for n in (*REAL_SETS, OWN) if n in cfg.graphs):
        file = Path(out_dir) / "runs" / f"{name}-s{cfg.plot_seed}" / REAL_GRAPH_FILE
        if file.is_file():  # else plot_seed was not among the seeds run
            rows.append((name, json.loads(file.read_text())))
    if not rows:
        return
    fig, axes = plt.subplots(len(rows), 3, figsize=(13.5, 4.6 * len(rows)), dpi=110)
    axes = np.atleast_2d(axes)
    ability = {0: "#92c5de", 1: "#a6dba0", 2: "#f1b6da"}  # visual, textual, speed
    for row, (name, saved) in zip(axes, rows, strict=True):
        names, p = saved["names"], saved["n_observed"]
        known, known_names, _, known_title = _known_graph(name, cfg)
        panels = [(known, known_names, known_title)]
        for method, label in (("etcd", "ETCD"), ("direct_lingam", "DirectLiNGAM")):
            if method not in saved:
                panels.append((None, None, f"{label}: not run"))
                continue
            adjacency = np.asarray(saved[method]["adjacency"])
            title = label
            if method == "etcd":
                e = saved[method]
                title += (
                    f": raises AssumptionInvalid (p = {e['trust_pvalue']:.3g});\nthe graph it"
                    " would return"
                    if e["raised"]
                    else f": returned (trust p = {e['trust_pvalue']:.3g})"
                )
            extra = [f"L{i + 1}" for i in range(adjacency.shape[0] - p)]
            panels.append((adjacency, list(names) + extra, title))
        for column, (ax, (adjacency, all_names, title)) in enumerate(zip(row, panels, strict=True)):
            ax.axis("off")
            if adjacency is None:
                ax.set_title(title, fontsize=9)
                continue
            g = to_networkx(adjacency, p, names=all_names)
            if name == "holzinger_swineford":
                truth = load_holzinger_swineford().clusters
                colors = [ability[int(truth[i])] if i < p else "#f4a582" for i in range(len(g))]
                pos = layered_layout(g)
                if column == 0:  # each ability above its three tests
                    pos = {
                        v: (i, 0.0) if i < p else (3 * (i - p) + 1, 1.0) for i, v in enumerate(g)
                    }
                heading = "Holzinger-Swineford (visual blue, textual green, speed pink)"
            else:
                colors = ["#92c5de" if i < p else "#f4a582" for i in range(len(g))]
                circle = nx.circular_layout(names)
                pos = {
                    v: circle[v] if v in circle else 0.3 * np.array([np.cos(k), np.sin(k)])
                    for k, v in enumerate(all_names)
                }
                heading = (
                    f"your data ({Path(cfg.own.path).name})"
                    if name == OWN
                    else f"Sachs ({cfg.real.sachs_rows} rows, log)"
                )
            nx.draw_networkx(
                g, pos, ax=ax, node_color=colors, node_size=600, font_size=7, arrowsize=11
            )
            ax.set_title(f"{heading}\n{title}", fontsize=9)
    fig.suptitle(f"ETCD on real data, seed {cfg.plot_seed}; latent variables in orange")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every (graph, seed), the graph drawing, and the per-method results."""
    check_names("methods", cfg.methods, METHODS)

    def one_run(name: str, seed: int, run_dir: Path) -> RunOutput:
        if name in (*REAL_SETS, OWN):
            return run_real_seed(name, seed, cfg, run_dir)
        return run_graph_seed(name, seed, cfg)[0]

    per_graph, _ = run_grid(
        cfg.graphs,
        cfg.seeds,
        out_dir,
        one_run,
        progress=cfg.runtime.progress,
        logger=MetricsLogger(Path(out_dir) / "metrics.jsonl"),
    )
    results = by_setting(per_graph)
    if "case4" in cfg.graphs:
        draw_graphs(cfg, Path(out_dir) / "graphs.png")
    if {*REAL_SETS, OWN} & set(cfg.graphs):
        draw_real(cfg, Path(out_dir), Path(out_dir) / REAL_PLOT)
    return results


if __name__ == "__main__":
    main("etcd")
