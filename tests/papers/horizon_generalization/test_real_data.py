"""Tests of the real rung: the PointMaze map loader on gymnasium-robotics' pinned maps.py, bad
copies of that file, and the MuJoCo maze (tile coding, controller, data, oracle evaluation)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from papers.horizon_generalization.data import (
    MAPS_FILE,
    POINT_MAZE_ASSET,
    MazeFileError,
    load_maze_map,
    sample_hindsight,
)
from tests.helpers import require_assets

MEDIUM = [
    "11111111",
    "10011001",
    "10010001",
    "11000111",
    "10010001",
    "10100101",
    "10001001",
    "11111111",
]


@pytest.fixture(scope="module")
def maps_path():
    return require_assets(POINT_MAZE_ASSET)[POINT_MAZE_ASSET][MAPS_FILE]


@pytest.fixture(scope="module")
def maze(maps_path):
    from papers.horizon_generalization.point_maze import make_point_maze

    return make_point_maze("MEDIUM_MAZE", 3, 2.0, 10, 1.0)


def test_maps_file_checksum_and_known_maps(maps_path):
    from shared.assets import asset

    digest = hashlib.sha256(maps_path.read_bytes()).hexdigest()
    assert digest == asset(POINT_MAZE_ASSET).files[0].sha256
    medium = load_maze_map(maps_path, "MEDIUM_MAZE")
    assert medium.shape == (8, 8) and medium.dtype == bool
    assert ["".join("1" if w else "0" for w in row) for row in medium] == MEDIUM
    assert (~medium).sum() == 26
    assert load_maze_map(maps_path, "U_MAZE").shape == (5, 5)
    large = load_maze_map(maps_path, "LARGE_MAZE")
    assert large.shape == (9, 12) and (~large).sum() == 46
    # reset / goal marks (R, G, C) are free cells
    assert not load_maze_map(maps_path, "MEDIUM_MAZE_DIVERSE_GR")[1:-1, 1:-1].all()


def test_truncated_or_corrupted_copy_names_the_file(maps_path, tmp_path):
    text = maps_path.read_text()
    truncated = tmp_path / "maps.py"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(MazeFileError, match=str(truncated)):
        load_maze_map(truncated, "LARGE_MAZE")
    garbage = tmp_path / "garbage.py"
    garbage.write_bytes(b"\xff\xfe\x00" + bytes(range(256)))
    with pytest.raises(MazeFileError, match="garbage.py"):
        load_maze_map(garbage, "MEDIUM_MAZE")
    with pytest.raises(MazeFileError, match="no maze map named 'HUGE_MAZE'"):
        load_maze_map(maps_path, "HUGE_MAZE")
    bad = tmp_path / "bad.py"
    bad.write_text("M = [[1, 1, 1], [1, 7, 1], [1, 1, 1]]\nN = [[1, 1, 1], [0, 0, 1], [1, 1, 1]]\n")
    with pytest.raises(MazeFileError, match="not 0, 1"):
        load_maze_map(bad, "M")
    with pytest.raises(MazeFileError, match="closed by walls"):
        load_maze_map(bad, "N")
    with pytest.raises(MazeFileError, match="missing.py"):
        load_maze_map(tmp_path / "missing.py", "M")


def test_tile_coding_and_cell_geometry(maze):
    assert maze.tiles.n_states == 26 * 9 and maze.cells.n_states == 26
    assert maze.cells.distances.max() == 11
    centres = maze.cell_centre(np.arange(26))
    assert np.array_equal(maze.cell_of(centres), np.arange(26))
    # the gymnasium-robotics convention: cell (row 1, col 1) of the 8 x 8 map is at (-2.5, 2.5)
    assert np.allclose(maze.cell_centre(np.array([0])), [[-2.5, 2.5]])
    # every tile of a cell maps back to it, and a tile's neighbour "up" lies at +y
    tiles = maze.tiles
    xy = np.stack([(tiles.cells[:, 1] + 0.5) / 3 - 4, 4 - (tiles.cells[:, 0] + 0.5) / 3], 1)
    assert np.array_equal(maze.tile_of(xy), np.arange(tiles.n_states))
    up = tiles.next_state[:, 0]
    moved = up != np.arange(tiles.n_states)
    assert np.allclose(xy[up[moved], 1] - xy[moved, 1], 1 / 3)


def test_controller_moves_the_ball_and_walls_stop_it(maze):
    from papers.horizon_generalization.point_maze import simulate

    start = maze.cell_centre(np.array([0, 0, 0, 0]))  # top-left free cell
    xy, velocity, _ = start, np.zeros((4, 2)), None
    for _ in range(3):
        xy, velocity, _ = simulate(maze, xy, velocity, np.arange(4))
    # 3 decisions of 0.1 s at up to 2 m/s: at most 0.6 m; up and left hit the walls at 0.4 m
    moved = xy - start
    assert 0.3 < moved[3, 0] <= 0.6 and abs(moved[3, 1]) < 1e-6  # right: free
    assert 0.3 < -moved[1, 1] <= 0.6  # down: free
    assert moved[0, 1] <= 0.41 and -moved[2, 0] <= 0.41  # up / left: wall after 0.4 m
    assert np.abs(velocity).max() <= 5.0


def test_exploratory_data_stays_near(maze):
    from papers.horizon_generalization.point_maze import exploratory_trajectories

    states, actions, cells = exploratory_trajectories(maze, 200, 30, np.random.default_rng(0))
    assert states.shape == (200, 31) and actions.shape == (200, 30) and cells.shape == states.shape
    # the tile sequence moves at most one tile a decision (0.2 m < 1/3 m) along the tile graph
    step = maze.tiles.distances[states[:, :-1], states[:, 1:]]
    assert step.max() <= 2
    s, _, g, _ = sample_hindsight(cells, actions, 5000, np.random.default_rng(1), 0.9, 15)
    assert maze.cells.distances[s, g].max() <= 3


def test_oracle_reaches_far_goals_and_a_constant_critic_does_not(maze):
    from papers.horizon_generalization.evaluate import oracle_q
    from papers.horizon_generalization.point_maze import evaluate_maze

    bins = {"near": [1, 2], "mid": [3, 5], "far": [6, np.inf]}
    oracle = evaluate_maze(oracle_q(maze.tiles), maze, 40, 0, 80, 6, 10, bins=bins)
    assert oracle["success"] == 1.0 and oracle["n_far"] > 0
    assert oracle["far_optimal_action_rate"] == 1.0 and oracle["pi_rate"] == 1.0

    def right(states, goals):
        values = np.zeros((len(states), 4))
        values[:, 3] = 1.0
        return values

    constant = evaluate_maze(right, maze, 40, 0, 80, 6, 10, bins=bins)
    assert constant["far_success"] < 0.2
    assert sum(constant[f"n_{b}"] for b in bins) == 40
