"""Tests of papers/resdex/env.py (brief Sec. 7 item 7) and the k-means representatives (item 8)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from papers.resdex.data import ObjectPool, make_objects, representative_objects
from papers.resdex.env import ENV_ID, KinematicDexGrasp, KinematicDexGraspEnv, grasp_targets


@pytest.fixture(scope="module")
def objects():
    return make_objects(seed=0)


def _rollout(env: KinematicDexGrasp, policy) -> torch.Tensor:
    env.reset(seed=3)
    for _ in range(env.params.episode_steps):
        _, _, terminated, truncated, info = env.step(policy(env))
        assert not terminated.any()  # no early termination
    assert truncated.all()
    return info["success"].float()


def test_scripted_controller_always_succeeds(objects):
    for pool in (objects.train, objects.unseen):
        env = KinematicDexGrasp(pool, 96, object_mode="cycle")
        assert _rollout(env, KinematicDexGrasp.scripted_actions).mean().item() == 1.0


def test_random_policy_rarely_succeeds(objects):
    env = KinematicDexGrasp(objects.train, 512, seed=1)
    generator = torch.Generator().manual_seed(0)
    success = _rollout(env, lambda e: torch.rand(e.num_envs, 7, generator=generator) * 2 - 1)
    assert success.mean().item() < 0.05


def _one_env(style: int = 1, size: float = 1.0) -> KinematicDexGrasp:
    pool = ObjectPool(torch.tensor([style]), torch.tensor([size]), torch.zeros(1, 64))
    env = KinematicDexGrasp(pool, 1)
    env.reset(seed=0)
    env.o = torch.tensor([[0.1, -0.1, 0.0]])
    return env


def test_held_latches_only_inside_both_tolerances():
    reference = _one_env()
    q_star, d_star = reference.q_star.clone(), reference.d_star.clone()
    still = torch.zeros(1, 7)
    target = reference.o + d_star
    cases = [
        (target + torch.tensor([[0.05, 0.0, 0.0]]), q_star - 0.15, True),
        (target + torch.tensor([[0.07, 0.0, 0.0]]), q_star.clone(), False),  # too far
        (target.clone(), q_star - 0.25, False),  # synergy off
    ]
    for p, q, latched in cases:
        env = _one_env()
        env.p, env.q = p.clone(), q.clone()
        env.step(still)
        assert bool(env.held[0]) is latched


def test_released_object_stays_where_it_was_dropped():
    env = _one_env()
    env.p, env.q = env.o + env.d_star, env.q_star.clone()
    up = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    for _ in range(5):
        env.step(up)
    assert bool(env.held[0]) and env.o[0, 2].item() > 0.1
    torch.testing.assert_close(env.o, env.p - env.d_star)
    open_hand = torch.tensor([[0.0, 0.0, 0.0, -1.0, -1.0, -1.0, -1.0]])
    for _ in range(4):  # synergy error grows past 0.3: released on the next pre-step check
        env.step(open_hand)
    dropped = env.o.clone()
    assert not bool(env.held[0])
    for _ in range(3):
        env.step(up)
    torch.testing.assert_close(env.o, dropped)


def test_bad_actions_fail_with_a_message_and_leave_the_state(objects):
    env = KinematicDexGrasp(objects.train, 4)
    env.reset(seed=0)
    before = env.state_dict()
    with pytest.raises(ValueError, match="shape"):
        env.step(torch.zeros(4, 6))
    bad = torch.zeros(4, 7)
    bad[2, 3] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        env.step(bad)
    after = env.state_dict()
    for key in env.STATE_KEYS:
        assert torch.equal(before[key], after[key]), key


def test_grasp_targets_follow_the_brief():
    q_star, d_star = grasp_targets(torch.tensor([0, 3]), torch.tensor([1.4, 0.6]))
    torch.testing.assert_close(q_star[0], torch.tensor([0.9, 0.9, 0.1, 0.1]) * 0.9)
    torch.testing.assert_close(q_star[1], (torch.tensor([0.8, 0.4, 0.4, 0.8]) * 1.1).clamp(0, 1))
    torch.testing.assert_close(d_star[1], 0.6 * torch.tensor([0.06, 0.0, 0.04]))


def test_observation_layout(objects):
    env = KinematicDexGrasp(objects.train, 3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 12 + 64)
    torch.testing.assert_close(obs[:, :3], env.p)
    torch.testing.assert_close(obs[:, 7:10], env.o - env.p)
    torch.testing.assert_close(obs[:, 12:], objects.train.feature[env.object_index])


def test_single_env_passes_the_checker_and_is_registered():
    env = KinematicDexGraspEnv()
    check_env(env, skip_render_check=True)
    made = gymnasium.make(ENV_ID)
    obs, _ = made.reset(seed=0)
    assert obs.shape == (76,)
    vec = gymnasium.make_vec(ENV_ID, num_envs=5, vectorization_mode="vector_entry_point")
    obs, _ = vec.reset(seed=0)
    assert tuple(obs.shape) == (5, 76)
    with pytest.raises(ValueError, match="shape"):
        env.reset(seed=0)
        env.step(np.zeros(6, dtype=np.float32))


def test_autoreset_returns_the_final_observation(objects):
    env = KinematicDexGrasp(objects.train, 2)
    env.reset(seed=0)
    for _ in range(39):
        env.step(torch.zeros(2, 7))
    before = env.observe()
    obs, _, _, truncated, info = env.step(torch.zeros(2, 7))
    assert truncated.all() and "final_obs" in info
    torch.testing.assert_close(info["final_obs"][:, 3:7], before[:, 3:7])  # q unchanged by a=0
    assert (env.t == 0).all() and (obs[:, 3:7] == 0).all()


# ------------------------------------------------------------------ 8. k-means representatives
def test_representatives_are_training_objects_one_per_cluster(objects):
    features = objects.train.feature.numpy()
    reps = representative_objects(features, 4, seed=0)
    assert reps.shape == (4,) and len(set(reps.tolist())) == 4
    assert ((reps >= 0) & (reps < len(features))).all()
    assert sorted(objects.train.style[torch.as_tensor(reps)].tolist()) == [0, 1, 2, 3]
    assert np.array_equal(reps, representative_objects(features, 4, seed=0))


def test_representative_is_the_object_closest_to_its_centre():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 10.0]])
    points = np.concatenate([c + rng.normal(scale=0.5, size=(20, 2)) for c in centres])
    reps = representative_objects(points, 2, seed=0)
    for rep in reps:
        cluster = slice(0, 20) if rep < 20 else slice(20, 40)
        mean = points[cluster].mean(0)
        distances = ((points[cluster] - mean) ** 2).sum(1)
        assert rep == np.arange(40)[cluster][distances.argmin()]
    with pytest.raises(ValueError, match="feature matrix"):
        representative_objects(points[:1], 2, seed=0)
