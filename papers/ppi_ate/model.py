"""scikit-learn learners of the PPI-ATE experiment, built from the config by name."""

from __future__ import annotations

from sklearn.dummy import DummyClassifier
from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import SplineTransformer

from papers.ppi_ate.config import LearnerConfig


def outcome_factory(cfg: LearnerConfig, key: str = "outcome"):
    """Factory of fresh outcome regressions (one per arm and fold) of the kind named by
    ``learners.<key>``: ``outcome`` (D2's models) or ``d1_outcome`` (D1's nuisances)."""
    kind = getattr(cfg, key)
    if kind == "spline":  # the brief's toy learner: cubic splines + least squares
        return lambda: make_pipeline(
            SplineTransformer(n_knots=cfg.n_knots, degree=cfg.spline_degree), LinearRegression()
        )
    if kind == "linear":  # the official code's D1 outcome model
        return LinearRegression
    if kind == "gradient_boosting":  # the official LinearDRLearner's model_regression
        return lambda: GradientBoostingRegressor(
            n_estimators=cfg.gb_n_estimators, max_depth=cfg.gb_max_depth, random_state=0
        )
    raise ValueError(f"unknown learners.{key} {kind!r}: spline, linear, gradient_boosting")


def propensity_factory(cfg: LearnerConfig, key: str = "propensity"):
    """Factory of fresh propensity classifiers of the kind named by ``learners.<key>``:
    ``propensity`` (the DR-learner's on D2) or ``d1_propensity`` (D1's nuisance)."""
    kind = getattr(cfg, key)
    if kind == "logistic":  # the official code's D1 propensity model
        return LogisticRegression
    if kind == "gradient_boosting":  # the official LinearDRLearner's model_propensity
        return lambda: GradientBoostingClassifier(
            n_estimators=cfg.gb_n_estimators, max_depth=cfg.gb_max_depth, random_state=0
        )
    if kind == "constant":  # an RCT's design propensity, estimated by the treated share
        return lambda: DummyClassifier(strategy="prior")
    raise ValueError(f"unknown learners.{key} {kind!r}: logistic, gradient_boosting, constant")


def final_stage_factory():
    """The DR-learner's final stage: linear regression of the pseudo-outcomes on X, as in
    econml's ``LinearDRLearner`` (the official D2 learner)."""
    return LinearRegression
