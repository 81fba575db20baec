"""Tests of papers/adamcb/optimizers.py: brief `adamcb.md` Sec. 7 item 6 (and Sec. 3.1 step 4)."""

from __future__ import annotations

import io
import math

import pytest
import torch

from papers.adamcb.optimizers import VARIANTS, AdamFamily

LR, BETAS, EPS = 1e-2, (0.9, 0.999), 1e-8  # defaults of these tests (official lr is 1e-3)


def _grad_sequence(steps: int, shape: tuple[int, ...] = (3, 4), seed: int = 0) -> list:
    """Random float64 gradients whose scale changes over time, so the max in v-hat is active."""
    gen = torch.Generator().manual_seed(seed)
    scales = torch.logspace(1, -1, steps, dtype=torch.float64)
    return [
        scales[i] * torch.randn(shape, generator=gen, dtype=torch.float64) for i in range(steps)
    ]


def _run(variant: str, grads: list, lam: float):
    """Optimise theta = 1 with the given gradients; return the trajectory, optimizer, theta."""
    theta = torch.nn.Parameter(torch.ones_like(grads[0]))
    opt = AdamFamily([theta], lr=LR, betas=BETAS, eps=EPS, lam=lam, variant=variant)
    trajectory = []
    for g in grads:
        theta.grad = g.clone()
        opt.step()
        trajectory.append(theta.detach().clone())
    return trajectory, opt, theta


@pytest.mark.parametrize("variant", VARIANTS)
def test_first_step_is_signed_lr(variant):
    """At t = 1 every variant moves theta by exactly -lr g / (|g| + eps), elementwise."""
    g = _grad_sequence(1)[0]
    g[0, 0] = 1e-9  # comparable to eps, so the eps term matters
    (theta1,), _, _ = _run(variant, [g], lam=1 - 1e-8)
    torch.testing.assert_close(theta1 - 1.0, -LR * g / (g.abs() + EPS), rtol=1e-12, atol=1e-17)


def test_adamx_equals_amsgrad_when_lam_is_one():
    grads = _grad_sequence(40)
    adamx, _, _ = _run("adamx", grads, lam=1.0)
    amsgrad, _, _ = _run("amsgrad", grads, lam=1.0)
    for a, b in zip(adamx, amsgrad, strict=True):
        assert torch.equal(a, b)
    # ... and they do differ once lam < 1 (so the comparison can fail).
    adamx_decay, _, _ = _run("adamx", grads, lam=0.5)
    assert not torch.equal(adamx_decay[-1], amsgrad[-1])


def test_adam_differs_from_amsgrad_when_v_shrinks():
    grads = _grad_sequence(10)  # decreasing scale: v decays below its running max
    adam, _, _ = _run("adam", grads, lam=1.0)
    amsgrad, _, _ = _run("amsgrad", grads, lam=1.0)
    assert torch.equal(adam[0], amsgrad[0]) and not torch.equal(adam[-1], amsgrad[-1])


def test_adamx_two_steps_by_hand():
    """Sec. 3.1 step 4 by hand for one scalar: lr 0.1, lam 0.5, g_1 = 1, g_2 = 0.1."""
    lr, eps = 0.1, 1e-8
    theta = torch.nn.Parameter(torch.tensor([0.0], dtype=torch.float64))
    opt = AdamFamily([theta], lr=lr, betas=(0.9, 0.999), eps=eps, lam=0.5, variant="adamx")

    theta.grad = torch.tensor([1.0], dtype=torch.float64)
    opt.step()
    # beta_{1,1} = 0.9: m = 0.1, v = v-hat = 0.001, m-hat = 1, v-hat-corr = 1.
    theta_1 = -lr * 1.0 / (1.0 + eps)
    assert theta.item() == pytest.approx(theta_1, rel=1e-13)

    theta.grad = torch.tensor([0.1], dtype=torch.float64)
    opt.step()
    # beta_{1,2} = 0.45: m = 0.45 * 0.1 + 0.55 * 0.1 = 0.1; v = 0.000999 + 0.00001 = 0.001009;
    # ratio (1 - 0.45)^2 / (1 - 0.9)^2 = 30.25, so v-hat = max(0.03025, 0.001009) = 0.03025;
    # m-hat = 0.1 / (1 - 0.45^2) = 0.1 / 0.7975; v-hat-corr = 0.03025 / (1 - 0.999^2).
    m_hat = 0.1 / 0.7975
    v_corr = 0.03025 / 0.001999
    theta_2 = theta_1 - lr / math.sqrt(2) * m_hat / (math.sqrt(v_corr) + eps)
    assert theta.item() == pytest.approx(theta_2, rel=1e-12)
    state = opt.state[theta]
    assert state["step"] == 2
    assert state["max_exp_avg_sq"].item() == pytest.approx(0.03025, rel=1e-12)


def _reference(variant: str, grads: list, lam: float) -> list:
    """Scalar-by-scalar transcription of Sec. 3.1 step 4 / Sec. 3.2 with Python floats."""
    beta1, beta2 = BETAS
    flat = [g.flatten().tolist() for g in grads]
    size = len(flat[0])
    theta, m, v, v_hat = [1.0] * size, [0.0] * size, [0.0] * size, [0.0] * size
    out = []
    for t, g in enumerate(flat, start=1):
        b1t = beta1 * lam ** (t - 1)
        b1prev = beta1 * lam ** (t - 2)
        for k in range(size):
            m[k] = b1t * m[k] + (1 - b1t) * g[k]
            v[k] = beta2 * v[k] + (1 - beta2) * g[k] ** 2
            if variant == "adam":
                vh = v[k]
            elif variant == "amsgrad":
                vh = v_hat[k] = max(v_hat[k], v[k])
            elif t == 1:
                vh = v_hat[k] = v[k]
            else:
                vh = v_hat[k] = max((1 - b1t) ** 2 / (1 - b1prev) ** 2 * v_hat[k], v[k])
            m_corr = m[k] / (1 - b1t**t)
            theta[k] -= LR / math.sqrt(t) * m_corr / (math.sqrt(vh / (1 - beta2**t)) + EPS)
        out.append(torch.tensor(theta, dtype=torch.float64).view_as(grads[0]))
    return out


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lam", [1.0, 1 - 1e-8, 0.7])
def test_matches_scalar_reference(variant, lam):
    grads = _grad_sequence(12)
    ours, _, _ = _run(variant, grads, lam=lam)
    for a, b in zip(ours, _reference(variant, grads, lam), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("variant", ["adam", "amsgrad"])
def test_lam_one_matches_torch_adam_with_lr_over_sqrt_t(variant):
    """Independent check against torch.optim.Adam, feeding it lr / sqrt(t) by hand."""
    grads = _grad_sequence(15)
    ours, _, _ = _run(variant, grads, lam=1.0)
    theta = torch.nn.Parameter(torch.ones_like(grads[0]))
    ref = torch.optim.Adam([theta], lr=LR, betas=BETAS, eps=EPS, amsgrad=variant == "amsgrad")
    for t, (g, mine) in enumerate(zip(grads, ours, strict=True), start=1):
        ref.param_groups[0]["lr"] = LR / math.sqrt(t)
        theta.grad = g.clone()
        ref.step()
        torch.testing.assert_close(theta.detach(), mine, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("variant", VARIANTS)
def test_state_dict_round_trip_resumes_identically(variant):
    grads = _grad_sequence(10, seed=3)
    lam = 0.8
    _, opt, theta = _run(variant, grads[:5], lam=lam)

    buffer = io.BytesIO()
    torch.save({"opt": opt.state_dict(), "theta": theta.detach().clone()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)

    theta_b = torch.nn.Parameter(saved["theta"].clone())
    opt_b = AdamFamily([theta_b], lr=123.0, variant=variant)  # hyper-parameters come from state
    opt_b.load_state_dict(saved["opt"])
    assert opt_b.state[theta_b]["step"] == 5
    for g in grads[5:]:
        theta.grad, theta_b.grad = g.clone(), g.clone()
        opt.step()
        opt_b.step()
        assert torch.equal(theta, theta_b)


def test_closure_and_missing_grads():
    theta = torch.nn.Parameter(torch.ones(2))
    frozen = torch.nn.Parameter(torch.ones(2))
    opt = AdamFamily([theta, frozen])

    def closure():
        opt.zero_grad()
        loss = (theta**2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == pytest.approx(2.0)
    assert torch.equal(frozen.detach(), torch.ones(2))  # no grad, no update, no state
    assert len(opt.state[frozen]) == 0
    assert torch.all(theta < 1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"variant": "sgd"},
        {"lam": 0.0},
        {"lam": 1.5},
        {"betas": (1.0, 0.999)},
        {"lr": -1.0},
        {"eps": -1.0},
    ],
)
def test_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        AdamFamily([torch.nn.Parameter(torch.ones(1))], **kwargs)
