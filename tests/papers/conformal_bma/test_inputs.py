"""Bad input to papers/conformal_bma/method.py is rejected before any computation, with a
message that names the problem (``check_inputs``, ``ModelSpec``, ``NIGPrior``)."""

from __future__ import annotations

import numpy as np
import pytest

from papers.conformal_bma.method import ModelSpec, NIGPrior, check_inputs

MODELS = [ModelSpec("lin", 1), ModelSpec("quad", 2), ModelSpec("het", 1, "abs_linear", 0.2)]
ALPHA = 0.1


def _data(n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2.0, 2.0, n)  # (n,)
    return x, 0.5 + x + 1.5 * x**2 + rng.standard_normal(n)


def test_valid_input_passes():
    x, y = _data()
    check_inputs(x, y, MODELS, ALPHA)  # 1-D x
    check_inputs(x[:, None], y, MODELS, ALPHA)  # (n, 1) x
    check_inputs(x[:3], y[:3], MODELS, ALPHA)  # exactly as many points as the quadratic's p = 3


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_x(bad):
    x, y = _data()
    x[4] = bad
    with pytest.raises(ValueError, match=r"x contains non-finite"):
        check_inputs(x, y, MODELS, ALPHA)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_y(bad):
    x, y = _data()
    y[-1] = bad
    with pytest.raises(ValueError, match=r"y contains non-finite"):
        check_inputs(x, y, MODELS, ALPHA)


def test_too_few_points_names_the_model():
    x, y = _data()
    cubic = ModelSpec("my_cubic", 3)  # 4 parameters
    check_inputs(x[:4], y[:4], [cubic], ALPHA)
    with pytest.raises(ValueError, match=r"'my_cubic' has 4 parameters but only 3 data points"):
        check_inputs(x[:3], y[:3], [MODELS[0], cubic], ALPHA)
    with pytest.raises(ValueError, match=r"'quad' has 3 parameters but only 2"):
        check_inputs(x[:2], y[:2], MODELS, ALPHA)
    # with two input columns the quadratic has 1 + 2 * 2 = 5 parameters
    x2 = np.stack([x, x**3], axis=1)  # (n, 2)
    with pytest.raises(ValueError, match=r"'quad' has 5 parameters but only 4"):
        check_inputs(x2[:4], y[:4], MODELS, ALPHA)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_unit_interval(alpha):
    x, y = _data()
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\)"):
        check_inputs(x, y, MODELS, alpha)


def test_empty_candidate_list():
    x, y = _data()
    with pytest.raises(ValueError, match=r"list of candidate models is empty"):
        check_inputs(x, y, [], ALPHA)


@pytest.mark.parametrize("n_y", [11, 13])
def test_mismatched_lengths(n_y):
    x, _ = _data(12)
    _, y = _data(n_y)
    with pytest.raises(ValueError, match=r"x has 12 rows but y has shape"):
        check_inputs(x, y, MODELS, ALPHA)


def test_y_must_be_one_dimensional():
    x, y = _data()
    with pytest.raises(ValueError, match=r"y has shape \(12, 1\)"):
        check_inputs(x, y[:, None], MODELS, ALPHA)


def test_unknown_variance_profile():
    model = ModelSpec("odd", 1, variance="quadratic")
    with pytest.raises(ValueError, match=r"unknown variance profile 'quadratic'"):
        model.variance_profile(np.linspace(-1.0, 1.0, 5))


@pytest.mark.parametrize(
    "kwargs", [{"g": 0.0}, {"g": -1.0}, {"a0": 0.0}, {"a0": -2.0}, {"b0": 0.0}, {"b0": -0.5}]
)
def test_nig_prior_rejects_non_positive_hyperparameters(kwargs):
    with pytest.raises(ValueError, match=r"NIG prior needs g, a0, b0 > 0"):
        NIGPrior(**kwargs)
