"""Time ETCD (papers/etcd) at growing sizes: its polynomial-time claim and the speed target.

    python -m papers.etcd.benchmark                              # latents 2 3 4 6, n = 2000
    python -m papers.etcd.benchmark --latents 2 3 4 6 8 --n 2000 --seeds 2

For each number of latents m, draw ``--seeds`` random graphs that satisfy the pure-children
assumption (``data.random_pure_children_graph``: 2 pure children per latent plus random
extra variables and edges, so the number p of observed variables grows with m), simulate
n samples (u^7 noise) and time ``method.etcd`` with ``error=False``, so every run returns a
graph. Drawing the data is not timed. The table lists, per graph, p, the seconds, the
latent-count error and whether error mode would have raised (trust p-value < alpha_error);
the growth exponent is the least-squares slope of log(seconds) against log(p) over all runs.
Stage 1's FindIP and Stage 2's root search each run O(p^3) HSIC tests in the worst case, so
the exponent should be near 3 or below. Then one Case-4 run (seed 0) is timed against the
target of <= 10 s on one core (brief Sec. 3.4: about 5 s).

BLAS is single-threaded (set before numpy is imported): the thousands of small products are
about ten times slower with thread contention.
"""

from __future__ import annotations

import os

# Single thread, set before numpy is imported (BLAS reads these once, at load time).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from papers.etcd.data import (  # noqa: E402
    case4_graph,
    random_pure_children_graph,
    sample_weights,
    simulate,
)
from papers.etcd.method import ETCDResult, ETCDSettings, etcd, performance  # noqa: E402

CASE4_TARGET_S = 10.0  # one Case-4 seed at n = 2000 on one core
MIN_SIZES = 4  # distinct graph sizes needed for a meaningful growth exponent


def time_etcd(X: np.ndarray, seed: int) -> tuple[float, ETCDResult]:
    """Seconds of one ``etcd`` call (error=False) and its result."""
    start = time.perf_counter()
    result = etcd(X, ETCDSettings(error=False), np.random.default_rng(seed))
    return time.perf_counter() - start, result


def time_case4(n: int, seed: int = 0) -> tuple[float, ETCDResult, tuple[int, float, float]]:
    """Seconds of ETCD on one Case-4 data set, its result and its metrics (Sec. 3.5)."""
    rng = np.random.default_rng(seed)
    graph = sample_weights(case4_graph(), rng)
    X = simulate(graph, n, rng)
    seconds, result = time_etcd(X, seed)
    return seconds, result, performance(graph.B, graph.n_latent, result.adjacency, X.shape[0])


def growth_exponent(p: np.ndarray, seconds: np.ndarray) -> float:
    """Least-squares slope of log(seconds) on log(p)."""
    slope, _ = np.polyfit(np.log(p), np.log(seconds), 1)
    return float(slope)


def main(argv: list[str] | None = None) -> tuple[list[dict], float]:
    """Run the benchmark; print the tables; return (rows, growth exponent)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latents", type=int, nargs="+", default=[2, 3, 4, 6])
    parser.add_argument("--n", type=int, default=2000, help="samples per data set")
    parser.add_argument("--seeds", type=int, default=2, help="random graphs per size")
    parser.add_argument("--no-case4", action="store_true", help="skip the Case-4 timing")
    args = parser.parse_args(argv)
    alpha_error = ETCDSettings().alpha_error

    rows = []
    for m in args.latents:
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            graph = sample_weights(random_pure_children_graph(m, rng), rng)
            X = simulate(graph, args.n, rng)
            seconds, result = time_etcd(X, seed)
            rows.append(
                {
                    "latents": m,
                    "seed": seed,
                    "p": X.shape[0],
                    "seconds": seconds,
                    "latent_error": abs(result.n_latent - m),
                    "would_raise": result.min_root_pvalue < alpha_error,
                }
            )
    if len({r["p"] for r in rows}) < MIN_SIZES:
        print(f"warning: fewer than {MIN_SIZES} distinct sizes p; the exponent is unreliable")
    exponent = growth_exponent(
        np.array([r["p"] for r in rows], dtype=float), np.array([r["seconds"] for r in rows])
    )

    print(f"ETCD (error=False) on random pure-children graphs, n = {args.n}, one BLAS thread\n")
    print("| latents | seed | p | seconds | latent error | error mode raises |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['latents']} | {r['seed']} | {r['p']} | {r['seconds']:.2f} | "
            f"{r['latent_error']} | {'yes' if r['would_raise'] else 'no'} |"
        )
    print(f"\ngrowth exponent (slope of log seconds vs log p): {exponent:.2f}")

    if not args.no_case4:
        seconds, result, metrics = time_case4(args.n, seed=0)
        verdict = "within" if seconds <= CASE4_TARGET_S else "OVER"
        print(
            f"\nCase 4, seed 0, n = {args.n}: {seconds:.2f} s ({verdict} the "
            f"{CASE4_TARGET_S:.0f} s target); latents found {result.n_latent}; trust p = "
            f"{result.min_root_pvalue:.4f}; (latent error, ordering rate, F1) = "
            f"({metrics[0]}, {metrics[1]:.2f}, {metrics[2]:.2f})"
        )
    return rows, exponent


if __name__ == "__main__":
    main()
