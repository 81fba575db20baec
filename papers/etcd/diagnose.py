"""Why ETCD's real claims failed (issue 51): ``python -m papers.etcd.diagnose [--write]
[--official DIR]``.

Both real claims ("trustworthy in >= 80 % of seeds": ETCD raises ``AssumptionInvalid`` or
returns a correct graph) failed: on Holzinger-Swineford (n = 301) ETCD returned a wrong graph in
10/10 seeds, on Sachs's observational cells (n = 853) in 7/10. The issue's lead: at these sample
sizes Stage 1's independence test has no power, Stage 1 absorbs the variables as chains of
"pure children", and Stage 2, the only place the error can fire, has nothing left to test; the
claim asked more than an asymptotic guarantee gives. Three experiments settle it:

1. **Sample-size sweep** on data that satisfy every assumption of ETCD, shaped like
   Holzinger-Swineford (:func:`papers.etcd.data.indicator_graph`: three correlated latents with
   three pure indicators each; the toy's weights and u^7 noise), prepared as the real rung
   prepares its data (each variable z-scored once) and run with the real rung's settings
   (configs/etcd/real.yaml): per n, the share of seeds in which ETCD raises, returns the
   correct clusters (the real claim's criterion, cluster ARI >= ``real.correct_min``), or
   returns a wrong graph; "trustworthy" is raise-or-correct, as in the claim.
2. **Stage 1's power**: how often the type-I test (Sec. 3.2 step 2, "i -> j is a parent and its
   pure child") accepts a pair of *sibling* indicators, which it should reject, at each n of
   the sweep and on Holzinger-Swineford's own within-ability pairs.
3. **Scale controls**: the real rung without its z-scoring (the official code feeds data as
   they come) and with the z-scored data spread like the simulator's (HSIC's kernel width is
   fixed at 1, so the spread sets its effective width).
4. **The official code** (``--official DIR``: a checkout of ``XiuchuanLi/ICLR2025-ETCD``, run
   unchanged from its own folder) on the very arrays the real rung feeds ours, same seeds:
   does it raise where ours does, and is its graph ours? And on the sweep's data at its two
   ends (n = 301 and 5000).
"""

from __future__ import annotations

import os

# One BLAS thread (brief Sec. 3.4), set before numpy's first import when run as a script.
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from itertools import combinations  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from papers.etcd.claims import HS, REAL_SEEDS, REAL_TRUST_RATE, SACHS  # noqa: E402
from papers.etcd.config import Config  # noqa: E402
from papers.etcd.data import (  # noqa: E402
    indicator_graph,
    load_holzinger_swineford,
    prepare,
    sample_weights,
    simulate,
)
from papers.etcd.method import (  # noqa: E402
    HSICTest,
    adjusted_rand_index,
    etcd,
    indicator_clusters,
    performance,
    pseudo_residual,
)
from papers.etcd.train import load_real, real_graph_metrics, settings_from  # noqa: E402
from shared.config import compose  # noqa: E402
from shared.diagnosis import cpu_seconds, write_evidence  # noqa: E402

SLUG = "etcd"
COMMAND = "python -m papers.etcd.diagnose --write"


@dataclass
class SweepSettings:
    """The sample-size sweep (issue 51, item b)."""

    # Holzinger-Swineford's n, Sachs's observational rows rounded up, the toy's n, the
    # official repository's middle size (noise_5000.npy)
    sizes: tuple[int, ...] = (301, 1000, 2000, 5000)
    seeds: tuple[int, ...] = tuple(range(10))  # as many as the real rung's seeds
    n_latent: int = 3  # Holzinger-Swineford's three abilities ...
    indicators: int = 3  # ... with three tests each
    # data sets per n for Stage 1's power: a rate to about +-0.05 (binomial sd at 100)
    power_reps: int = 100
    seed_offset: int = 10_000  # the power's data sets use seeds disjoint from the sweep's
    # the official code on the sweep's ends only: it is about 7x slower than ours (README,
    # Efficiency), about 15 CPU s per seed at n = 5000
    official_sizes: tuple[int, ...] = (301, 5000)
    # the real data z-scored then multiplied by this: the spread of the simulator's indicators
    # (standard deviations about 1-4 at the toy's weights and noise scales), at which the sweep
    # is trustworthy from n = 1000
    real_spread: float = 3.0


# ------------------------------------------------------------------------------------------
# 1. The sample-size sweep
# ------------------------------------------------------------------------------------------
def indicator_truth(n_latent: int, indicators: int) -> np.ndarray:
    """The known cluster of each indicator: 0, 0, 0, 1, 1, 1, ... (one label per row)."""
    return np.repeat(np.arange(n_latent), indicators)


def simulated_indicators(n: int, seed: int, cfg: Config, sweep: SweepSettings):
    """One data set of the Holzinger-Swineford-shaped model: the weighted graph and the data
    (p, n), z-scored once as the real rung prepares its data (``real.standardize``)."""
    rng = np.random.default_rng(seed)
    d = cfg.data
    structure = indicator_graph(sweep.n_latent, sweep.indicators)
    graph = sample_weights(structure, rng, tuple(d.weight_range), d.faithfulness_min)
    X = simulate(graph, n, rng, d.noise_power, tuple(d.noise_scale_range))
    return graph, prepare(X, standardize=cfg.real.standardize)


def sweep_run(n: int, seed: int, cfg: Config, sweep: SweepSettings) -> dict[str, float]:
    """ETCD (real-rung settings) on one simulated data set: raised / correct / trustworthy as
    the real claim scores them, plus the official metrics and Stage 1's leftovers."""
    graph, X = simulated_indicators(n, seed, cfg, sweep)
    p = X.shape[0]
    result = etcd(X, settings_from(cfg, error=False), np.random.default_rng(seed))
    raised = result.min_root_pvalue < cfg.algorithm.alpha_error
    labels = indicator_clusters(result.adjacency, p)
    ari = adjusted_rand_index(indicator_truth(sweep.n_latent, sweep.indicators), labels)
    correct = ari >= cfg.real.correct_min
    latent_error, ordering, f1 = performance(graph.B, graph.n_latent, result.adjacency, p)
    return {
        "raised": float(raised),
        "correct": float(not raised and correct),
        "wrong": float(not raised and not correct),
        "trustworthy": float(raised or correct),
        "cluster_ari": ari,  # of the graph it found, raised or not
        "exact": float(latent_error == 0 and f1 == 1.0),
        "n_latent": float(result.n_latent),
        "stage2_size": float(len(result.order)),  # variables Stage 1 left to Stage 2
    }


def sample_size_sweep(cfg: Config, sweep: SweepSettings, log=print) -> dict[int, list[dict]]:
    """Every (n, seed) of the sweep: n -> the per-seed records of :func:`sweep_run`."""
    out: dict[int, list[dict]] = {}
    for n in sweep.sizes:
        out[n] = [sweep_run(n, seed, cfg, sweep) for seed in sweep.seeds]
        means = {k: np.mean([r[k] for r in out[n]]) for k in out[n][0]}
        log(
            f"  n = {n:5d}: raised {means['raised']:.2f}, correct {means['correct']:.2f}, "
            f"wrong {means['wrong']:.2f}, trustworthy {means['trustworthy']:.2f}, "
            f"ARI {means['cluster_ari']:.2f}, exact {means['exact']:.2f}, "
            f"Stage-2 size {means['stage2_size']:.1f}"
        )
    return out


# ------------------------------------------------------------------------------------------
# 2. Stage 1's power: does the type-I test reject a pair of siblings?
# ------------------------------------------------------------------------------------------
def type1_accepts(x: np.ndarray, y: np.ndarray, cfg: Config, hsic: HSICTest) -> bool:
    """Whether Stage 1's type-I test declares a parent and its pure child between two observed
    variables, in either orientation (Sec. 3.2 step 2; an observed variable is its own two
    copies, so the test is "the residual of one regressed on the other is independent of
    it"). For two siblings under one latent the right answer is "no"."""
    alpha = cfg.algorithm.alpha_type1
    return any(hsic.independent(pseudo_residual(a, b, a), a, alpha) for a, b in ((x, y), (y, x)))


def sibling_pairs(n_latent: int, indicators: int) -> list[tuple[int, int]]:
    """Every pair of indicators of one latent (rows of the data)."""
    return [
        (k * indicators + a, k * indicators + b)
        for k in range(n_latent)
        for a, b in combinations(range(indicators), 2)
    ]


def simulated_type1_acceptance(n: int, cfg: Config, sweep: SweepSettings) -> float:
    """Share of (sibling pair, data set) in which the type-I test wrongly accepts the pair, over
    every sibling pair of ``power_reps`` simulated data sets of size n (seeds disjoint from the
    sweep's). The latents differ in how Gaussian their shared component is (L3 sums the noises
    of L1, L2 and its own), so all pairs count."""
    settings = settings_from(cfg, error=False).hsic
    pairs = sibling_pairs(sweep.n_latent, sweep.indicators)
    accepted = 0
    for rep in range(sweep.power_reps):
        seed = sweep.seed_offset + rep
        _, X = simulated_indicators(n, seed, cfg, sweep)
        hsic = HSICTest(settings, np.random.default_rng(seed))
        accepted += sum(type1_accepts(X[i], X[j], cfg, hsic) for i, j in pairs)
    return accepted / (len(pairs) * sweep.power_reps)


def real_type1_acceptance(cfg: Config, seeds: list[int]) -> float:
    """Share of (within-ability pair, seed) on Holzinger-Swineford, prepared as the real rung
    prepares it, in which the type-I test wrongly accepts the pair."""
    _, X = load_real(HS, cfg)
    truth = load_holzinger_swineford().clusters
    pairs = [(i, j) for i, j in combinations(range(len(truth)), 2) if truth[i] == truth[j]]
    settings = settings_from(cfg, error=False).hsic
    accepted = 0
    for seed in seeds:
        hsic = HSICTest(settings, np.random.default_rng(seed))
        accepted += sum(type1_accepts(X[i], X[j], cfg, hsic) for i, j in pairs)
    return accepted / (len(pairs) * len(seeds))


# ------------------------------------------------------------------------------------------
# 3. The official code on the real rung's arrays
# ------------------------------------------------------------------------------------------
def import_official(folder: Path) -> tuple[type, type]:
    """The official ``Stage1`` and ``Stage2`` classes from a checkout of
    ``XiuchuanLi/ICLR2025-ETCD`` (its ``algorithm/`` and vendored ``kerpy/`` on the path).

    Its kerpy imports ``numpy.lib.index_tricks.fill_diagonal``, a module numpy 2 removed; the
    same function is registered under that name (the only change to its environment)."""
    folder = Path(folder)
    if not (folder / "algorithm" / "Stage1.py").is_file():
        raise FileNotFoundError(
            f"--official {folder}: no algorithm/Stage1.py there; check out "
            "XiuchuanLi/ICLR2025-ETCD (commit 3298ad5) into it"
        )
    if "numpy.lib.index_tricks" not in sys.modules:
        shim = types.ModuleType("numpy.lib.index_tricks")
        shim.fill_diagonal = np.fill_diagonal
        sys.modules["numpy.lib.index_tricks"] = shim
    import matplotlib

    matplotlib.use("Agg")  # kerpy imports pyplot
    sys.path[:0] = [str(folder / "algorithm"), str(folder / "kerpy")]
    from Stage1 import Stage1  # type: ignore[import-not-found]
    from Stage2 import Stage2  # type: ignore[import-not-found]

    return Stage1, Stage2


def official_run(stage1_cls: type, stage2_cls: type, X: np.ndarray, seed: int) -> dict:
    """The official driver's steps (``algorithm/main.py``) on X, seeded as it seeds:
    ``np.random.seed(seed)``, Stage 1, then Stage 2 twice from the same random state, with
    ``error=True`` (does it raise?) and ``error=False`` (the graph it would return; the two
    runs take identical steps until the first raises), merged as its ``integrate`` merges."""
    # the official code draws from numpy's global generator; seeding it is its protocol
    np.random.seed(seed)  # noqa: NPY002
    first = stage1_cls(X)
    children = first.run()
    state = np.random.get_state()  # noqa: NPY002
    try:
        stage2_cls(list(first.Vc), first.V, first.Vc2V, first.pointer, error=True).run()
        raised = False
    except ValueError:  # the official "Assumption might be invalid"
        raised = True
    np.random.set_state(state)  # noqa: NPY002
    adjacency = stage2_cls(list(first.Vc), first.V, first.Vc2V, first.pointer, error=False).run()
    for parent, kids in children.items():
        for child in kids:
            adjacency[child, parent] = 1.0
    return {"raised": raised, "adjacency": adjacency, "stage2_size": len(first.Vc)}


def ours_run(X: np.ndarray, seed: int, cfg: Config) -> dict:
    """Our ETCD on X with the real rung's settings, in the form of :func:`official_run`."""
    result = etcd(X, settings_from(cfg, error=False), np.random.default_rng(seed))
    return {
        "raised": bool(result.min_root_pvalue < cfg.algorithm.alpha_error),
        "adjacency": (result.adjacency != 0).astype(float),
        "stage2_size": len(result.order),
    }


def score(name: str, run: dict, cfg: Config) -> dict[str, float]:
    """The real rung's per-seed scoring of one run (``train.real_graph_metrics``)."""
    dataset, _ = load_real(name, cfg)
    found = real_graph_metrics(dataset, run["adjacency"], cfg)
    accuracy = found["cluster_ari"] if name == HS else found["directed_f1"]
    return {
        "raised": float(run["raised"]),
        "trustworthy": float(run["raised"] or found["correct"] == 1.0),
        "accuracy": accuracy,  # cluster ARI (HS) or directed F1 (Sachs) of its graph
        "n_latent": found["n_latent"],
        "stage2_size": float(run["stage2_size"]),
    }


def compare_official(folder: Path, cfg: Config, seeds: list[int], log=print) -> dict:
    """Ours and the official code on each real data set and seed: per-seed scores of both and
    whether they agree (same raise decision; same graph, edge for edge)."""
    stage1_cls, stage2_cls = import_official(folder)
    table: dict[str, dict] = {}
    for name in (HS, SACHS):
        _, X = load_real(name, cfg)
        rows = []
        for seed in seeds:
            ours = ours_run(X, seed, cfg)
            official = official_run(stage1_cls, stage2_cls, X, seed)
            same_graph = ours["adjacency"].shape == official["adjacency"].shape and bool(
                np.array_equal(ours["adjacency"] != 0, official["adjacency"] != 0)
            )
            rows.append(
                {
                    "seed": seed,
                    "ours": score(name, ours, cfg),
                    "official": score(name, official, cfg),
                    "same_raise": float(ours["raised"] == official["raised"]),
                    "same_graph": float(same_graph),
                }
            )
            log(f"  {name} seed {seed}: ours {rows[-1]['ours']}, official {rows[-1]['official']}")
        table[name] = rows
    return table


def official_sweep(
    folder: Path, cfg: Config, sweep: SweepSettings, sizes: tuple[int, ...], log=print
) -> dict[int, list[dict]]:
    """The official code on the sweep's data sets at ``sizes``: per seed, ours and theirs
    scored as :func:`sweep_run` scores (raised / correct / trustworthy) and their agreement."""
    stage1_cls, stage2_cls = import_official(folder)
    truth = indicator_truth(sweep.n_latent, sweep.indicators)
    out: dict[int, list[dict]] = {}
    for n in sizes:
        rows = []
        for seed in sweep.seeds:
            _, X = simulated_indicators(n, seed, cfg, sweep)
            runs = {
                "ours": ours_run(X, seed, cfg),
                "official": official_run(stage1_cls, stage2_cls, X, seed),
            }
            row: dict = {"seed": seed}
            for who, run in runs.items():
                labels = indicator_clusters(run["adjacency"], X.shape[0])
                correct = adjusted_rand_index(truth, labels) >= cfg.real.correct_min
                row[f"{who}_raised"] = float(run["raised"])
                row[f"{who}_trustworthy"] = float(run["raised"] or correct)
            a, b = runs["ours"]["adjacency"], runs["official"]["adjacency"]
            row["same_raise"] = float(runs["ours"]["raised"] == runs["official"]["raised"])
            row["same_graph"] = float(a.shape == b.shape and np.array_equal(a != 0, b != 0))
            rows.append(row)
        out[n] = rows
        rates = {key: mean_of(rows, key) for key in rows[0] if key != "seed"}
        log(f"  n = {n:5d}: " + ", ".join(f"{k} {v:.2f}" for k, v in rates.items()))
    return out


# ------------------------------------------------------------------------------------------
# The report
# ------------------------------------------------------------------------------------------
def mean_of(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


def smallest_trustworthy_n(sweep_out: dict[int, list[dict]], rate: float) -> int:
    """The smallest n of the sweep from which on every size is trustworthy in >= ``rate`` of
    the seeds (0 if none)."""
    sizes = sorted(sweep_out)
    for index, n in enumerate(sizes):
        if all(mean_of(sweep_out[m], "trustworthy") >= rate for m in sizes[index:]):
            return n
    return 0


def real_rung_rescaled(
    cfg: Config, seeds: list[int], scales: tuple[float, ...]
) -> dict[str, dict[float, dict[str, float]]]:
    """Our ETCD on each real data set, prepared as ``cfg`` prepares it, then multiplied by each
    of ``scales``: mean raised, trustworthy and accuracy over the seeds. The HSIC kernel width
    is fixed at 1 (brief Sec. 3.1), so the data's spread sets the test's effective width."""
    out: dict[str, dict[float, dict[str, float]]] = {}
    for name in (HS, SACHS):
        _, X = load_real(name, cfg)
        out[name] = {}
        for scale in scales:
            rows = [score(name, ours_run(scale * X, seed, cfg), cfg) for seed in seeds]
            keys = ("raised", "trustworthy", "accuracy")
            out[name][scale] = {key: mean_of(rows, key) for key in keys}
    return out


def overrides(standardize: bool) -> list[str]:
    return [f"real.standardize={str(standardize).lower()}"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    parser.add_argument(
        "--official",
        type=Path,
        default=None,
        help="a checkout of XiuchuanLi/ICLR2025-ETCD: also run it on the real arrays",
    )
    parser.add_argument("--seeds", type=int, default=None, help="fewer sweep seeds (a trial)")
    args = parser.parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())
    cfg = compose(SLUG, "real")  # the real rung's settings (z-scored once)
    cfg_raw = compose(SLUG, "real", overrides(False))
    sweep = SweepSettings()
    if args.seeds is not None:
        sweep = SweepSettings(seeds=tuple(range(args.seeds)))
    numbers: dict[str, float] = {}
    details: dict = {"sweep_settings": vars(sweep)}

    # 1. The sweep, z-scored as the real rung (Holzinger-Swineford's raw scores have standard
    # deviations 1.0-1.3, so z-scoring barely changes them), and at the simulator's own
    # scale (the official code's simulations: standard deviations up to about 4), because the
    # HSIC kernel width is fixed at 1 and its power depends on the data's scale.
    for prefix, config in (("sweep", cfg), ("rawsweep", cfg_raw)):
        scale = "z-scored" if config.real.standardize else "simulator's scale"
        print(f"1. sample-size sweep, {scale} ({len(sweep.seeds)} seeds per n)")
        t0 = cpu_seconds()
        sweep_out = sample_size_sweep(config, sweep)
        details[prefix] = {str(n): rows for n, rows in sweep_out.items()}
        for n, rows in sweep_out.items():
            for key in ("raised", "correct", "wrong", "trustworthy", "cluster_ari", "stage2_size"):
                numbers[f"{prefix}_{key}_n{n}"] = mean_of(rows, key)
        numbers[f"{prefix}_n_needed"] = smallest_trustworthy_n(sweep_out, REAL_TRUST_RATE)
        numbers[f"{prefix}_cpu_s"] = round(cpu_seconds() - t0, 1)

    print(f"2. Stage 1's power ({sweep.power_reps} data sets per n, z-scored)")
    t0 = cpu_seconds()
    for n in sweep.sizes:
        key = f"type1_sibling_accept_n{n}"
        numbers[key] = simulated_type1_acceptance(n, cfg, sweep)
        print(f"  n = {n:5d}: the type-I test accepts a sibling pair in {numbers[key]:.3f}")
    numbers["type1_sibling_accept_hs"] = real_type1_acceptance(cfg, REAL_SEEDS)
    print(f"  Holzinger-Swineford within-ability pairs: {numbers['type1_sibling_accept_hs']:.3f}")
    numbers["power_cpu_s"] = round(cpu_seconds() - t0, 1)

    print("3. the real rung without z-scoring (as the official code takes data), and z-scored")
    print(f"   then spread x{sweep.real_spread} (the simulator's spread)")
    t0 = cpu_seconds()
    for label, config, scale in (("raw", cfg_raw, 1.0), ("spread", cfg, sweep.real_spread)):
        for name, by_scale in real_rung_rescaled(config, REAL_SEEDS, (scale,)).items():
            for key, value in by_scale[scale].items():
                numbers[f"{label}_{name}_{key}"] = value
            print(f"  {label} {name}: {by_scale[scale]}")
    numbers["rescaled_cpu_s"] = round(cpu_seconds() - t0, 1)

    if args.official is not None:
        print(f"4. the official code ({args.official}) on the real rung's arrays")
        t0 = cpu_seconds()
        table = compare_official(args.official, cfg, REAL_SEEDS)
        details["official"] = table
        for name, rows in table.items():
            for who in ("ours", "official"):
                for key in ("raised", "trustworthy", "accuracy", "stage2_size"):
                    numbers[f"{name}_{who}_{key}"] = float(np.mean([r[who][key] for r in rows]))
            numbers[f"{name}_same_raise"] = mean_of(rows, "same_raise")
            numbers[f"{name}_same_graph"] = mean_of(rows, "same_graph")
        print(f"   and on the sweep's data at n = {sweep.official_sizes}")
        sim = official_sweep(args.official, cfg, sweep, sweep.official_sizes)
        details["official_sweep"] = {str(n): rows for n, rows in sim.items()}
        for n, rows in sim.items():
            for key in rows[0]:
                if key != "seed":
                    numbers[f"official_sweep_{key}_n{n}"] = mean_of(rows, key)
        numbers["official_cpu_s"] = round(cpu_seconds() - t0, 1)

    width = max(map(len, numbers))
    for key, value in numbers.items():
        print(f"{key:<{width}}  {value:.4g}")
    if args.write:
        command = COMMAND + (f" --official {args.official}" if args.official else "")
        path = write_evidence(SLUG, numbers, command, started, details)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
