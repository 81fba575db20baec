"""Tests of papers/horizon_generalization/evaluate.py: the oracle critic is perfect through
the evaluator (brief Sec. 7.6), bins partition the pairs and success means visiting the goal
(Sec. 7.8), and a random critic does badly on far goals."""

from __future__ import annotations

import numpy as np
import pytest

from papers.horizon_generalization.env import make_grid
from papers.horizon_generalization.evaluate import (
    evaluate,
    oracle_q,
    planning_invariance,
    rollout,
    sample_pairs,
)
from shared.config import compose

BINS = compose("horizon_generalization", "toy").eval.bins  # the config's bins


@pytest.fixture(scope="module", params=["open", "wall"])
def grid(request):
    return make_grid(request.param)


def always(action: int):
    def q_fn(states, goals):
        values = np.zeros((len(states), 4))
        values[:, action] = 1.0
        return values

    return q_fn


def test_sample_pairs_distinct_and_uniform(grid):
    starts, goals = sample_pairs(grid, 50_000, np.random.default_rng(0))
    assert (starts != goals).all()
    assert starts.min() == 0 and goals.max() == grid.n_states - 1
    counts = np.bincount(goals, minlength=grid.n_states)
    assert counts.min() > 0.7 * counts.mean() and counts.max() < 1.3 * counts.mean()


def test_oracle_scores_shortest_path_values(grid):
    q = oracle_q(grid)(np.array([0, 0]), np.array([0, 1]))
    assert q.shape == (2, 4)
    # Up/left from the corner stay (0 or 1 away), down/right move.
    assert q[1].max() == 0.0 and q[0].max() == 0.0


def test_oracle_is_perfect(grid):
    metrics = evaluate(oracle_q(grid), grid, n_pairs=1000, seed=7, bins=BINS)
    for name in BINS:
        assert metrics[f"{name}_success"] == 1.0
        assert metrics[f"n_{name}"] > 100
    assert metrics["eta"] == 1.0
    assert metrics["far_optimal_action_rate"] == 1.0
    assert metrics["pi_rate"] == 1.0
    # With tied oracle values the lowest-index action and the waypoint's action can differ.
    assert metrics["pi_rate_strict"] < 1.0
    assert set(metrics["success_by_distance"].values()) == {1.0}


def test_oracle_rollouts_are_shortest(grid):
    starts, goals = sample_pairs(grid, 500, np.random.default_rng(1))
    success, steps, paths = rollout(oracle_q(grid), grid, starts, goals)
    assert success.all()
    assert np.array_equal(steps, grid.distances[starts, goals])
    assert np.array_equal(paths[:, 0], starts) and np.array_equal(paths[:, -1], goals)


def test_bins_partition_all_pairs(grid):
    metrics = evaluate(always(0), grid, n_pairs=600, seed=3, bins=BINS)
    assert metrics["n_near"] + metrics["n_mid"] + metrics["n_far"] == 600
    starts, goals = sample_pairs(grid, 600, np.random.default_rng(3))
    distance = grid.distances[starts, goals]
    assert sorted(metrics["success_by_distance"]) == sorted(set(distance.tolist()))
    assert BINS == {"near": [1, 5], "mid": [6, 10], "far": [11, np.inf]}  # brief Sec. 5


def test_bins_come_from_the_config_and_are_checked(grid):
    wide = {"near": [1, 2], "far": [3, np.inf]}
    metrics = evaluate(oracle_q(grid), grid, n_pairs=300, seed=3, bins=wide)
    assert metrics["n_near"] + metrics["n_far"] == 300 and "n_mid" not in metrics
    with pytest.raises(ValueError, match="far"):
        evaluate(oracle_q(grid), grid, n_pairs=10, bins={"near": [1, 5]})
    with pytest.raises(ValueError, match="eval.bins.near"):
        evaluate(oracle_q(grid), grid, n_pairs=10, bins={"near": [5, 1], "far": [6, 9]})
    cfg = compose("horizon_generalization", "toy", ["eval.bins.far=[12,inf]"])
    assert cfg.eval.bins["far"] == [12, np.inf]


def test_success_means_visiting_the_goal():
    grid = make_grid("open")
    starts, goals = sample_pairs(grid, 2000, np.random.default_rng(4))
    success, steps, paths = rollout(always(0), grid, starts, goals, max_steps=30)
    rows, cols = grid.cells[:, 0], grid.cells[:, 1]
    straight_up = (cols[starts] == cols[goals]) & (rows[goals] < rows[starts])
    assert straight_up.any() and not straight_up.all()
    assert np.array_equal(success, straight_up)
    visited = (paths == goals[:, None]).any(axis=1)
    assert np.array_equal(success, visited)
    assert np.array_equal(steps[success], (rows[starts] - rows[goals])[success])
    assert (steps[~success] == 30).all()
    metrics = evaluate(always(0), grid, n_pairs=1000, seed=5, bins=BINS)
    assert metrics["far_success"] == 0.0 and metrics["near_success"] < 0.2


def test_random_critic_is_bad_far_away(grid):
    rng = np.random.default_rng(6)
    metrics = evaluate(lambda s, g: rng.random((len(s), 4)), grid, n_pairs=1000, seed=8, bins=BINS)
    assert metrics["far_success"] < 0.3
    assert metrics["far_optimal_action_rate"] < 0.7
    assert metrics["pi_rate"] < 0.5


def test_planning_invariance_detects_a_broken_critic():
    grid = make_grid("open")
    oracle = oracle_q(grid)
    corner, opposite = grid.index[0, 0], grid.index[10, 10]

    def flipped(states, goals):
        # Correct towards nearby goals, reversed preference towards the far corner.
        values = oracle(states, goals)
        far = goals == opposite
        values[far] = -values[far]
        return values

    rate, strict = planning_invariance(flipped, grid, np.array([corner]), np.array([opposite]))
    assert rate == 0.0 and strict == 0.0
    assert planning_invariance(oracle, grid, np.array([corner]), np.array([opposite]))[0] == 1.0


def test_empty_bins_give_nan():
    grid = make_grid("open", size=3)  # largest distance 4: mid and far bins are empty
    metrics = evaluate(oracle_q(grid), grid, n_pairs=100, seed=0, bins=BINS)
    assert metrics["near_success"] == 1.0 and metrics["n_far"] == 0
    assert np.isnan(metrics["mid_success"]) and np.isnan(metrics["far_success"])
    assert np.isnan(metrics["far_optimal_action_rate"]) and np.isnan(metrics["pi_rate"])
    # A critic that prefers moving away never reaches any goal: eta is undefined.
    open_grid = make_grid("open")
    away = evaluate(
        lambda s, g: -oracle_q(open_grid)(s, g), open_grid, n_pairs=200, seed=0, bins=BINS
    )
    assert away["near_success"] == 0.0 and np.isnan(away["eta"])


def test_evaluate_runs_many_pairs_in_one_batch():
    # Speed is a benchmark matter; here only that 1 000 pairs evaluate (batched, no Python loop
    # over pairs would still pass, but the oracle must reach every pair it is given).
    grid = make_grid("wall")
    scores = evaluate(oracle_q(grid), grid, n_pairs=1000, bins=BINS)
    assert scores["far_success"] == 1.0


def test_paper_scale_config_runs_both_layouts(tmp_path):
    """`scale=paper` (both layouts, the official critic sizes) end to end with few steps."""
    from papers.horizon_generalization.train import run
    from shared.config import compose

    cfg = compose(
        "horizon_generalization",
        "paper",
        [
            "layouts.open.steps=3",
            "layouts.wall.steps=3",
            "layouts.open.batch_size=16",
            "layouts.wall.batch_size=16",
            "data.n_trajectories=20",
            "eval.n_pairs=40",
            "eval.pi_pairs=5",
            "seeds=[0]",
            "runtime.progress=false",
        ],
    )
    results = run(cfg, tmp_path)
    assert "open/mlp" in results and "wall/mrn" in results and "wall/mlp" not in results
    assert results["wall/oracle"]["far_success"] == [1.0]
