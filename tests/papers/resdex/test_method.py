"""Unit tests of papers/resdex/method.py and model.py: the brief's Sec. 7 items 1-6."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal

from papers.resdex.config import PPOConfig
from papers.resdex.data import make_objects
from papers.resdex.env import KinematicDexGrasp
from papers.resdex.method import (
    adaptive_lr,
    clipped_surrogate_loss,
    clipped_value_loss,
    compose_action,
    gae,
    gaussian_kl,
    grasp_reward,
)
from papers.resdex.model import ActorCritic, HyperPolicy
from papers.resdex.ppo import train_ppo


def _bases(k: int = 3, obs_dim: int = 12, action_dim: int = 7) -> list[ActorCritic]:
    torch.manual_seed(0)
    bases = [ActorCritic(obs_dim, action_dim, [8], 0.5, 5.0) for _ in range(k)]
    for base in bases:  # non-trivial means (the 0.01 output gain makes them tiny otherwise)
        torch.nn.init.normal_(base.actor[-1].weight)
    return bases


# ------------------------------------------------------------------ 1. composition
def test_equal_logits_and_zero_residual_average_the_bases():
    means = torch.randn(5, 3, 7) * 0.3
    action = compose_action(torch.full((5, 3), 2.7), torch.zeros(5, 7), means)
    torch.testing.assert_close(action, means.mean(dim=1))


def test_a_dominant_logit_selects_its_base():
    means = torch.randn(4, 3, 7) * 0.3
    logits = torch.tensor([[0.0, 1e4, 0.0]]).expand(4, 3)
    torch.testing.assert_close(compose_action(logits, torch.zeros(4, 7), means), means[:, 1])
    logits = torch.tensor([[0.0, math.inf, 0.0]]).expand(4, 3)  # softmax(+inf) is NaN: nan-safe?
    weights = torch.softmax(logits, -1)
    assert torch.isnan(weights).any()  # documents why a finite large logit stands for +inf


def test_clipping_happens_after_adding_the_residual():
    means = torch.full((1, 2, 7), 0.8)
    residual = torch.full((1, 7), 0.5)
    action = compose_action(torch.zeros(1, 2), residual, means)
    assert torch.equal(action, torch.ones(1, 7))  # 0.8 + 0.5 -> 1, not 0.8 + clip(0.5)
    residual = torch.full((1, 7), -0.5)
    assert torch.allclose(
        compose_action(torch.zeros(1, 2), residual, means), torch.full((1, 7), 0.3)
    )
    unclipped = compose_action(torch.zeros(1, 2), torch.full((1, 7), 0.5), means, clip=False)
    assert torch.allclose(unclipped, torch.full((1, 7), 1.3))


def test_hyper_policy_starts_near_the_plain_average():
    bases = _bases()
    hyper = HyperPolicy(bases, 76, 7, [32, 32], 0.5, 5.0)
    obs = torch.randn(6, 76)
    u = hyper.mean(obs)
    assert u.shape == (6, 3 + 7)
    assert u.abs().max() < 0.1  # actor output gain 0.01: l ~ 0, r ~ 0
    average = hyper.base_means(obs).mean(dim=1)
    assert (hyper.to_action(obs, u) - average).abs().max() < 0.1
    assert torch.allclose(hyper.policy.log_std.exp(), torch.full((10,), 0.5))  # logits too


# ------------------------------------------------------------------ 2. log-prob on u
def test_log_prob_is_on_logits_and_residual():
    hyper = HyperPolicy(_bases(), 76, 7, [16], 0.8, 5.0)
    obs = torch.randn(5, 76)
    dist = hyper.distribution(obs)
    u = dist.sample()
    assert u.shape == (5, 3 + 7)
    expected = Normal(hyper.mean(obs), torch.full((10,), 0.8)).log_prob(u).sum(-1)
    torch.testing.assert_close(dist.log_prob(u).sum(-1), expected)


# ------------------------------------------------------------------ 3. frozen bases on their slice
def test_bases_read_only_their_slice_and_stay_frozen():
    bases = _bases()
    hyper = HyperPolicy(bases, 76, 7, [16], 0.5, 5.0)
    assert not any(p.requires_grad for p in hyper.bases.parameters())
    obs = torch.randn(8, 76)
    changed = obs.clone()
    changed[:, 12:] = torch.randn(8, 64) * 10  # geometry part
    torch.testing.assert_close(hyper.base_means(obs), hyper.base_means(changed))
    changed[:, 0] += 1.0
    assert not torch.allclose(hyper.base_means(obs), hyper.base_means(changed))


def test_a_ppo_update_leaves_the_bases_unchanged(tmp_path):
    torch.set_num_threads(1)
    objects = make_objects(0, per_style=2)
    env = KinematicDexGrasp(objects.train, 8, seed=0)
    hyper = HyperPolicy(_bases(2), env.obs_dim, 7, [16], 0.5, 5.0)
    obs = torch.randn(4, env.obs_dim)
    before_means = hyper.base_means(obs).clone()
    before = {k: v.clone() for k, v in hyper.state_dict().items()}
    ppo = PPOConfig(
        num_envs=8, iterations=2, nsteps=8, minibatches=2, hidden=[16], schedule="fixed"
    )
    train_ppo(hyper, env, ppo, tmp_path, seed=0, progress=False)
    after = hyper.state_dict()
    for name, value in before.items():
        if name.startswith("bases."):
            assert torch.equal(value, after[name]), name
    assert not torch.equal(before["policy.log_std"], after["policy.log_std"])
    torch.testing.assert_close(hyper.base_means(obs), before_means)


# ------------------------------------------------------------------ 4. GAE by hand
def test_gae_on_a_hand_made_trajectory_with_a_terminal():
    gamma, lam = 0.9, 0.8
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [1.0], [1.5]])
    dones = torch.tensor([[False], [True], [False]])  # the episode ends at step 1
    last_value = torch.tensor([2.0])
    adv, ret = gae(rewards, values, dones, last_value, gamma, lam)
    d2 = 3.0 + gamma * 2.0 - 1.5
    d1 = 2.0 - 1.0  # no bootstrap through the terminal
    d0 = 1.0 + gamma * 1.0 - 0.5
    a2, a1 = d2, d1
    a0 = d0 + gamma * lam * a1
    torch.testing.assert_close(adv, torch.tensor([[a0], [a1], [a2]]))
    torch.testing.assert_close(ret, adv + values)


# ------------------------------------------------------------------ 5. clipped surrogate
def test_clipped_surrogate_has_no_gradient_beyond_the_clip():
    old = torch.zeros(1)
    log_prob = torch.log(torch.tensor([1.5])).requires_grad_()
    loss = clipped_surrogate_loss(log_prob, old, torch.tensor([2.0]), clip=0.2)
    loss.backward()
    assert log_prob.grad.abs().item() == 0.0
    assert loss.item() == pytest.approx(-1.2 * 2.0)
    inside = torch.log(torch.tensor([1.1])).requires_grad_()
    clipped_surrogate_loss(inside, old, torch.tensor([2.0]), clip=0.2).backward()
    assert inside.grad.item() == pytest.approx(-1.1 * 2.0)
    # A negative advantage with ratio 1.5 keeps the (pessimistic) unclipped term.
    neg = torch.log(torch.tensor([1.5])).requires_grad_()
    clipped_surrogate_loss(neg, old, torch.tensor([-2.0]), clip=0.2).backward()
    assert neg.grad.item() == pytest.approx(1.5 * 2.0)


def test_clipped_value_loss_takes_the_larger_error():
    values, old, returns = torch.tensor([2.0]), torch.tensor([0.0]), torch.tensor([3.0])
    # unclipped (2 - 3)^2 = 1, clipped (0.2 - 3)^2 = 7.84
    assert clipped_value_loss(values, old, returns, 0.2).item() == pytest.approx(7.84)


# ------------------------------------------------------------------ 6. KL rule
def test_adaptive_lr_rule_and_bounds():
    assert adaptive_lr(3e-4, 0.05, 0.016) == pytest.approx(3e-4 / 1.5)
    assert adaptive_lr(3e-4, 0.001, 0.016) == pytest.approx(3e-4 * 1.5)
    assert adaptive_lr(3e-4, 0.016, 0.016) == 3e-4
    assert adaptive_lr(1.2e-5, 0.05, 0.016) == 1e-5
    assert adaptive_lr(9e-3, 0.001, 0.016) == 1e-2


def test_gaussian_kl_matches_torch():
    m0, s0 = torch.randn(4, 3), torch.rand(4, 3) + 0.5
    m1, s1 = torch.randn(4, 3), torch.rand(4, 3) + 0.5
    expected = torch.distributions.kl_divergence(Normal(m0, s0), Normal(m1, s1)).sum(-1).mean()
    torch.testing.assert_close(gaussian_kl(m0, s0, m1, s1), expected)


def test_adaptive_schedule_changes_the_learning_rate(tmp_path):
    torch.set_num_threads(1)
    objects = make_objects(0, per_style=2)
    env = KinematicDexGrasp(objects.train, 8, seed=0)
    agent = ActorCritic(env.obs_dim, 7, [16], 0.5, 5.0)
    ppo = PPOConfig(num_envs=8, iterations=1, nsteps=8, minibatches=2, hidden=[16], lr=3e-4)
    train_ppo(agent, env, ppo, tmp_path, seed=0, progress=False)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert state["lr"] != 3e-4  # tiny first updates: KL < 0.008 multiplies the rate


# ------------------------------------------------------------------ paper-scale rewards
def test_grasp_reward_stages():
    z = torch.zeros(1)
    common = dict(
        d_fingers=torch.tensor([0.5]),
        d_palm=torch.tensor([0.1]),
        pose_dpos_l1=torch.tensor([0.1]),
        pose_dangle=torch.tensor([0.5]),
        pose_dq_l1=torch.tensor([1.0]),
        obj_height=torch.tensor([0.62]),
        obj_init_height=z,
        goal_distance=torch.tensor([0.2]),
        action_z=torch.tensor([1.0]),
    )
    d_pose = 0.6 * 0.1 + 0.04 * 0.5 + 0.1 * 1.0
    r_goal, r_up = 0.9 - 0.4, 0.2
    base = grasp_reward(stage="base", **common)
    one = grasp_reward(stage="residual1", **common)
    two = grasp_reward(stage="residual2", **common)
    assert one.item() == pytest.approx(r_goal + r_up - 0.5 * d_pose)
    assert base.item() == pytest.approx(one.item() - 0.5 * 0.5 - 1.0 * 0.1)
    assert two.item() == pytest.approx(r_goal)  # 0.62 < 0.630: no lift term in stage 2
    far_pose = {**common, "pose_dq_l1": torch.tensor([7.0])}
    assert grasp_reward(stage="residual2", **far_pose).item() == pytest.approx(r_goal)  # no prior
    assert grasp_reward(stage="residual1", **far_pose).item() < r_goal  # gate closed
    with pytest.raises(ValueError, match="stage"):
        grasp_reward(stage="three", **common)


def test_batched_base_means_equal_each_expert_alone_bit_for_bit():
    """HyperPolicy runs the K experts as one batched MLP; it must be the same numbers as K
    separate forward passes (the committed results depend on it)."""
    torch.manual_seed(0)
    bases = [ActorCritic(12, 7, [128, 128], 0.5, 5.0) for _ in range(4)]
    hyper = HyperPolicy(bases, 76, 7, [32], 0.5, 5.0)
    obs = torch.randn(256, 76) * 3
    separate = torch.stack([base.mean(obs) for base in bases], dim=1)
    assert torch.equal(hyper.base_means(obs), separate)
