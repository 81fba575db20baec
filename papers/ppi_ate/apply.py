"""PPI's interval of the ATE for one pair of data sets: ``python -m papers.ppi_ate.apply``.

    python -m papers.ppi_ate.apply d1=trial.csv d2=registry.csv treatment=arm outcome=y \\
        'covariates=[age,income]'

Fits once on the user's D1 (small, unconfounded: an RCT, or a study with every confounder
measured) and D2 (large, possibly confounded), with the real rung's learners
(configs/apply/ppi_ate.yaml): the D1-only AIPW interval, PPI's (brief Sec. 3.2-3.3: the CATE
model fit on D2's first half, its mean over D2's second half, rectified on D1) and the D2-only
interval for contrast, with the covariate-shift check of D1 against D2 (PPI needs P(X) shared,
Sec. 3.1). Writes ``<out>/answer.json`` (shared/apply.py).
"""

from __future__ import annotations

import numpy as np

from papers.ppi_ate.config import MIN_D2_ROWS, ApplyConfig
from papers.ppi_ate.data import Dataset, read_data_set
from papers.ppi_ate.method import shift_check
from papers.ppi_ate.train import intervals
from shared.apply import Answer, main

SLUG = "ppi_ate"
METHODS = {
    "aipw": "AIPW on D1 only",
    "ppi": "PPI (D1 + D2)",
    "d2_only": "D2 only (confounded: for contrast)",
}


def answer_for(cfg: ApplyConfig) -> Answer:
    """Read and check both files, then the three intervals and the shift check."""
    d1_columns = [*cfg.covariates, *cfg.d1_only_covariates]
    d1 = read_data_set(cfg.d1, cfg.treatment, cfg.outcome, d1_columns)
    d2 = read_data_set(cfg.d2, cfg.treatment, cfg.outcome, cfg.covariates)
    folds = cfg.learners.n_folds
    if len(d1.y) < 2 * folds:
        raise ValueError(f"{cfg.d1}: {len(d1.y)} rows; cross-fitting needs {2 * folds} at least")
    if len(d2.y) < MIN_D2_ROWS:
        raise ValueError(f"{cfg.d2}: {len(d2.y)} rows; D2's two halves need {MIN_D2_ROWS}")
    shared = np.arange(len(cfg.covariates))  # D1's first columns are the ones D2 holds
    check = shift_check(d1.x[:, shared], d2.x, cfg.shift_alpha, cfg.shift_smd)
    rng = np.random.default_rng(cfg.seed)
    # D2's halves (method.split_d2: its first and second half) must be random, whatever order
    # the file's rows come in (by date, by arm): shuffle them once, as the real rung does
    order = rng.permutation(len(d2.y))
    d2 = Dataset(d2.x[order], d2.a[order], d2.y[order])
    found = intervals(d1, d2, cfg, cfg, list(METHODS), rng, shared)
    answer = {
        method: {
            "estimate": iv.estimate,
            "low": iv.low,
            "high": iv.high,
            "half_width": iv.half_width,
        }
        for method, iv in found.items()
    }
    answer["ppi_over_aipw_half_width"] = found["ppi"].half_width / found["aipw"].half_width
    answer["shift_check"] = {"flagged": check.flagged, "max_abs_smd": check.max_abs_smd}
    answer["n_d1"], answer["n_d2"] = len(d1.y), len(d2.y)
    level = f"{1 - cfg.alpha:.0%}"
    lines = [
        f"| interval ({level}) | estimate | low | high | half-width |",
        "|---|---|---|---|---|",
    ]
    for method, iv in found.items():
        lines.append(
            f"| {METHODS[method]} | {iv.estimate:.4g} | {iv.low:.4g} | {iv.high:.4g} | "
            f"{iv.half_width:.4g} |"
        )
    lines.append(
        f"\nD1 {len(d1.y)} rows, D2 {len(d2.y)} rows; covariate shift "
        f"{'FLAGGED' if check.flagged else 'not flagged'} (max |SMD| {check.max_abs_smd:.3f})"
    )
    notes = []
    if check.flagged:
        notes.append(
            "D1's and D2's covariates differ (shift check): PPI assumes one population "
            "(Sec. 3.1), so its interval may be biased; AIPW on D1 alone does not need it"
        )
    notes.append("D2 only ignores confounding: it is shown for contrast, not as an answer")
    return Answer(answer, "\n".join(lines), {"d1": cfg.d1, "d2": cfg.d2}, notes)


if __name__ == "__main__":
    main(SLUG, ApplyConfig, answer_for)
