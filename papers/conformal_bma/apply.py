"""CBMA's prediction set for every row of a user's test table: ``python -m
papers.conformal_bma.apply``.

    python -m papers.conformal_bma.apply train=train.csv test=new.csv target=y

Fits the candidates once on the training table (NIG regressions, configs/apply/
conformal_bma.yaml) and, for each test row, computes the full-conformal sets of CB under each
candidate and of CBMA (brief Sec. 3.1-3.3: Bayesian model averaging inside the conformal score,
with y-dependent weights), on a grid of y values: the set's ends, its size and whether it is
one interval; and the candidates' posterior model probabilities given the training table (the
weights CBMA starts from; at a candidate y it reweights them with that point added). Where
the test table holds the response, the share of rows each set covers. Writes
``<out>/answer.json`` and one row per test row to ``<out>/answer.csv`` (shared/apply.py).
"""

from __future__ import annotations

import numpy as np

from papers.conformal_bma.config import ApplyConfig
from papers.conformal_bma.data import load_csv, load_inputs
from papers.conformal_bma.method import NIGPrior, conformal_set_by_model, fit_nig
from papers.conformal_bma.train import candidate_specs, log_model_prior, y_grid
from shared.apply import Answer, main

SLUG = "conformal_bma"


def prediction_set(grid: np.ndarray, pvalues: np.ndarray, alpha: float) -> dict[str, float]:
    r"""$\{y : \pi(y) > \alpha\}$ on the grid: its ends, size (grid step x points) and whether
    it is one interval (a conformal set need not be). An empty set has NaN ends, size 0."""
    inside = pvalues > alpha
    step = float(grid[1] - grid[0])
    if not inside.any():
        return {"low": float("nan"), "high": float("nan"), "size": 0.0, "interval": True}
    index = np.flatnonzero(inside)
    return {
        "low": float(grid[index[0]]),
        "high": float(grid[index[-1]]),
        "size": float(inside.sum() * step),
        "interval": bool(index[-1] - index[0] + 1 == index.size),
    }


def answer_for(cfg: ApplyConfig) -> Answer:
    """Read and check both tables, fit the candidates, then every test row's sets."""
    table = load_csv(cfg.train, cfg.target)
    x_new, y_new = load_inputs(cfg.test, table.columns, cfg.target)
    models = candidate_specs(cfg, table)  # the candidates' columns checked against the header
    prior = NIGPrior(cfg.prior.g, cfg.prior.a0, cfg.prior.b0)
    log_prior = log_model_prior("apply", cfg)
    x, y = table.X, table.y
    mu_x, sd_x, mu_y, sd_y = np.zeros(x.shape[1]), np.ones(x.shape[1]), 0.0, 1.0
    if cfg.standardise:  # as the real rung: on the training table; answers in y's own units
        mu_x, sd_x = x.mean(axis=0), np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
        mu_y, sd_y = float(y.mean()), float(y.std())
    x_tr, y_tr, x_te = (x - mu_x) / sd_x, (y - mu_y) / sd_y, (x_new - mu_x) / sd_x
    grid = y_grid(y_tr, cfg)
    posteriors = [fit_nig(m.features(x_tr), y_tr, m.variance_profile(x_tr), prior) for m in models]
    rows, weights = [], None
    names = ["cbma", *(f"cb_{m.name}" for m in models)]
    for i, x_row in enumerate(x_te):
        # with the response known, pi(y_true) itself is scored too (the grid's last point)
        scored = grid if y_new is None else np.append(grid, (y_new[i] - mu_y) / sd_y)
        out = conformal_set_by_model(
            models,
            prior,
            x_tr,
            y_tr,
            x_row[None],
            scored,
            log_prior=log_prior,
            posteriors=posteriors,
        )
        weights = np.exp(out["frozen_log_weights"])  # p(M_k | training table): one for all rows
        pvalues = {"cbma": out["cbma_pvalues"]}
        pvalues.update({f"cb_{m.name}": out["cb_pvalues"][k] for k, m in enumerate(models)})
        row = {"row": i}
        for name in names:
            found = prediction_set(grid, pvalues[name][: grid.size], cfg.alpha)
            found["low"] = mu_y + sd_y * found["low"]  # back to y's units
            found["high"] = mu_y + sd_y * found["high"]
            found["size"] = sd_y * found["size"]
            row.update({f"{name}_{key}": value for key, value in found.items()})
            if y_new is not None:
                row[f"{name}_covers"] = bool(pvalues[name][-1] > cfg.alpha)
        rows.append(row)
    answer = {
        "level": 1 - cfg.alpha,
        "n_train": len(y),
        "n_test": len(x_new),
        "weights": {m.name: float(w) for m, w in zip(models, weights, strict=True)},
        "mean_size": {name: float(np.mean([r[f"{name}_size"] for r in rows])) for name in names},
        "rows": rows,
    }
    if y_new is not None:
        answer["coverage"] = {
            name: float(np.mean([r[f"{name}_covers"] for r in rows])) for name in names
        }
    lines = [
        f"| set ({1 - cfg.alpha:.0%}) | mean size | one interval | "
        + ("covers |" if y_new is not None else ""),
        "|---|---|---|" + ("---|" if y_new is not None else ""),
    ]
    for name in names:
        share = np.mean([r[f"{name}_interval"] for r in rows])
        line = f"| {name} | {answer['mean_size'][name]:.4g} | {share:.0%} of rows |"
        lines.append(line + (f" {answer['coverage'][name]:.3f} |" if y_new is not None else ""))
    shown = ", ".join(f"{n} {w:.3f}" for n, w in answer["weights"].items())
    lines.append(f"\nweights p(M_k | training table): {shown}")
    lines.append(f"first row: CBMA [{rows[0]['cbma_low']:.4g}, {rows[0]['cbma_high']:.4g}]")
    notes = [
        "sets are on a grid of "
        f"{cfg.grid_size} y values spanning the training response +- {cfg.grid_margin_sd} sd; "
        "a set reaching the grid's end may extend beyond it"
    ]
    files = {"train": cfg.train, "test": cfg.test}
    return Answer(answer, "\n".join(lines), files, notes, rows)


if __name__ == "__main__":
    main(SLUG, ApplyConfig, answer_for)
