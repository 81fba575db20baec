"""Tests of papers/horizon_generalization/env.py: layouts, the transition table, BFS
distances (brief Sec. 7.5) and the gymnasium env (checker, registration, termination)."""

from __future__ import annotations

import importlib

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from papers.horizon_generalization import env as env_module
from papers.horizon_generalization.env import (
    ACTIONS,
    GridWorldEnv,
    bfs_distances,
    make_grid,
)


@pytest.fixture(scope="module", params=["open", "wall"])
def grid(request):
    return make_grid(request.param)


def test_layout_sizes():
    open_grid, wall_grid = make_grid("open"), make_grid("wall")
    assert open_grid.n_states == 121 and wall_grid.n_states == 113
    assert open_grid.n_actions == len(ACTIONS) == 4
    assert not wall_grid.free[:8, 5].any() and wall_grid.free[8:, 5].all()
    assert wall_grid.free.sum() == 113 and (wall_grid.index[~wall_grid.free] == -1).all()
    # Row-major state order and a consistent index map.
    assert np.array_equal(
        wall_grid.index[wall_grid.cells[:, 0], wall_grid.cells[:, 1]], np.arange(113)
    )
    assert (np.diff(wall_grid.cells[:, 0] * 11 + wall_grid.cells[:, 1]) > 0).all()
    with pytest.raises(ValueError, match="open"):
        make_grid("maze")


def test_transitions_move_or_stay():
    grid = make_grid("wall")
    up, down, left, right = range(4)
    corner = grid.index[0, 0]
    assert grid.next_state[corner, up] == corner and grid.next_state[corner, left] == corner
    assert grid.next_state[corner, down] == grid.index[1, 0]
    assert grid.next_state[corner, right] == grid.index[0, 1]
    beside_wall = grid.index[3, 4]
    assert grid.next_state[beside_wall, right] == beside_wall  # bump into the wall
    below_wall = grid.index[8, 5]
    assert grid.next_state[below_wall, up] == below_wall
    assert grid.next_state[below_wall, down] == grid.index[9, 5]


def test_bfs_basic(grid):
    distances = grid.distances
    assert (np.diag(distances) == 0).all()
    assert (distances >= 0).all()  # connected
    assert np.array_equal(distances, distances.T)  # undirected moves
    states = np.arange(grid.n_states)
    for action in range(grid.n_actions):
        successor = grid.next_state[:, action]
        moved = successor != states
        assert (distances[states[moved], successor[moved]] == 1).all()
    # Exactly the four-neighbourhood is at distance one.
    rows, cols = grid.cells[:, 0], grid.cells[:, 1]
    manhattan = np.abs(rows[:, None] - rows) + np.abs(cols[:, None] - cols)
    assert np.array_equal(distances == 1, manhattan == 1)
    assert (distances >= manhattan).all()


def test_bfs_open_is_manhattan_and_wall_detours():
    open_grid = make_grid("open")
    rows, cols = open_grid.cells[:, 0], open_grid.cells[:, 1]
    manhattan = np.abs(rows[:, None] - rows) + np.abs(cols[:, None] - cols)
    assert np.array_equal(open_grid.distances, manhattan)
    wall_grid = make_grid("wall")
    left, right = wall_grid.index[0, 4], wall_grid.index[0, 6]
    # Manhattan 2, but the way round the 8-cell wall goes down to row 8 and back up.
    assert wall_grid.distances[left, right] == 8 + 2 + 8
    assert wall_grid.distances[wall_grid.index[1, 4], wall_grid.index[1, 6]] == 7 + 2 + 7


def test_bfs_directed_table():
    # A one-way ring 0 -> 1 -> 2 -> 0 (plus staying) is a quasimetric, not a metric.
    next_state = np.array([[1, 0], [2, 1], [0, 2]])
    assert bfs_distances(next_state).tolist() == [[0, 1, 2], [2, 0, 1], [1, 2, 0]]
    unreachable = bfs_distances(np.array([[0], [0]]))
    assert unreachable.tolist() == [[0, -1], [1, 0]]


@pytest.mark.parametrize("layout", ["open", "wall"])
def test_env_checker(layout):
    env = GridWorldEnv(layout=layout)
    check_env(env, skip_render_check=True)
    env = GridWorldEnv(layout=layout, render_mode="rgb_array")
    env.reset(seed=0)
    image = env.render()
    assert image.dtype == np.uint8 and image.shape == (88, 88, 3)


def test_reset_options_and_observations():
    env = GridWorldEnv()
    obs, info = env.reset(seed=3, options={"start": 5, "goal": 17})
    assert info == {"state": 5, "goal": 17, "distance": int(env.grid.distances[5, 17])}
    assert obs["observation"].argmax() == 5 and obs["observation"].sum() == 1
    assert obs["desired_goal"].argmax() == 17 and obs["desired_goal"].sum() == 1
    assert np.array_equal(obs["achieved_goal"], obs["observation"])
    assert env.observation_space.contains(obs)
    draws = [env.reset(options={"goal": 7})[1] for _ in range(200)]
    assert all(d["goal"] == 7 and d["state"] != 7 for d in draws)
    starts = {env.reset()[1]["state"] for _ in range(2000)}
    assert len(starts) > 110
    with pytest.raises(ValueError):
        env.reset(options={"start": 4, "goal": 4})


def test_registration_and_episode_terminates_at_goal():
    importlib.reload(env_module)  # re-registering is guarded
    for env_id in ("HorizonGrid-Open-v0", "HorizonGrid-Wall-v0"):
        env = gymnasium.make(env_id)
        assert env.spec.max_episode_steps == 100
        grid = env.unwrapped.grid
        start, goal = grid.index[0, 0], grid.index[10, 10]
        _, info = env.reset(seed=0, options={"start": start, "goal": goal})
        terminated, steps, rewards = False, 0, []
        while not terminated:
            state = info["state"]
            # Follow a shortest path using the BFS table.
            action = int(np.argmin(grid.distances[grid.next_state[state], goal]))
            _, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            steps += 1
            assert not truncated
        assert steps == grid.distances[start, goal] and info["distance"] == 0
        assert rewards[-1] == 0.0 and all(r == -1.0 for r in rewards[:-1])
        env.close()


def test_time_limit_truncates():
    env = gymnasium.make("HorizonGrid-Open-v0")
    grid = env.unwrapped.grid
    env.reset(seed=0, options={"start": grid.index[0, 0], "goal": grid.index[5, 5]})
    for _ in range(100):
        _, reward, terminated, truncated, _ = env.step(0)  # "up" in the top row: stays
    assert reward == -1.0 and not terminated and truncated
