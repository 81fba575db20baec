r"""Why PPI-ATE's real width claims failed (issue 51):
``python -m papers.ppi_ate.diagnose [--write] [--cases DIR] [--official DIR]``.

The first real protocol (configs/ppi_ate/real.yaml, results/real.json) kept PPI's coverage
but not its width: PPI's half-width was 1.006 x AIPW's on the e-mail experiment and 1.003 x
on the HIV experiment, against the claim's <= 0.70. The issue's lead: both outcomes are
binary and the effect's heterogeneity is a tiny share of the AIPW pseudo-outcome's variance,
so no CATE model could reach 0.70. Two experiments settle it:

1. **The bound** (:func:`width_ratio_bounds`, derived from the paper's variance formula):
   the smallest PPI/AIPW half-width ratio that the oracle CATE, and any CATE model at all,
   could reach, given the share of Var(φ) that the effect's heterogeneity explains. That
   share is estimated on each full experiment (5,593 and 2,816 randomised units, 19x and 9x
   D1) from out-of-fold CATE estimates of a linear and a gradient-boosting T-learner on the
   covariates D2 keeps (:func:`heterogeneity_share`), taking the larger variance of the two,
   noise included, so that the bound errs towards PPI.
2. **The DR-learner** (``learners.cate=dr_learner``, the official code's learner class) on
   cases whose CATE is known (:func:`dr_learner_cases`): a synthetic case, and a
   semi-synthetic one over the e-mail experiment's real covariates with a continuous,
   heterogeneous outcome and a D2 whose treatment follows the left-out covariate. Per case,
   the variance of its predictions against the true CATE's, its MSE, and (semi-synthetic)
   PPI's half-width ratio with it, with a linear T-learner and with the oracle f = τ.
   ``--cases DIR`` stores each case's arrays; ``papers/ppi_ate/official_learner.py`` (run
   with econml 0.15.1, outside this environment) fits the official learner,
   ``LinearDRLearner(model_regression=GradientBoostingRegressor(),
   model_propensity=GradientBoostingClassifier())`` (causalppi
   code/rct_data/run_utils.py:138-141), on the same arrays; ``--official DIR`` scores its
   predictions beside ours.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit

from papers.ppi_ate.claims import HIV, POLITICIANS
from papers.ppi_ate.config import Config, LearnerConfig
from papers.ppi_ate.data import load_real, rank_to_unit, real_draw
from papers.ppi_ate.method import (
    aipw_interval,
    aipw_pseudo_outcomes,
    cross_fit_nuisances,
    dr_learner,
    ppi_interval,
    t_learner,
)
from papers.ppi_ate.model import final_stage_factory, outcome_factory, propensity_factory
from shared.config import REAL_SCALE, REPO_ROOT, compose
from shared.diagnosis import cpu_seconds, write_evidence
from shared.records import read_json

SLUG = "ppi_ate"
COMMAND = "python -m papers.ppi_ate.diagnose --write"
WIDTH_CLAIM = "{}: PPI half-width <= 0.70 x AIPW"  # claims.REAL_CLAIMS' names
CLAIM_RATIO = 0.70  # the claim's threshold (claims.REAL_CLAIMS), quoted, never tuned
OFFICIAL = "econml"  # the official learner's file suffix (official_learner.py)


# ------------------------------------------------------------------------------- the bound
def width_ratio_bounds(share: float, n: float, n_eval: float) -> tuple[float, float]:
    r"""The smallest PPI/AIPW half-width ratio: with the oracle CATE, and with any CATE model.

    PPI's variance (Sec. 3.2 step 7) against AIPW's (Sec. 3.3), for a model f of the
    covariates X_s that D2 keeps, fit on D2 (independent of D1):

    $$V_{PP}(f) = \frac{\mathrm{Var}(\varphi - f)}{n} + \frac{\mathrm{Var}(f)}{N_{ev}},
    \qquad V_{AIPW} = \frac{\mathrm{Var}(\varphi)}{n}.$$

    Write $\varphi = \tau_s(X_s) + \xi$ with $\tau_s(x_s) = E[\varphi \mid X_s = x_s]$ (the
    CATE given what f can see; with correct nuisances, $E[\tau(X) \mid X_s]$) and
    $E[\xi \mid X_s] = 0$, so ξ is uncorrelated with every function of $X_s$:
    $\mathrm{Var}(\varphi) = \mathrm{Var}(\tau_s) + \mathrm{Var}(\xi)$ and
    $\mathrm{Var}(\varphi - f) = \mathrm{Var}(\xi) + \mathrm{Var}(\tau_s - f)$ (the brief's
    Sec. 3.2 derivation). With $\rho = \mathrm{Var}(\tau_s)/\mathrm{Var}(\varphi)$:

    $$\frac{V_{PP}(f)}{V_{AIPW}} = 1 - \rho + \frac{\mathrm{Var}(\tau_s - f)
    + (n/N_{ev})\,\mathrm{Var}(f)}{\mathrm{Var}(\varphi)}.$$

    * Oracle, $f = \tau_s$: $1 - \rho\,(1 - n/N_{ev})$.
    * Any f: split $f = \beta\tau_s + h$ with h uncorrelated with $\tau_s$; the numerator is
      $[(1-\beta)^2 + (n/N_{ev})\beta^2]\mathrm{Var}(\tau_s) + (1 + n/N_{ev})\mathrm{Var}(h)$,
      smallest at $h = 0$, $\beta = N_{ev}/(n + N_{ev})$: $1 - \rho\,N_{ev}/(n + N_{ev})$.
      Plain PPI has no such shrinkage, so the oracle's value is what it reaches at best; the
      second bound holds for every learner.

    Half-widths scale with the standard deviation, hence the square roots.

    Returns:
        ``(oracle_ratio, any_learner_ratio)``, the second <= the first.
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the heterogeneity share must lie in [0, 1], got {share}")
    if n <= 0 or n_eval <= 0:
        raise ValueError(f"n and N_ev must be positive, got {n}, {n_eval}")
    oracle = 1.0 - share * (1.0 - n / n_eval)
    best = 1.0 - share * n_eval / (n + n_eval)
    return float(np.sqrt(oracle)), float(np.sqrt(best))


def share_needed(ratio: float, n: float, n_eval: float) -> float:
    r"""The least ρ = Var(τ_s)/Var(φ) with which some learner reaches half-width ratio
    ``ratio``: $\rho \ge (1 - r^2)(n + N_{ev})/N_{ev}$ (:func:`width_ratio_bounds` inverted)."""
    return (1.0 - ratio**2) * (n + n_eval) / n_eval


@dataclass(frozen=True)
class Heterogeneity:
    """The full experiment's AIPW variance and one CATE learner's out-of-fold estimates."""

    var_phi: float  # Var(φ) over the experiment, D1's nuisance learners, cross-fitted
    var_cate: float  # Var(τ̂): the heterogeneity it finds, its noise included
    calibration: float  # Cov(φ, τ̂)/Var(τ̂): 1 for a calibrated τ̂, 0 for pure noise
    explained: float  # Cov(φ, τ̂)^2/Var(τ̂): the heterogeneity its best linear map explains


def heterogeneity_share(
    x: np.ndarray,
    a: np.ndarray,
    y: np.ndarray,
    shared: np.ndarray,
    cfg: Config,
    outcome: str,
    rng: np.random.Generator,
) -> Heterogeneity:
    r"""How much of Var(φ) the effect's heterogeneity over the covariates ``shared`` is.

    φ: AIPW pseudo-outcomes of every unit with D1's learners (``learners.d1_outcome``, the
    arm share), cross-fitted as in D1. τ̂: a T-learner (per-arm ``outcome`` regressions on
    ``shared``) predicted out of fold (``learners.n_folds`` folds). Var(τ̂) over-states
    Var(τ_s) whenever τ̂'s noise outweighs its bias; ``explained`` (the best linear
    predictor's share, Chernozhukov et al.'s BLP) under-states it.
    """
    learners = cfg.learners
    mu0, mu1, e = cross_fit_nuisances(
        x,
        a,
        y,
        outcome_factory(learners, "d1_outcome"),
        propensity_factory(learners, "d1_propensity"),
        None,
        learners.n_folds,
        tuple(learners.propensity_clip),
        rng,
    )
    phi = aipw_pseudo_outcomes(y, a, mu0, mu1, e)
    folds = rng.permutation(len(y)) % learners.n_folds
    make = outcome_factory(LearnerConfig(**{**vars(learners), "outcome": outcome}))
    cate = np.empty(len(y))
    for k in range(learners.n_folds):
        fit, held = folds != k, folds == k
        f = t_learner(x[fit][:, shared], a[fit], y[fit], make)
        cate[held] = f(x[held][:, shared])
    var_cate = float(np.var(cate))
    cov = float(np.mean((phi - phi.mean()) * (cate - cate.mean())))
    return Heterogeneity(float(np.var(phi)), var_cate, cov / var_cate, cov**2 / var_cate)


def bound_experiment(cfg: Config, seed: int, splits: int) -> tuple[dict, dict]:
    """Per real experiment: n, mean N_ev over ``splits`` real splits, the heterogeneity share
    of the linear and gradient-boosting T-learners, the bounds, and the measured ratio."""
    measured = {c["name"]: c["measured"] for c in read_json(REAL_RESULTS)["claims"]}
    numbers, details = {}, {}
    for name in (POLITICIANS, HIV):
        setting = cfg.settings[name]
        data = load_real(setting.real_dataset)
        exp = data.experiment
        rng = np.random.default_rng(seed)
        sizes = [len(real_draw(setting, data, rng)[1].y) for _ in range(splits)]
        n_eval = float(np.mean([size - size // 2 for size in sizes]))  # method.split_d2
        shared = np.array([j for j, c in enumerate(data.columns) if c != setting.hidden_covariate])
        by_learner = {
            outcome: heterogeneity_share(exp.x, exp.a, exp.y, shared, cfg, outcome, rng)
            for outcome in ("linear", "gradient_boosting")
        }
        var_phi = by_learner["linear"].var_phi
        share = max(h.var_cate for h in by_learner.values()) / var_phi  # errs towards PPI
        oracle, best = width_ratio_bounds(share, setting.n_d1, n_eval)
        numbers |= {
            f"{name}_n": setting.n_d1,
            f"{name}_n_eval": n_eval,
            f"{name}_var_phi": var_phi,
            f"{name}_share": share,
            f"{name}_share_needed": share_needed(CLAIM_RATIO, setting.n_d1, n_eval),
            f"{name}_oracle_ratio": oracle,
            f"{name}_bound_ratio": best,
            f"{name}_measured_ratio": measured[WIDTH_CLAIM.format(name)],
        }
        for outcome, h in by_learner.items():
            tag = f"{name}_{outcome}"
            numbers |= {
                f"{tag}_share": h.var_cate / var_phi,
                f"{tag}_explained_share": h.explained / var_phi,
                f"{tag}_calibration": h.calibration,
            }
        details[name] = {"n_d2_splits": sizes[:20], "rows": len(exp.y)}
    return numbers, details


REAL_RESULTS = REPO_ROOT / "papers" / SLUG / "results" / "real.json"


# -------------------------------------------------------------------- the DR-learner cases
@dataclass
class CaseSettings:
    """Known-CATE cases for the DR-learner (issue 51's lead, item on the 4.8x ratio)."""

    # synthetic: X ~ U[-1, 1]^p, tau = 1 + slope x_1, mu_0 = sin(2 x_2) + x_3^2,
    # e = sigmoid(x_2 + 0.5 x_4), Y = mu_A + N(0, 1)
    synthetic_features: int = 5
    synthetic_slope: float = 0.5
    # D2's training half at the real rung's e-mail size (~3,000 kept / 2)
    train_rows: int = 1500
    test_rows: int = 5000
    # semi-synthetic over the e-mail experiment's covariates (z-scored for the outcome only):
    # tau = 1 + slope z(blackpercent), mu_0 = 0.5 z(urbanpercent) + 0.5 z(medianhhincom),
    # Y = mu_A + N(0, 1); D1 = 300 units with P(A = 1) = 0.5 (the real rung's n_d1); D2 =
    # 3,000 other units, P(A = 1) = clip(sigmoid(2 u(W))), W = statessquireindex left out
    # of D2's covariates (the real rung's selection)
    d1_rows: int = 300
    d2_rows: int = 3000
    replications: int = 10  # per case; the official learner's fit is ~1 CPU s
    noise_sd: float = 1.0
    # the slope of tau on z(blackpercent): Var(tau) = 0.25 (strong) or 0.0025 (weak: the
    # effect barely varies, as in the semi-synthetic run)
    strong_slope: float = 0.5
    weak_slope: float = 0.05


SYNTHETIC, SEMI, WEAK = "synthetic", "semi_synthetic", "semi_weak"
DR_CONFIG = LearnerConfig(  # the official code's learner class (brief Sec. 3.2 step 2)
    outcome="gradient_boosting", propensity="gradient_boosting", cate="dr_learner"
)


def fit_dr_learner(x, a, y, rng, outcome_design="pooled"):
    """Our DR-learner with the official code's learners: gradient-boosting nuisances, a
    linear final stage (``learners.cate=dr_learner``); ``outcome_design="per_arm"``: as it
    was before issue 51."""
    return dr_learner(
        x,
        a,
        y,
        outcome_factory(DR_CONFIG),
        propensity_factory(DR_CONFIG),
        final_stage_factory(),
        DR_CONFIG.n_folds,
        tuple(DR_CONFIG.propensity_clip),
        rng,
        outcome_design,
    )


def synthetic_case(s: CaseSettings, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A D2 training half and test points with their true CATE (see ``CaseSettings``)."""
    x = rng.uniform(-1.0, 1.0, (s.train_rows + s.test_rows, s.synthetic_features))
    tau = 1.0 + s.synthetic_slope * x[:, 0]
    mu0 = np.sin(2.0 * x[:, 1]) + x[:, 2] ** 2
    a = (rng.uniform(size=len(x)) < expit(x[:, 1] + 0.5 * x[:, 3])).astype(int)
    y = mu0 + a * tau + s.noise_sd * rng.standard_normal(len(x))
    train, test = slice(0, s.train_rows), slice(s.train_rows, None)
    return {"x": x[train], "a": a[train], "y": y[train], "x_test": x[test], "tau_test": tau[test]}


def semi_synthetic_case(
    s: CaseSettings,
    x_all: np.ndarray,
    columns: tuple[str, ...],
    slope: float,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """D1 (an RCT) and a D2 selected on the left-out W over real covariates (``CaseSettings``);
    D2's first half trains the learners, its second half is PPI's evaluation half."""
    z = (x_all - x_all.mean(0)) / x_all.std(0)
    col = columns.index
    tau = 1.0 + slope * z[:, col("blackpercent")]
    mu0 = 0.5 * z[:, col("urbanpercent")] + 0.5 * z[:, col("medianhhincom")]
    hidden = col("statessquireindex")
    shared = np.array([j for j in range(len(columns)) if j != hidden])
    order = rng.permutation(len(x_all))
    d1, d2 = order[: s.d1_rows], order[s.d1_rows : s.d1_rows + s.d2_rows]
    a = np.zeros(len(x_all), dtype=int)
    a[d1] = rng.uniform(size=d1.size) < 0.5
    # D2's treatment follows W's rank (data.rank_to_unit), as the real rung's selection
    propensity = np.clip(expit(2.0 * rank_to_unit(x_all[d2, hidden])), 0.05, 0.95)
    a[d2] = rng.uniform(size=d2.size) < propensity
    y = mu0 + a * tau + s.noise_sd * rng.standard_normal(len(x_all))
    train, evaluate = d2[: d2.size // 2], d2[d2.size // 2 :]
    return {
        "x": x_all[np.ix_(train, shared)],
        "a": a[train],
        "y": y[train],
        "x_test": x_all[np.ix_(evaluate, shared)],
        "tau_test": tau[evaluate],
        "x_d1_shared": x_all[np.ix_(d1, shared)],
        "tau_d1": tau[d1],
        "x_d1": x_all[d1],
        "a_d1": a[d1],
        "y_d1": y[d1],
    }


def prediction_scores(pred: np.ndarray, tau: np.ndarray) -> dict[str, float]:
    """Var(prediction)/Var(τ) and the MSE against the known CATE."""
    return {
        "var_ratio": float(np.var(pred) / np.var(tau)),
        "mse": float(np.mean((pred - tau) ** 2)),
    }


def dr_learner_cases(
    s: CaseSettings, cfg: Config, seed: int, cases_dir: Path | None, official_dir: Path | None
) -> tuple[dict, dict]:
    """Our DR-learner (and the official one's saved predictions) on the known-CATE cases;
    semi-synthetic: PPI/AIPW half-width ratios per CATE model."""
    data = load_real(cfg.settings[POLITICIANS].real_dataset)
    real_learners = cfg.learners
    rng = np.random.default_rng(seed)
    slopes = {SEMI: s.strong_slope, WEAK: s.weak_slope}
    per_case: dict[str, dict[str, list]] = {SYNTHETIC: {}, SEMI: {}, WEAK: {}}
    widths: dict[str, dict[str, list[float]]] = {SEMI: {}, WEAK: {}}
    for rep in range(s.replications):
        for case in per_case:
            arrays = (
                synthetic_case(s, rng)
                if case == SYNTHETIC
                else semi_synthetic_case(s, data.experiment.x, data.columns, slopes[case], rng)
            )
            if cases_dir is not None:
                cases_dir.mkdir(parents=True, exist_ok=True)
                np.savez(cases_dir / f"{case}_{rep}.npz", **arrays)
            models = {
                "ours": fit_dr_learner(arrays["x"], arrays["a"], arrays["y"], rng),
                "ours_per_arm": fit_dr_learner(
                    arrays["x"], arrays["a"], arrays["y"], rng, "per_arm"
                ),
                "t_learner_linear": t_learner(
                    arrays["x"], arrays["a"], arrays["y"], outcome_factory(real_learners)
                ),
            }
            preds = {k: (m(arrays["x_test"]), m) for k, m in models.items()}
            if official_dir is not None:
                saved = np.load(official_dir / f"{case}_{rep}_{OFFICIAL}.npz")
                preds[OFFICIAL] = (saved["test"], saved)
            for learner, (pred, _) in preds.items():
                for key, value in prediction_scores(pred, arrays["tau_test"]).items():
                    per_case[case].setdefault(f"{learner}_{key}", []).append(value)
            if case == SYNTHETIC:
                continue
            # PPI on the semi-synthetic D1 with each CATE model and the oracle f = tau
            mu0, mu1, e = cross_fit_nuisances(
                arrays["x_d1"],
                arrays["a_d1"],
                arrays["y_d1"],
                outcome_factory(real_learners, "d1_outcome"),
                propensity_factory(real_learners, "d1_propensity"),
                None,
                real_learners.n_folds,
                tuple(real_learners.propensity_clip),
                rng,
            )
            phi = aipw_pseudo_outcomes(arrays["y_d1"], arrays["a_d1"], mu0, mu1, e)
            widths[case].setdefault("aipw", []).append(aipw_interval(phi, cfg.alpha).half_width)
            f_values = {"oracle": (arrays["tau_d1"], arrays["tau_test"])}
            for learner, (pred, model) in preds.items():
                f_values[learner] = (
                    (saved["d1"], pred)
                    if learner == OFFICIAL
                    else (model(arrays["x_d1_shared"]), pred)
                )
            for learner, (f_d1, f_eval) in f_values.items():
                hw = ppi_interval(phi, f_d1, f_eval, cfg.alpha).half_width
                widths[case].setdefault(learner, []).append(hw)
    numbers = {}
    for case, scores in per_case.items():
        numbers |= {f"{case}_{k}": float(np.mean(v)) for k, v in scores.items()}
    for case, by_learner in widths.items():
        aipw = float(np.mean(by_learner["aipw"]))
        for learner, hws in by_learner.items():
            if learner != "aipw":
                numbers[f"{case}_{learner}_ppi_ratio"] = float(np.mean(hws)) / aipw
    return numbers, {"per_replication": per_case, "half_widths": widths}


# -------------------------------------------------------------------------------- the table
def print_table(numbers: dict) -> None:
    print("Bound on PPI/AIPW half-width (claim: <= 0.70)")
    header = ("share", "needed", "oracle", "any f", "measured")
    print(f"{'experiment':12s} " + " ".join(f"{h:>8s}" for h in header))
    for name in (POLITICIANS, HIV):
        n = numbers
        print(
            f"{name:12s} {n[f'{name}_share']:8.4f} {n[f'{name}_share_needed']:8.3f} "
            f"{n[f'{name}_oracle_ratio']:8.4f} {n[f'{name}_bound_ratio']:8.4f} "
            f"{n[f'{name}_measured_ratio']:9.4f}"
        )
    print("\nKnown-CATE cases: Var(pred)/Var(tau), MSE; semi-synthetic PPI/AIPW ratio")
    for key in sorted(k for k in numbers if k.startswith((SYNTHETIC, SEMI, WEAK))):
        print(f"  {key:48s} {numbers[key]:10.4f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    parser.add_argument("--cases", type=Path, help="save the known-CATE cases' arrays here")
    parser.add_argument(
        "--official", type=Path, help="folder of official_learner.py's predictions on --cases"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--splits", type=int, default=100, help="real splits drawn to measure N_ev (no fitting)"
    )
    args = parser.parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())
    cfg = compose(SLUG, REAL_SCALE)
    numbers, details = bound_experiment(cfg, args.seed, args.splits)
    case_numbers, case_details = dr_learner_cases(
        CaseSettings(), cfg, args.seed, args.cases, args.official
    )
    numbers |= case_numbers
    details["dr_learner_cases"] = case_details
    print_table(numbers)
    if args.write:
        command = " ".join(["python -m papers.ppi_ate.diagnose", *(argv or sys.argv[1:])])
        print(f"wrote {write_evidence(SLUG, numbers, command, started, details)}")


if __name__ == "__main__":
    main()
