"""Step sizes of qNBO and its baselines against the divergence bound 2 / lambda_max.

A gradient step eta on a quadratic with largest curvature lambda_max contracts only when
eta < 2 / lambda_max. The problems are the brief's (`qnbo.md` Sec. 5) as configs/qnbo/paper.yaml
sets them: toy 1 with kappa = 100 (lambda_max(A) = 100, bound 0.02) and hyper-cleaning.
"""

from __future__ import annotations

import pytest
import torch

from papers.qnbo.data import DTYPE, make_hyper_cleaning, make_quadratic
from papers.qnbo.method import AIDSettings, QNBOSettings, QNMemory
from papers.qnbo.train import run_toy
from shared.config import compose

PAPER = compose("qnbo", "paper")


def default_lower_steps() -> dict[str, float]:
    return {
        "QNMemory.fallback_step": QNMemory().fallback_step,
        "QNBOSettings.beta": QNBOSettings().beta,
        "AIDSettings.beta": AIDSettings().beta,
    }


def default_upper_steps() -> dict[str, float]:
    return {"QNBOSettings.alpha": QNBOSettings().alpha, "AIDSettings.alpha": AIDSettings().alpha}


def quadratic(seed: int):
    q = PAPER.quadratic
    return make_quadratic(seed, q.d_y, q.d_x, q.condition, q.target_sd, q.rho)


@pytest.mark.parametrize("seed", PAPER.seeds)
def test_default_steps_are_below_two_over_lambda_max_on_the_quadratic(seed):
    quad = quadratic(seed)
    lower = float(torch.linalg.eigvalsh(quad.A).max())  # 100: the paper's kappa
    M = torch.linalg.solve(quad.A, quad.B)
    upper = float(
        torch.linalg.eigvalsh(M.T @ M + quad.rho * torch.eye(M.shape[1], dtype=DTYPE)).max()
    )  # Phi is quadratic in x with this Hessian
    assert lower == pytest.approx(PAPER.quadratic.condition)
    steps = {**default_lower_steps(), "train beta = 1/lambda_max": quad.lower_step()}
    for name, step in steps.items():
        assert 0.0 < step < 2.0 / lower, f"{name}={step:g} diverges (2/lambda_max = {2 / lower})"
    alpha = PAPER.quadratic.budget.alpha
    steps = {**default_upper_steps(), "paper.yaml alpha": alpha or quad.upper_step()}
    for name, step in steps.items():
        assert 0.0 < step < 2.0 / upper, f"{name}={step:g} diverges (2/L_Phi = {2 / upper})"


@pytest.mark.parametrize("seed", PAPER.seeds)
def test_default_lower_steps_are_below_the_hyper_cleaning_bound(seed):
    """The weighted softmax lower level has Hessian (1/n) sum_i sigma(x_i) (a_i a_i^T kron
    (diag p_i - p_i p_i^T)) + mu I; with sigma <= 1 and ||diag p - p p^T|| <= 1/2 its largest
    eigenvalue is at most lambda_max(A^T A / n) / 2 + mu, for every x and w."""
    h = PAPER.hyper_cleaning
    data = make_hyper_cleaning(seed, h.n_train, h.n_val, h.corruption, h.mu)
    a = data.a_train
    bound = 0.5 * float(torch.linalg.eigvalsh(a.T @ a / a.shape[0]).max()) + h.mu
    steps = {**default_lower_steps(), "train beta = 1/L_hat": data.lower_step()}
    for name, step in steps.items():
        assert 0.0 < step < 2.0 / bound, f"{name}={step:g} diverges (2/L = {2 / bound})"


def test_an_empty_default_memory_takes_a_converging_gradient_step():
    """With no pair, C_qN is a plain gradient step of the memory's default size: on toy 1 it
    must converge to A^-1 c (the old default, 1.0, multiplied the error by up to 99 a step)."""
    quad = quadratic(0)
    memory = QNMemory()
    y = torch.zeros(quad.A.shape[0], dtype=DTYPE)
    error0 = float(torch.linalg.solve(quad.A, quad.c).norm())
    for _ in range(2000):
        y = y - memory.apply(quad.A @ y - quad.c)
    assert float((y - torch.linalg.solve(quad.A, quad.c)).norm()) < 1e-6 * error0


def test_an_upper_step_at_the_divergence_bound_is_refused():
    cfg = compose("qnbo", "smoke", ["methods=[qnbo]", "quadratic.budget.alpha=1000.0"])
    with pytest.raises(ValueError, match=r"quadratic\.budget\.alpha=1000 must lie in"):
        run_toy("quadratic", 0, cfg)
