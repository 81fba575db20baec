"""qNBO experiment: ``python -m papers.qnbo.train [scale=smoke|toy|paper] [key=value ...]``.

Bilevel methods keep their own outer loop (brief Sec. 3.2): every (toy, seed) runs qNBO, its
ablation without Subroutine B, AID-BIO and AmIGO-CG from the same start, records the
objective (the optimality gap on the quadratic, the validation cross-entropy on
hyper-cleaning) and wall time per outer iteration, and plots both against iterations and
against time. Wall times are curves, not metrics: they differ between identical runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from papers.qnbo.claims import LABELS
from papers.qnbo.config import TOYS, BudgetConfig, Config
from papers.qnbo.data import (
    DTYPE,
    FASHION_ASSET,
    image_splits,
    make_hyper_cleaning,
    make_quadratic,
)
from papers.qnbo.method import AIDSettings, Bilevel, QNBOSettings, State, aid_step, qnbo_step
from shared import assets, checkpoint
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.images import IMAGE_SOURCES, image_files
from shared.logger import MetricsLogger
from shared.loop import tensor_fingerprints
from shared.plotting import plt
from shared.records import Results, by_setting

METHODS = ("qnbo", "qnbo_q0", "aid_bio", "amigo_cg")
# The real rung (configs/qnbo/real.yaml): hyper-cleaning on Fashion-MNIST from Debian's
# dataset-fashion-mnist (python scripts/fetch_assets.py); checked before any work.
REAL_ASSETS = (FASHION_ASSET,)


def real_preflight(cfg: Config) -> list[str]:
    """The real rung's options (its asset is checked by the entry point, the data set's sizes
    and names by Config.validate)."""
    problems = []
    if "hyper_cleaning" not in cfg.toys:
        problems.append(f"the real rung runs the hyper_cleaning toy; toys={list(cfg.toys)}")
    return problems


def data_preflight(cfg: Config) -> list[str]:
    """Every scale: ``hyper_cleaning.source=fashion_mnist`` reads the Fashion-MNIST asset, so
    a missing or corrupt file stops the run before any toy runs (the quadratic toy would run
    first and the asset fail minutes later), naming the key that selected it."""
    h = cfg.hyper_cleaning
    if "hyper_cleaning" not in cfg.toys or h.source == "digits":  # scikit-learn's bundled set
        return []
    if h.source in IMAGE_SOURCES:  # a user's set: read and sized against n_train, n_val, n_test
        try:
            (train_x, _), (test_x, _), _ = image_splits(
                h.source, h.path, h.test_fraction, h.split_seed
            )
        except ValueError as err:
            return [f"hyper_cleaning.path: {err}"]
        problems = []
        if h.n_train + h.n_val > len(train_x):
            problems.append(
                f"hyper_cleaning.n_train={h.n_train}: + n_val ({h.n_val}) exceeds the "
                f"{len(train_x)} training images of {h.path}"
            )
        if h.n_test is not None and h.n_test > len(test_x):
            problems.append(
                f"hyper_cleaning.n_test={h.n_test}: {h.path} has {len(test_x)} test images"
            )
        return problems
    return [f"hyper_cleaning.source={h.source}: {p}" for p in assets.missing((FASHION_ASSET,))]


def real_assets(cfg: Config) -> tuple[str, ...]:
    """Fashion-MNIST's asset, unless a user's image set replaces it."""
    return () if cfg.hyper_cleaning.source in IMAGE_SOURCES else REAL_ASSETS


def user_files(cfg: Config) -> dict[str, str]:
    """A user's image files (hyper_cleaning.source idx / npz), recorded with their sha256."""
    h = cfg.hyper_cleaning
    if "hyper_cleaning" not in cfg.toys or h.source not in IMAGE_SOURCES:
        return {}
    return {f"hyper_cleaning.path ({f.name})": str(f) for f in image_files(h.source, h.path)}


def steppers(
    cfg: Config, budget: BudgetConfig, beta: float, alpha: float
) -> dict[str, Callable[[Bilevel, State], State]]:
    """One outer-iteration function per method, with matched warm starts."""
    qnbo = QNBOSettings(
        P=budget.qnbo_P,
        T=budget.qnbo_T,
        Q=budget.qnbo_Q,
        beta=beta,
        gamma=cfg.gamma,
        alpha=alpha,
        kind=cfg.kind,
        curvature=cfg.curvature,
    )
    ablation = QNBOSettings(**{**qnbo.__dict__, "Q": 0})
    aid = AIDSettings(T=budget.aid_T, N=budget.aid_N, beta=beta, alpha=alpha, solver="richardson")
    amigo = AIDSettings(T=budget.aid_T, N=budget.aid_N, beta=beta, alpha=alpha, solver="cg")
    return {
        "qnbo": lambda p, s: qnbo_step(p, s, qnbo),
        "qnbo_q0": lambda p, s: qnbo_step(p, s, ablation),
        "aid_bio": lambda p, s: aid_step(p, s, aid),
        "amigo_cg": lambda p, s: aid_step(p, s, amigo),
    }


def check_below_divergence(key: str, step: float, curvature: float) -> None:
    """Refuse a gradient step at or above 2 / lambda_max, where gradient descent on a quadratic
    with largest curvature ``curvature`` diverges (toy 1's Phi is quadratic in x, brief Sec. 5:
    lambda_max = ||A^-1 B||^2 + rho)."""
    if not 0.0 < step < 2.0 / curvature:
        raise ValueError(
            f"{key}={step:g} must lie in (0, 2/lambda_max) = (0, {2.0 / curvature:.4g}) on this "
            "problem: a larger gradient step diverges (null picks 1/lambda_max)"
        )


def optimise(
    step: Callable[[Bilevel, State], State],
    problem: Bilevel,
    state: State,
    outer_steps: int,
    objective: Callable[[State], float],
    trackers: dict[str, Callable[[State], float]] | None = None,
    progress: Callable[[], None] | None = None,
) -> tuple[list[float], list[float], State, dict[str, list[float]]]:
    """K outer iterations; the objective after each (index 0 = the start), the cumulative
    wall time of the steps alone, the final state, and each tracker's value after each step
    (evaluated outside the timed region)."""
    trackers = trackers or {}
    values, seconds, elapsed = [objective(state)], [0.0], 0.0
    tracked = {name: [fn(state)] for name, fn in trackers.items()}
    for _ in range(outer_steps):
        start = time.perf_counter()
        state = step(problem, state)
        elapsed += time.perf_counter() - start
        if not all(bool(torch.isfinite(t).all()) for t in (state.x, state.y)):
            raise FloatingPointError("a NaN or inf reached the iterate")
        values.append(objective(state))
        seconds.append(elapsed)
        for name, fn in trackers.items():
            tracked[name].append(fn(state))
        if progress is not None:
            progress()
    return values, seconds, state, tracked


def run_toy(toy: str, seed: int, cfg: Config, run_dir: Path | None = None) -> RunOutput:
    """All methods on one toy instance. With ``run_dir``, each method's final iterate is
    saved (``<method>/checkpoint.pt``) with the fingerprints of its start, so a test can tell
    that the upper- and lower-level variables were trained."""
    metrics: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    trackers: dict[str, Callable[[State], float]] = {}
    # accuracy metrics and curves, and a bar over outer steps (the real rung's long runs)
    h_track = toy == "hyper_cleaning" and cfg.hyper_cleaning.track_accuracy
    if toy == "quadratic":
        q = cfg.quadratic
        quad = make_quadratic(seed, q.d_y, q.d_x, q.condition, q.target_sd, q.rho)
        budget, phi_star = q.budget, quad.phi(quad.x_star())
        alpha = quad.upper_step() if budget.alpha is None else budget.alpha
        check_below_divergence("quadratic.budget.alpha", alpha, 1.0 / quad.upper_step())
        x0, y0 = torch.zeros(q.d_x, dtype=DTYPE), torch.zeros(q.d_y, dtype=DTYPE)
        gap0 = quad.phi(x0) - phi_star
        make_problem, beta = quad.bilevel, quad.lower_step()

        def objective(state: State) -> float:
            return quad.phi(state.x) - phi_star  # optimality gap
    elif toy == "hyper_cleaning":
        h = cfg.hyper_cleaning
        data = make_hyper_cleaning(
            seed,
            h.n_train,
            h.n_val,
            h.corruption,
            h.mu,
            source=h.source,
            n_test=h.n_test,
            path=h.path,
            test_fraction=h.test_fraction,
            split_seed=h.split_seed,
        )
        budget, beta = h.budget, data.lower_step()
        alpha = budget.alpha if budget.alpha is not None else 1.0
        if h.alpha_per_example is not None:  # alpha scaled to the O(1/n) hypergradient
            alpha = h.alpha_per_example * h.n_train
        x0 = torch.zeros(h.n_train, dtype=DTYPE)
        y0 = torch.zeros(data.a_train.shape[1] * data.n_classes, dtype=DTYPE)
        make_problem = data.bilevel
        if h.track_accuracy:  # accuracy curves against outer iterations (and time)
            trackers = {
                "val_acc": lambda state: data.validation_accuracy(state.y),
                "test_acc": lambda state: data.test_accuracy(state.y),
            }

        def objective(state: State) -> float:
            return data.validation_ce(state.y)
    else:
        raise ValueError(f"unknown toy {toy!r}; choose from {list(TOYS)}")

    runners = steppers(cfg, budget, beta, alpha)
    bar = tqdm(
        total=len(cfg.methods) * budget.outer_steps,
        desc=f"{toy} s{seed} outer steps",
        leave=False,
        disable=not (cfg.runtime.progress and h_track),
    )
    for method in cfg.methods:
        problem = make_problem()
        values, seconds, final, tracked = optimise(
            runners[method],
            problem,
            State(x0.clone(), y0.clone()),
            budget.outer_steps,
            objective,
            trackers,
            progress=bar.update if h_track else None,
        )
        curves[f"{method}.objective"], curves[f"{method}.seconds"] = values, seconds
        for name, series in tracked.items():
            curves[f"{method}.{name}"] = series
        if run_dir is not None:
            start_vars = {"x": x0, "y": y0}
            checkpoint.save_checkpoint(
                {
                    "step": budget.outer_steps,
                    "model": {"x": final.x, "y": final.y},
                    "initial_fingerprints": tensor_fingerprints(start_vars),
                },
                Path(run_dir) / method / "checkpoint.pt",
            )
        name = "gap" if toy == "quadratic" else "val_ce"
        metrics[f"{method}.{name}_at_report"] = values[budget.report_at]
        metrics[f"{method}.{name}_final"] = values[-1]
        metrics[f"{method}.skipped_pairs"] = float(final.skipped_pairs)
        metrics[f"{method}.lower_gradients"] = float(problem.counts.grad_y_f)
        metrics[f"{method}.hvps"] = float(problem.counts.hvp)
        if toy == "quadratic":
            metrics[f"{method}.rel_gap_final"] = values[-1] / gap0
        else:
            metrics[f"{method}.test_acc"] = data.test_accuracy(final.y)
            if h_track:
                metrics[f"{method}.val_acc"] = data.validation_accuracy(final.y)
                metrics[f"{method}.test_ce"] = data.test_ce(final.y)
                metrics[f"{method}.corruption_auc"] = data.corruption_auc(final.x)
    bar.close()
    return RunOutput(metrics=metrics, curves=curves)


def plot(curves: dict, cfg: Config, path: Path) -> None:
    """Objective vs outer iteration and vs wall time, mean over seeds, per toy; with
    accuracy tracking (the real rung), also test accuracy vs outer iteration."""
    tracked = any(f"{cfg.methods[0]}.test_acc" in by_key for by_key in curves.values())
    n_cols = 3 if tracked else 2
    fig, axes = plt.subplots(
        len(curves), n_cols, figsize=(5.5 * n_cols, 4.0 * len(curves)), dpi=120, squeeze=False
    )
    for row, (toy, by_key) in enumerate(curves.items()):
        ylabel = "optimality gap" if toy == "quadratic" else "validation cross-entropy"
        source = cfg.hyper_cleaning.source if toy == "hyper_cleaning" else "digits"
        data_name = "" if source == "digits" else f" ({source})"
        title = f"{toy}{data_name}, mean over seeds {list(cfg.seeds)}"
        for method in cfg.methods:
            values = np.asarray(by_key[f"{method}.objective"])  # (S, K+1)
            seconds = np.asarray(by_key[f"{method}.seconds"]).mean(axis=0)
            label = LABELS.get(f"{toy}/{method}", method).split(": ", 1)[-1]
            mean = values.mean(axis=0)
            axes[row, 0].plot(np.arange(mean.size), mean, label=label)
            axes[row, 1].plot(seconds, mean, label=label)
            if tracked and f"{method}.test_acc" in by_key:
                acc = np.asarray(by_key[f"{method}.test_acc"]).mean(axis=0)
                axes[row, 2].plot(np.arange(acc.size), acc, label=label)
        panels = [("outer iteration", ylabel), ("wall time (s)", ylabel)]
        if tracked:
            panels.append(("outer iteration", "test accuracy"))
        for col, (xlabel, y_name) in enumerate(panels):
            ax = axes[row, col]
            ax.set_yscale("log" if toy == "quadratic" else "linear")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(y_name)
            ax.set_title(title, **({"fontsize": 9} if tracked else {}))
            ax.grid(alpha=0.3)
            ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    """Every (toy, seed), the convergence plots, the per-method results and a timing table."""
    check_names("methods", cfg.methods, METHODS)
    per_toy, curves = run_grid(
        cfg.toys,
        cfg.seeds,
        out_dir,
        lambda toy, seed, run_dir: run_toy(toy, seed, cfg, run_dir),
        progress=cfg.runtime.progress,
        logger=MetricsLogger(Path(out_dir) / "metrics.jsonl"),
    )
    plot(curves, cfg, Path(out_dir) / "convergence.png")
    print("\nwall time per outer iteration (ms, mean over seeds):")
    for toy, by_key in curves.items():
        times = {
            m: 1e3 * np.mean([s[-1] / (len(s) - 1) for s in by_key[f"{m}.seconds"]])
            for m in cfg.methods
        }
        print(f"  {toy}: " + ", ".join(f"{m} {t:.2f}" for m, t in times.items()))
    return by_setting(per_toy)


if __name__ == "__main__":
    main("qnbo")
