"""Time CB + CBMA per test point (papers/conformal_bma): the issue's speed target.

    python -m papers.conformal_bma.benchmark                           # n = 100, 1000, 10000
    python -m papers.conformal_bma.benchmark --n 1000 --grid 400 --models 3 --repeats 5

For each n: simulate setting A of the brief (x ~ U(-2, 2), y = 0.5 + x + 1.5 x^2 + N(0, 1)),
take the polynomial candidates of degree 1..``--models`` (default: linear, quadratic, cubic),
fit their NIG posteriors once, then time ``conformal_set_by_model`` (all CB p-values and the
CBMA p-values over the whole y-grid) at ``--test-points`` test inputs. The reported figure is
the median over ``--repeats`` of (wall time / test points), single-threaded BLAS. Target:
<= 50 ms per test point at n = 1000, G = 400, K = 3.
"""

from __future__ import annotations

import os

# Single thread, set before numpy is imported (BLAS reads these once, at load time).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from papers.conformal_bma.method import (  # noqa: E402
    ModelSpec,
    NIGPrior,
    check_inputs,
    conformal_set_by_model,
    fit_nig,
)

TARGET_MS = 50.0  # the budget per test point
TARGET_N = 1000  # ... stated for n = 1000 (G = 400, K = 3)
COLUMNS = ("n", "grid", "models", "ms per test point", "<= 50 ms (n=1000)")


def simulate_setting_a(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Brief Sec. 5, setting A: x ~ U(-2, 2), y = 0.5 + x + 1.5 x^2 + N(0, 1)."""
    x = rng.uniform(-2.0, 2.0, n)  # (n,)
    y = 0.5 + x + 1.5 * x**2 + rng.standard_normal(n)  # (n,)
    return x, y


def time_per_test_point(
    n: int, grid_size: int, n_models: int, repeats: int, test_points: int, seed: int = 0
) -> float:
    """Median over ``repeats`` of the seconds ``conformal_set_by_model`` takes per test point."""
    rng = np.random.default_rng(seed)
    x, y = simulate_setting_a(n, rng)
    x_test = rng.uniform(-2.0, 2.0, test_points)  # (T,)
    models = [ModelSpec(f"deg{d}", d) for d in range(1, n_models + 1)]
    prior = NIGPrior()
    check_inputs(x, y, models, 0.1)
    spread = 3.0 * y.std()
    y_grid = np.linspace(y.min() - spread, y.max() + spread, grid_size)  # (G,), brief Sec. 3.3
    x2 = x[:, None]  # (n, 1)
    posteriors = [fit_nig(m.features(x2), y, m.variance_profile(x2), prior) for m in models]

    def one_pass() -> None:
        for x_new in x_test:
            conformal_set_by_model(
                models, prior, x2, y, np.array([[x_new]]), y_grid, posteriors=posteriors
            )

    one_pass()  # warm-up (allocator, caches)
    per_point = []
    for _ in range(repeats):
        start = time.perf_counter()
        one_pass()
        per_point.append((time.perf_counter() - start) / test_points)
    return float(np.median(per_point))


def markdown(rows: list[dict]) -> str:
    """Rows as a markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        target = "—" if r["meets_target"] is None else ("yes" if r["meets_target"] else "no")
        cells = [str(r["n"]), str(r["grid"]), str(r["models"]), f"{r['ms']:.2f}", target]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print a markdown table and return its rows.

    Each row: ``n``, ``grid``, ``models``, ``ms`` (median milliseconds per test point) and
    ``meets_target`` (bool for n = 1000, else None).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--grid", type=int, default=400, help="y-grid size G")
    parser.add_argument("--models", type=int, default=3, help="candidates: degree 1..models")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes; median reported")
    parser.add_argument("--test-points", type=int, default=10, help="test inputs per pass")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.models < 1 or args.grid < 2 or args.repeats < 1 or args.test_points < 1:
        parser.error("--models, --repeats, --test-points must be >= 1 and --grid >= 2")

    rows = []
    for n in args.n:
        seconds = time_per_test_point(
            n, args.grid, args.models, args.repeats, args.test_points, args.seed
        )
        ms = 1e3 * seconds
        rows.append(
            {
                "n": n,
                "grid": args.grid,
                "models": args.models,
                "ms": ms,
                "meets_target": ms <= TARGET_MS if n == TARGET_N else None,
            }
        )
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
