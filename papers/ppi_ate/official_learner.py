"""The official code's D2 learner on diagnose.py's known-CATE cases (issue 51).

``python papers/ppi_ate/official_learner.py DIR`` with econml 0.15.1 installed (the official
``requirements.txt`` pin; econml is not a dependency of this repository, so run it from a
separate environment, e.g. ``python -m venv /tmp/official-ppi_ate/venv`` and
``pip install econml==0.15.1 scikit-learn==1.5.1 numpy==1.26.4``). For every ``<case>.npz``
that ``python -m papers.ppi_ate.diagnose --cases DIR`` saved, it fits econml's
``LinearDRLearner`` with gradient-boosting nuisances, the learner of the official
``code/rct_data/run_utils.py:138-141`` (``est_2``), on the case's D2 training rows and writes
its CATE predictions at the test rows (and at D1's rows, where the case has them) to
``<case>_econml.npz``; ``diagnose --official DIR`` scores them. Standalone: it imports
nothing from this repository.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def main(folder: Path) -> None:
    from econml.dr import LinearDRLearner
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    cases = sorted(p for p in folder.glob("*.npz") if not p.stem.endswith("_econml"))
    if not cases:
        raise SystemExit(f"{folder}: no case files (run diagnose --cases {folder} first)")
    for path in cases:
        case = np.load(path)
        learner = LinearDRLearner(
            model_regression=GradientBoostingRegressor(),
            model_propensity=GradientBoostingClassifier(),
            random_state=0,  # the official code leaves it unset; fixed here to reproduce
        )
        learner.fit(case["y"], case["a"], X=case["x"])
        out = {"test": learner.effect(case["x_test"])}
        if "x_d1_shared" in case:
            out["d1"] = learner.effect(case["x_d1_shared"])
        np.savez(path.with_name(f"{path.stem}_econml.npz"), **out)
        print(f"{path.name}: done")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python papers/ppi_ate/official_learner.py DIR")
    main(Path(sys.argv[1]))
