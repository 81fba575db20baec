"""Tests of papers/horizon_generalization/data.py: random-policy trajectories and hindsight
goal relabelling (brief Sec. 7.4: strictly later goals in the same trajectory, truncated
geometric offsets)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from papers.horizon_generalization.data import (
    offset_probabilities,
    random_trajectories,
    sample_hindsight,
)
from papers.horizon_generalization.env import make_grid


def test_random_trajectories_follow_the_table():
    grid = make_grid("wall")
    states, actions = random_trajectories(grid, 3000, 50, np.random.default_rng(0))
    assert states.shape == (3000, 51) and actions.shape == (3000, 50)
    assert np.array_equal(states[:, 1:], grid.next_state[states[:, :-1], actions])
    assert len(np.unique(states[:, 0])) == grid.n_states
    assert np.bincount(actions.ravel(), minlength=4).min() > 0.24 * actions.size
    again = random_trajectories(grid, 3000, 50, np.random.default_rng(0))
    assert np.array_equal(again[0], states) and np.array_equal(again[1], actions)


def labelled(n_trajectories: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Trajectories whose entries encode (trajectory, time), so samples can be decoded."""
    ids = np.arange(n_trajectories)[:, None] * 10_000 + np.arange(horizon + 1)
    return ids, ids[:, :-1] + 5_000


def decode(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return values // 10_000, values % 10_000


def test_goals_are_strictly_later_in_the_same_trajectory():
    states, actions = labelled(20, 12)
    s, a, g, k = sample_hindsight(states, actions, 20_000, np.random.default_rng(1))
    (n_s, t_s), (n_a, t_a), (n_g, t_g) = decode(s), decode(a - 5_000), decode(g)
    assert np.array_equal(n_s, n_g) and np.array_equal(n_s, n_a) and np.array_equal(t_s, t_a)
    assert np.array_equal(t_g - t_s, k) and (k >= 1).all() and (k <= 10).all()
    assert (t_g <= 12).all()
    # Every t < T is drawn (uniformly), t = T never.
    counts = np.bincount(t_s, minlength=13)
    assert counts[12] == 0
    assert stats.chisquare(counts[:12]).pvalue > 1e-3


@pytest.mark.parametrize("gamma", [0.9, 0.5])
def test_offsets_are_geometric_before_truncation(gamma):
    # Long trajectories and no cap: the end rarely binds, so k ~ Geom(1 - gamma).
    states, actions = labelled(4, 5_000)
    k = sample_hindsight(
        states, actions, 100_000, np.random.default_rng(2), gamma=gamma, max_offset=None
    )[3]
    top = 40 if gamma == 0.9 else 12
    observed = np.bincount(np.minimum(k, top), minlength=top + 1)[1:]
    probabilities = (1 - gamma) * gamma ** np.arange(top - 1)
    expected = np.append(probabilities, 1 - probabilities.sum()) * len(k)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_offsets_truncated_at_max_offset():
    states, actions = labelled(4, 5_000)
    k = sample_hindsight(states, actions, 100_000, np.random.default_rng(3), max_offset=10)[3]
    assert k.min() == 1 and k.max() == 10
    observed = np.bincount(k, minlength=11)[1:]
    expected = offset_probabilities(0.9, 10) * len(k)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_offsets_truncated_at_trajectory_end():
    # Short trajectories: the exact law mixes, over uniform t, geometrics truncated at
    # min(max_offset, T - t).
    horizon, cap = 12, 10
    states, actions = labelled(3, horizon)
    _, _, g, k = sample_hindsight(states, actions, 100_000, np.random.default_rng(4))
    assert (decode(g)[1] <= horizon).all()
    expected = np.zeros(cap)
    for t in range(horizon):
        limit = min(cap, horizon - t)
        expected[:limit] += offset_probabilities(0.9, limit) / horizon
    observed = np.bincount(k, minlength=cap + 1)[1:]
    assert stats.chisquare(observed, expected * len(k)).pvalue > 1e-3


def test_degenerate_gammas_and_validation():
    states, actions = labelled(2, 30)
    rng = np.random.default_rng(5)
    assert (sample_hindsight(states, actions, 1000, rng, gamma=0.0)[3] == 1).all()
    k = sample_hindsight(states, actions, 50_000, rng, gamma=1.0, max_offset=None)[3]
    assert k.min() == 1 and k.max() == 30
    with pytest.raises(ValueError):
        sample_hindsight(states, actions[:, :-1], 10, rng)
    with pytest.raises(ValueError):
        sample_hindsight(states, actions, 10, rng, gamma=1.5)
    with pytest.raises(ValueError):
        sample_hindsight(states, actions, 10, rng, max_offset=0)


def test_toy_training_pairs_are_near():
    grid = make_grid("open")
    rng = np.random.default_rng(6)
    states, actions = random_trajectories(grid, 3000, 50, rng)
    s, _, g, _ = sample_hindsight(states, actions, 20_000, rng)
    distance = grid.distances[s, g]
    assert distance.max() <= 10
    assert np.mean(distance <= 6) > 0.95
