"""Bilevel's autograd oracles give torch.func's numbers bit for bit (toy.json depends on it)."""

from __future__ import annotations

import pytest
import torch
from torch.func import grad, jvp

from papers.qnbo.data import DTYPE, make_hyper_cleaning, make_quadratic


def problems():
    quad = make_quadratic(0, d_y=50, d_x=20, condition=100.0, target_sd=3.0, rho=0.1)
    clean = make_hyper_cleaning(0, n_train=200, n_val=100, corruption=0.5, mu=0.01)
    return {"quadratic": (quad.bilevel(), 20, 50), "hyper_cleaning": (clean.bilevel(), 200, 650)}


@pytest.mark.parametrize("name", ["quadratic", "hyper_cleaning"])
def test_oracles_match_torch_func(name):
    problem, d_x, d_y = problems()[name]
    grad_y_f = grad(problem.f, argnums=1)
    gen = torch.Generator().manual_seed(3)
    for _ in range(5):
        x, y, v = (torch.randn(d, dtype=DTYPE, generator=gen) for d in (d_x, d_y, d_y))
        check_point(problem, grad_y_f, x, y, v)


def check_point(problem, grad_y_f, x, y, v):
    assert torch.equal(problem.grad_y_f(x, y), grad_y_f(x, y))
    want_gx, want_gy = grad(problem.F, argnums=(0, 1))(x, y)
    got_gx, got_gy = problem.grad_F(x, y)
    assert torch.equal(got_gx, want_gx) and torch.equal(got_gy, want_gy)
    want_hv = jvp(lambda y_: grad_y_f(x, y_), (y,), (v,))[1]
    assert torch.equal(problem.hvp(x, y, v), want_hv)
    want_cross = grad(lambda x_: torch.dot(grad_y_f(x_, y), v))(x)
    assert torch.equal(problem.cross_jvp(x, y, v), want_cross)
