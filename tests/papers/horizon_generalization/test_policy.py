"""Tests of the evaluation policies (issue 51): the sampled policy softmax(f / T), the
discrete form of the official stochastic evaluation, against hand-computed probabilities and
sampling frequencies, its determinism given the seed, the greedy limit, the stuck-rollout
count, and the configs that switch the real rung to it."""

from __future__ import annotations

import numpy as np
import pytest

from papers.horizon_generalization.env import make_grid
from papers.horizon_generalization.evaluate import (
    action_probabilities,
    evaluate,
    greedy_choice,
    make_policy,
    rollout,
)
from shared.config import ConfigError, compose

BINS = compose("horizon_generalization", "toy").eval.bins


def test_softmax_probabilities_on_a_hand_case():
    values = np.log([[1.0, 2.0, 3.0, 4.0]])  # softmax at T = 1: proportional to 1, 2, 3, 4
    np.testing.assert_allclose(action_probabilities(values, 1.0), [[0.1, 0.2, 0.3, 0.4]])
    # T = 2 takes the square root of the weights: 1, sqrt 2, sqrt 3, 2
    weights = np.sqrt([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(action_probabilities(values, 2.0), [weights / weights.sum()])
    # a large shift of every score (an l2 critic's negative distances) changes nothing
    np.testing.assert_allclose(action_probabilities(values - 1e4, 1.0), [[0.1, 0.2, 0.3, 0.4]])


def test_sampling_frequencies_match_the_softmax():
    values = np.log(np.tile([[1.0, 2.0, 3.0, 4.0]], (40_000, 1)))
    actions = make_policy("sampled", 1.0, np.random.default_rng(0))(values)
    frequencies = np.bincount(actions, minlength=4) / len(actions)
    # binomial standard error at 40 000 draws is at most 0.0025: 4 sigma
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.01)


def test_sampling_is_a_function_of_the_seed():
    values = np.random.default_rng(5).normal(size=(500, 4))
    first = make_policy("sampled", 1.0, np.random.default_rng(7))(values)
    again = make_policy("sampled", 1.0, np.random.default_rng(7))(values)
    other = make_policy("sampled", 1.0, np.random.default_rng(8))(values)
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()


def test_greedy_limit_and_errors():
    values = np.random.default_rng(1).normal(size=(200, 4))
    cold = make_policy("sampled", 1e-4, np.random.default_rng(0))(values)
    np.testing.assert_array_equal(cold, greedy_choice(values))
    assert make_policy("greedy", 1.0, np.random.default_rng(0)) is greedy_choice
    with pytest.raises(ValueError, match="eval.policy"):
        make_policy("boltzmann", 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="eval.temperature"):
        action_probabilities(values, 0.0)


def test_sampled_policy_escapes_a_wall_the_greedy_one_presses_against():
    grid = make_grid("open")

    def up(states, goals):  # a critic whose argmax always points into the top wall
        values = np.zeros((len(states), 4))
        values[:, 0] = 1.0
        return values

    top_left, below = grid.index[0, 0], grid.index[1, 0]
    starts, goals = np.array([top_left]), np.array([below])
    greedy, _, _ = rollout(up, grid, starts, goals, max_steps=50)
    sampled, _, _ = rollout(
        up, grid, starts, goals, 50, make_policy("sampled", 1.0, np.random.default_rng(0))
    )
    assert not greedy[0] and sampled[0]


def test_sampled_evaluation_is_reproducible_and_keeps_the_pairs():
    grid = make_grid("open")

    def noisy(states, goals):  # a fixed pseudo-random critic
        rng = np.random.default_rng(states * 1000 + goals)
        return rng.normal(size=(len(states), 4))

    first = evaluate(noisy, grid, 60, 3, 30, bins=BINS, policy="sampled")
    again = evaluate(noisy, grid, 60, 3, 30, bins=BINS, policy="sampled")
    greedy = evaluate(noisy, grid, 60, 3, 30, bins=BINS)
    assert first == again
    for name in BINS:  # the same start-goal pairs under either policy
        assert first[f"n_{name}"] == greedy[f"n_{name}"]


def test_stuck_rollouts_count_failed_rollouts_resting_in_one_tile():
    from tests.helpers import require_assets

    require_assets("point_maze")
    from papers.horizon_generalization.point_maze import make_point_maze, stuck_rollouts

    maze = make_point_maze("OPEN")
    centre = maze.cell_centre(np.array([0]))[0]
    resting = np.tile(centre, (30, 1))
    moving = resting + np.linspace(0, 2, 30)[:, None] * [1.0, 0.0]
    paths = np.stack([resting, moving, resting])  # (3, 30, 2)
    success = np.array([False, False, True])
    np.testing.assert_array_equal(stuck_rollouts(maze, success, paths, 20), [True, False, False])


def test_real_config_is_the_official_protocol_and_the_open_arena():
    cfg = compose("horizon_generalization", "real")
    assert cfg.eval.policy == "sampled" and cfg.eval.temperature == 1.0
    assert cfg.eval.compare_greedy
    assert cfg.active_layouts == ["medium", "arena"]
    arena = cfg.layouts["arena"]
    assert arena.maze == "OPEN" and arena.bins["far"][0] == 4
    assert compose("horizon_generalization", "toy").eval.policy == "greedy"


def test_a_layouts_bins_need_near_and_far():
    with pytest.raises(ConfigError, match="layouts.arena.bins"):
        compose("horizon_generalization", "real", ["~layouts.arena.bins.near"])
    with pytest.raises(ConfigError, match="eval.policy"):
        compose("horizon_generalization", "real", ["eval.policy=mode"])
