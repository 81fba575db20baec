"""Unit tests of T2V-Turbo-v2's core math (brief Sec. 7), pinned against the brief's formulas
and diffusers' schedulers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from diffusers import DDIMScheduler, LCMScheduler

from papers.t2v_turbo_v2 import method as M
from papers.t2v_turbo_v2.config import MethodConfig, ScheduleConfig
from papers.t2v_turbo_v2.model import TemporalAttention


@pytest.fixture(scope="module")
def schedule():
    return M.NoiseSchedule.from_config(ScheduleConfig())


@pytest.fixture(scope="module")
def schedule64(schedule):
    return M.NoiseSchedule(schedule.alphas_cumprod.double())


@pytest.fixture(scope="module")
def grid():
    return M.SolverGrid.build(1000, 200)


# 1. schedule and grid ------------------------------------------------------------------
def test_schedule_matches_the_brief_formula_and_is_decreasing(schedule):
    betas = torch.linspace(math.sqrt(0.00085), math.sqrt(0.012), 1000, dtype=torch.float64) ** 2
    abar = torch.cumprod(1 - betas, 0)
    torch.testing.assert_close(schedule.alphas_cumprod.double(), abar, rtol=1e-5, atol=1e-7)
    assert (schedule.alphas_cumprod[1:] < schedule.alphas_cumprod[:-1]).all()


def test_solver_grid_is_tau_and_abar_prev_of_zero_is_abar0(schedule, grid):
    assert grid.timesteps.tolist() == [5 * (i + 1) - 1 for i in range(200)]
    assert grid.step_ratio == 5
    assert grid.target(torch.tensor([0])).item() == 0
    assert grid.target(torch.tensor([1, 199])).tolist() == [4, 994]
    x0, eps = torch.zeros(1, 2), torch.ones(1, 2)
    z_prev = M.ddim_step(schedule, grid, x0, eps, torch.tensor([0]))
    assert torch.allclose(z_prev, (1 - schedule.alphas_cumprod[0]).sqrt() * eps)  # abar[0], not 1


def test_grid_that_does_not_divide_is_refused():
    with pytest.raises(ValueError, match="solver_steps=300"):
        M.SolverGrid.build(1000, 300)


# 2. boundary scalings ------------------------------------------------------------------
def test_boundary_scalings(schedule):
    c_skip, c_out = M.boundary_scalings(torch.tensor([0, 4, 999]))
    assert c_skip[0] == 1 and c_out[0] == 0
    assert c_skip[2] < 1e-6
    assert c_out[1].item() == pytest.approx(40 / math.sqrt(1600.25), rel=1e-12)
    lcm = LCMScheduler(timestep_scaling=10.0)
    for t in (0, 4, 19, 500, 999):
        ref_skip, ref_out = lcm.get_scalings_for_boundary_condition_discrete(t)
        got_skip, got_out = M.boundary_scalings(torch.tensor([t]))
        assert got_skip.item() == pytest.approx(ref_skip, rel=1e-12)
        assert got_out.item() == pytest.approx(ref_out, rel=1e-12)


def test_consistency_map_is_identity_at_t0(schedule):
    z = torch.randn(3, 3, 8, 32)

    def net(z, t, ctx, timestep_cond=None):
        return torch.randn_like(z)

    out = M.consistency_map(schedule, net, z, torch.zeros(3, dtype=torch.long), None, None)
    assert torch.equal(out, z)


# 3-4. DDIM step and inversion ----------------------------------------------------------
def test_ddim_step_with_true_eps_lands_on_the_forward_noised_latent(schedule64, grid):
    z0, eps = torch.randn(4, 3, 5, dtype=torch.float64), torch.randn(4, 3, 5, dtype=torch.float64)
    n = torch.tensor([0, 1, 100, 199])
    z = schedule64.add_noise(z0, eps, grid.start(n))
    x0 = schedule64.x0_from_eps(z, eps, grid.start(n))
    expected = schedule64.add_noise(z0, eps, grid.target(n))
    torch.testing.assert_close(
        M.ddim_step(schedule64, grid, x0, eps, n), expected, rtol=0, atol=1e-12
    )


def test_ddim_step_matches_diffusers_ddim_scheduler(schedule, grid):
    ddim = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        timestep_spacing="trailing",
        set_alpha_to_one=False,
        clip_sample=False,
    )
    ddim.set_timesteps(200)
    z, eps = torch.randn(1, 3, 8), torch.randn(1, 3, 8)
    for n in (0, 57, 199):
        t = grid.start(torch.tensor([n]))
        x0 = schedule.x0_from_eps(z, eps, t)
        ours = M.ddim_step(schedule, grid, x0, eps, torch.tensor([n]))
        theirs = ddim.step(eps, int(t), z, eta=0.0).prev_sample
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_inversion_then_ddim_round_trips(schedule64, grid):
    z0 = torch.randn(2, 3, 4, dtype=torch.float64)
    e = torch.randn(2, 3, 4, dtype=torch.float64)

    def oracle(z, t, ctx, timestep_cond=None):
        return e

    n = torch.tensor([7, 7])
    z = M.ddim_invert(oracle, schedule64, grid, z0, None, n)
    for i in range(7, -1, -1):
        step = torch.full((2,), i)
        z = M.ddim_step(schedule64, grid, schedule64.x0_from_eps(z, e, grid.start(step)), e, step)
    torch.testing.assert_close(z, z0, rtol=0, atol=1e-5)


def test_batched_inversion_keeps_each_clip_after_its_own_steps(schedule64, grid):
    z0 = torch.randn(3, 2, dtype=torch.float64)

    def oracle(z, t, ctx, timestep_cond=None):
        return torch.ones_like(z) * 0.3

    batched = M.ddim_invert(oracle, schedule64, grid, z0, None, torch.tensor([0, 3, 9]))
    for i, n in enumerate((0, 3, 9)):
        single = M.ddim_invert(oracle, schedule64, grid, z0[i : i + 1], None, torch.tensor([n]))
        torch.testing.assert_close(batched[i : i + 1], single)


# 5-6. CFG and the motion-guided target ---------------------------------------------------
def _target_inputs(b=4):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(b, 3, 5, generator=g, dtype=torch.float64) for _ in range(4)]


def test_cfg_w0_is_the_conditional_step_and_equal_outputs_ignore_w(schedule64, grid):
    z, e_c, e_u, g = _target_inputs()
    n = torch.tensor([3, 60, 120, 199])
    zero = torch.zeros(4, dtype=torch.float64)
    cond_step = M.ddim_step(schedule64, grid, schedule64.x0_from_eps(z, e_c, grid.start(n)), e_c, n)
    torch.testing.assert_close(
        M.guided_teacher_target(schedule64, grid, z, n, e_c, e_u, zero, g, zero), cond_step
    )
    a = M.guided_teacher_target(schedule64, grid, z, n, e_c, e_c, zero + 2.0, g, zero)
    b = M.guided_teacher_target(schedule64, grid, z, n, e_c, e_c, zero + 11.0, g, zero)
    torch.testing.assert_close(a, b)


def test_cfg_is_lcm_convention(schedule64, grid):
    z, e_c, e_u, _ = _target_inputs()
    t = grid.start(torch.tensor([10, 10, 10, 10]))
    w = torch.full((4,), 3.0, dtype=torch.float64)
    x0_hat, eps_hat = M.cfg_lcm(schedule64, z, t, e_c, e_u, w)
    torch.testing.assert_close(eps_hat, e_c + 3 * (e_c - e_u))  # not u + w (c - u)
    torch.testing.assert_close(
        x0_hat, schedule64.x0_from_eps(z, e_c, t) * 4 - 3 * schedule64.x0_from_eps(z, e_u, t)
    )


def test_motion_scale_window_and_flag():
    n = torch.tensor([10, 24, 25, 49, 30])
    flag = torch.tensor([True, True, True, True, False])
    lam = M.motion_scale(n, flag, 0.05, 0.5, 50)
    assert lam.tolist() == pytest.approx([0, 0, 0.05, 0.05, 0])


def test_motion_guidance_shift_is_exact_and_absent_outside(schedule64, grid):
    z, e_c, e_u, g = _target_inputs()
    n = torch.tensor([50, 100, 150, 199])
    w = torch.full((4,), 2.0, dtype=torch.float64)
    base = M.guided_teacher_target(
        schedule64, grid, z, n, e_c, e_u, w, g, torch.zeros(4, dtype=torch.float64)
    )
    lam = M.motion_scale(n, torch.tensor([True, True, False, True]), 0.05, 0.5, 200).double()
    guided = M.guided_teacher_target(schedule64, grid, z, n, e_c, e_u, w, g, lam)
    abar_t = schedule64.abar(grid.start(n), z)
    abar_prev = schedule64.abar(grid.target(n), z)
    expected = -(1 - abar_prev).sqrt() * lam.reshape(-1, 1, 1) * (1 - abar_t.sqrt()).sqrt() * g
    torch.testing.assert_close(guided - base, expected, rtol=1e-9, atol=1e-12)
    assert torch.equal(guided[0], base[0]) and torch.equal(guided[2], base[2])  # n < 100; flag off
    zero = M.guided_teacher_target(schedule64, grid, z, n, e_c, e_u, w, g, lam * 0)
    assert torch.equal(zero, base)


# 7. motion energy -----------------------------------------------------------------------
def test_top1_mask_has_one_true_per_row():
    probs = torch.softmax(torch.randn(6, 8, 8), -1)
    mask = M.top_k_mask(probs, 1)
    assert (mask.sum(-1) == 1).all()
    assert torch.equal(mask.float().argmax(-1), probs.argmax(-1))


def test_energy_is_zero_on_the_reference_and_positive_elsewhere():
    ref = [torch.softmax(torch.randn(2 * 5, 8, 8), -1) for _ in range(2)]
    assert torch.equal(M.motion_energy(ref, ref, 2), torch.zeros(2))
    other = [torch.softmax(torch.randn(2 * 5, 8, 8), -1) for _ in range(2)]
    energy = M.motion_energy(ref, other, 2)
    assert (energy > 0).all()
    # 1e4 x masked MSE, per sample
    r, o = ref[0].reshape(2, -1, 8, 8), other[0].reshape(2, -1, 8, 8)
    m = M.top_k_mask(r, 1)
    mse0 = ((r - o) ** 2)[0][m[0]].mean()
    r1, o1 = ref[1].reshape(2, -1, 8, 8), other[1].reshape(2, -1, 8, 8)
    mse1 = ((r1 - o1) ** 2)[0][M.top_k_mask(r1, 1)[0]].mean()
    assert energy[0].item() == pytest.approx(1e4 * (mse0 + mse1).item() / 2, rel=1e-5)


def test_energy_gradient_passes_gradcheck_on_one_attention_layer():
    torch.manual_seed(0)
    attn = TemporalAttention(4, heads=2, groups=2).double()
    attn.record = True
    x_ref = torch.randn(1, 4, 5, 3, dtype=torch.float64)
    attn(x_ref)
    ref = [attn.probs.detach()]

    def energy(x):
        attn(x)
        return M.motion_energy(ref, [attn.probs], 1)

    x = torch.randn(1, 4, 5, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(energy, (x,), eps=1e-6, atol=1e-4)


# 8. guidance embedding -------------------------------------------------------------------
def test_guidance_embedding_shape_zero_and_diffusers_match():
    emb = M.scalar_embedding(torch.tensor([0.0, 2.5, 7.5]), 256)
    assert emb.shape == (3, 256)
    assert torch.equal(emb[0, :128], torch.zeros(128)) and torch.equal(
        emb[0, 128:], torch.ones(128)
    )
    from diffusers import LatentConsistencyModelPipeline

    ref = LatentConsistencyModelPipeline.get_guidance_scale_embedding(
        None, torch.tensor([0.0, 2.5, 7.5]), 256
    )
    torch.testing.assert_close(emb, ref)


# 9. Huber ------------------------------------------------------------------------------
def test_pseudo_huber():
    x = torch.zeros(5)
    assert M.pseudo_huber(x, x, 0.001).item() == 0
    big = torch.tensor([3.0])
    assert M.pseudo_huber(big, torch.zeros(1), 0.001).item() == pytest.approx(3.0, abs=2e-3)
    pred = torch.linspace(-5, 5, 101, requires_grad=True)
    M.pseudo_huber(pred, torch.zeros(101), 0.001).backward()
    assert (pred.grad.abs() * 101 <= 1 + 1e-6).all()


# 10. reward routing ----------------------------------------------------------------------
def test_long_captions_only_give_zero_reward_loss_and_no_call():
    calls = []

    def reward(x, idx):
        calls.append(idx)
        return torch.ones(len(idx))

    pred = torch.randn(4, 3, 8, 32, requires_grad=True)
    out = M.reward_losses(
        pred,
        torch.zeros(4, dtype=torch.bool),
        lambda x: x,
        reward,
        reward,
        1,
        2,
        4,
        0.2,
        0.5,
        torch.Generator(),
    )
    assert not calls and out["image"].item() == 0 and out["video"].item() == 0


def test_rewards_score_short_caption_samples_on_the_right_frames():
    seen = {}

    def image_reward(frames, idx):
        seen["img"] = (frames.shape, idx.tolist())
        return frames.mean(dim=(1, 2))

    def video_reward(clips, idx):
        seen["vid"] = (clips.shape, idx.tolist())
        return clips.mean(dim=(1, 2, 3))

    pred = torch.randn(4, 3, 8, 32, requires_grad=True)
    is_short = torch.tensor([False, True, False, False])
    out = M.reward_losses(
        pred,
        is_short,
        lambda x: x,
        image_reward,
        video_reward,
        1,
        2,
        4,
        0.2,
        0.5,
        torch.Generator(),
    )
    assert seen["img"] == (torch.Size([2, 3, 32]), [1, 1])  # 2 random frames of sample 1
    assert seen["vid"] == (torch.Size([1, 3, 4, 32]), [1])  # 4 strided frames
    (out["image"] + out["video"]).backward()
    assert pred.grad[[0, 2, 3]].abs().sum() == 0 and pred.grad[1].abs().sum() > 0


# Gaussian oracle: the exact consistency map of the DDIM chain has zero CD residual ------
def test_exact_consistency_map_has_zero_cd_residual(schedule64):
    grid = M.SolverGrid.build(1000, 50)
    sigma0 = 0.7

    def oracle_eps(z, t):
        abar = schedule64.abar(t, z)
        return (1 - abar).sqrt() * z / (abar * sigma0**2 + 1 - abar)  # E[eps | z_t], Gaussian data

    def chain_to_zero(z, t):
        """Run the oracle DDIM chain from grid level t down to level 0 (f* of the grid)."""
        out = z.clone()
        for i in range(len(z)):
            zi, ti = z[i : i + 1], int(t[i])
            while ti > 0:
                n = torch.tensor([(ti + 1) // grid.step_ratio - 1])
                eps = oracle_eps(zi, n * 0 + ti)
                zi = M.ddim_step(
                    schedule64, grid, schedule64.x0_from_eps(zi, eps, n * 0 + ti), eps, n
                )
                ti = int(grid.target(n))
            out[i] = zi[0]
        return out

    def student(z, t, ctx, timestep_cond=None):
        c_skip, c_out = M.boundary_scalings(t)
        shape = (-1, *([1] * (z.dim() - 1)))
        x0 = (chain_to_zero(z, t) - c_skip.reshape(shape) * z) / c_out.reshape(shape)
        return schedule64.eps_from_x0(z, x0, t)

    n = torch.tensor([1, 10, 30, 49])
    gen = torch.Generator().manual_seed(0)
    z0 = sigma0 * torch.randn(4, 3, 6, generator=gen, dtype=torch.float64)
    z = schedule64.add_noise(
        z0, torch.randn(4, 3, 6, generator=gen, dtype=torch.float64), grid.start(n)
    )
    e = oracle_eps(z, grid.start(n))
    batch = {
        "n": n,
        "z": z,
        "e_c": e,
        "e_u": e,
        "g": torch.zeros_like(z),
        "context": None,
        "use_motion": torch.zeros(4, dtype=torch.bool),
        "is_short": torch.zeros(4, dtype=torch.bool),
    }
    cfg = SimpleNamespace(
        **{**MethodConfig().__dict__, "w_min": 0.0, "w_max": 0.0, "loss_type": "l2"}
    )
    out = M.t2v_turbo_v2_loss(student, student, schedule64, grid, batch, cfg, gen)
    assert out["cd"].item() < 1e-20

    # and a wrong map (the teacher's one-step x0) has a clearly non-zero residual
    def one_step(z, t, ctx, timestep_cond=None):
        return oracle_eps(z, t)

    assert (
        M.t2v_turbo_v2_loss(one_step, one_step, schedule64, grid, batch, cfg, gen)["cd"].item()
        > 1e-6
    )
