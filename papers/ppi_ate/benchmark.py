"""Time one full PPI-ATE interval computation (papers/ppi_ate): the issue's speed target.

    python -m papers.ppi_ate.benchmark                      # n_rct = 1000, n_obs = 1e3, 1e4, 1e5
    python -m papers.ppi_ate.benchmark --n-rct 1000 --n-obs 1000 10000 100000 --repeats 3

For each n_obs: draw the brief's toy DGP (Sec. 5) with D1 an RCT of ``--n-rct`` rows and D2 an
observational data set of ``n_obs`` rows, then time ``train.intervals`` with the methods aipw,
ppi and d2_only and the toy config's learners (cubic-spline outcome regressions, 2-fold
cross-fitted D1 nuisances, a spline T-learner on D2's training half). The timed call includes
all nuisance and CATE-model fitting; drawing the data is not timed. The reported figure is the
median over ``--repeats`` of the wall time, single-threaded BLAS. Target: <= 2 s at
n_rct = 1000, n_obs = 100000.

    python -m papers.ppi_ate.benchmark --paper-scale       # seconds per interval at paper scale

``--paper-scale`` instead times ``train.intervals`` on the paper config (configs/ppi_ate/
paper.yaml): the official GP DGP of ``--setting`` (the surfaces and the data are drawn, not
timed), n = 100, N = 5000, gradient-boosting DR-learner on D2, and D1's nuisances once with
the paper's ``learners.d1_outcome`` (linear, as the official code) and once with D2's
gradient boosting (what D1 used before it had its own key). No target: it is reported.
"""

from __future__ import annotations

import os

# Single thread, set before numpy is imported (BLAS reads these once, at load time).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from papers.ppi_ate.config import Config, SettingConfig  # noqa: E402
from papers.ppi_ate.data import gp_draw, make_gp_world, toy_draw  # noqa: E402
from papers.ppi_ate.train import intervals  # noqa: E402
from shared.config import compose  # noqa: E402

TARGET_S = 2.0  # the budget for one interval computation
TARGET_N_RCT = 1000  # ... stated for n_rct = 1000
TARGET_N_OBS = 100_000  # ... and n_obs = 100000
METHODS = ["aipw", "ppi", "d2_only"]
COLUMNS = ("n_rct", "n_obs", "seconds", "<= 2 s (n_rct=1000, n_obs=100000)")
PAPER_COLUMNS = ("setting", "n", "N", "D1 outcome model", "seconds per interval")
PAPER_SETTINGS = ("no_confounding", "u_confounding", "strong_confounding")


def time_intervals(
    cfg: Config, n_rct: int, n_obs: int, d1_design: str, repeats: int, seed: int = 0
) -> float:
    """Median over ``repeats`` of the seconds one ``intervals`` call takes (after a warm-up)."""
    setting = SettingConfig(generator="closed_form", d1_design=d1_design, n_d1=n_rct, n_d2=n_obs)
    rng = np.random.default_rng(seed)
    d1, d2 = toy_draw(setting, rng)
    intervals(d1, d2, setting, cfg, METHODS, rng)  # warm-up (lazy imports, allocator)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        intervals(d1, d2, setting, cfg, METHODS, rng)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def time_paper_interval(cfg: Config, setting_name: str, repeats: int, seed: int = 0) -> float:
    """Median seconds of one ``intervals`` call on the paper config's GP setting (after a
    warm-up); drawing the GP surfaces and the data is not timed."""
    setting = cfg.settings[setting_name]
    world = make_gp_world(setting)
    rng = np.random.default_rng(seed)
    d1, d2 = gp_draw(setting, world, rng)
    intervals(d1, d2, setting, cfg, METHODS, rng)  # warm-up
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        intervals(d1, d2, setting, cfg, METHODS, rng)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def paper_rows(setting_name: str, repeats: int, seed: int) -> list[dict]:
    """Seconds per interval at paper scale, D1's nuisances as configured and as D2's."""
    rows = []
    learners = compose("ppi_ate", "paper").learners
    paper_d1 = learners.d1_outcome
    for d1_outcome in dict.fromkeys((paper_d1, learners.outcome)):  # distinct, in this order
        cfg = compose("ppi_ate", "paper", [f"learners.d1_outcome={d1_outcome}"])
        setting = cfg.settings[setting_name]
        rows.append(
            {
                "setting": setting_name,
                "n_rct": setting.n_d1,
                "n_obs": setting.n_d2,
                "d1_outcome": d1_outcome + (" (paper config)" if d1_outcome == paper_d1 else ""),
                "seconds": time_paper_interval(cfg, setting_name, repeats, seed),
                "meets_target": None,
            }
        )
    return rows


def paper_markdown(rows: list[dict]) -> str:
    """Paper-scale rows as a markdown table."""
    lines = ["| " + " | ".join(PAPER_COLUMNS) + " |", "|" + "---|" * len(PAPER_COLUMNS)]
    for r in rows:
        cells = [r["setting"], str(r["n_rct"]), str(r["n_obs"]), r["d1_outcome"]]
        lines.append("| " + " | ".join([*cells, f"{r['seconds']:.3f}"]) + " |")
    return "\n".join(lines)


def markdown(rows: list[dict]) -> str:
    """Rows as a markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        target = "—" if r["meets_target"] is None else ("yes" if r["meets_target"] else "no")
        cells = [str(r["n_rct"]), str(r["n_obs"]), f"{r['seconds']:.3f}", target]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print a markdown table and return its rows.

    Each row: ``n_rct``, ``n_obs``, ``seconds`` (median wall time of one ``intervals`` call)
    and ``meets_target`` (bool at n_rct = 1000, n_obs = 100000, else None). With
    ``--paper-scale`` the rows are the paper-scale ones, with ``setting`` and ``d1_outcome``
    added and ``meets_target`` None.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rct", type=int, default=TARGET_N_RCT, help="rows of D1 (the RCT)")
    parser.add_argument(
        "--n-obs", type=int, nargs="+", default=[1000, 10000, 100000], help="rows of D2"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed calls; median reported")
    parser.add_argument(
        "--d1-design", choices=("rct", "observational"), default="rct", help="D1's design"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--paper-scale", action="store_true", help="time the paper config's GP setting instead"
    )
    parser.add_argument(
        "--setting", choices=PAPER_SETTINGS, default="strong_confounding", help="--paper-scale's"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.paper_scale:
        rows = paper_rows(args.setting, args.repeats, args.seed)
        print(paper_markdown(rows))
        return rows
    if args.n_rct < 8 or min(args.n_obs) < 8:
        parser.error("--n-rct and --n-obs must be >= 8 (both arms in every cross-fitting fold)")

    cfg = compose("ppi_ate", "toy")  # the toy's learners: splines, 2-fold cross-fitting
    rows = []
    for n_obs in args.n_obs:
        seconds = time_intervals(cfg, args.n_rct, n_obs, args.d1_design, args.repeats, args.seed)
        at_target = args.n_rct == TARGET_N_RCT and n_obs == TARGET_N_OBS
        rows.append(
            {
                "n_rct": args.n_rct,
                "n_obs": n_obs,
                "seconds": seconds,
                "meets_target": seconds <= TARGET_S if at_target else None,
            }
        )
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
