"""horizon_generalization's real rung on any PointMaze map gymnasium-robotics ships, or on a
user's maze written as rows in the config (issue 53): ``layouts.<name>.maze=CUSTOM`` with
``maze_rows`` ('#' wall, '.' free), checked at start naming the key."""

from __future__ import annotations

import numpy as np
import pytest

from papers.horizon_generalization.claims import REAL_SMOKE_OVERRIDES
from papers.horizon_generalization.config import SHIPPED_MAZES
from papers.horizon_generalization.data import real_maze_map
from papers.horizon_generalization.point_maze import make_point_maze
from papers.horizon_generalization.train import real_assets
from shared.config import ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, require_assets

RING = ["#######", "#.....#", "#.###.#", "#.....#", "#######"]  # a loop around a block


def rows_override(rows: list[str]) -> str:
    return "layouts.medium.maze_rows=[" + ",".join(f"'{r}'" for r in rows) + "]"


def custom(rows: list[str], *extra: str) -> list[str]:
    return [
        "active_layouts=[medium]",
        "layouts.medium.maze=CUSTOM",
        rows_override(rows),
        *REAL_SMOKE_OVERRIDES,
        *extra,
    ]


@pytest.mark.parametrize("name", SHIPPED_MAZES)
def test_every_shipped_map_builds_as_maps_py_draws_it(name):
    require_assets("point_maze")
    maze = make_point_maze(name)
    np.testing.assert_array_equal(maze.walls, real_maze_map(name))
    assert maze.cells.distances.max() >= 1


def test_a_users_rows_build_the_maze():
    maze = make_point_maze("CUSTOM", rows=tuple(RING))
    assert maze.walls.shape == (5, 7) and (~maze.walls).sum() == 12
    assert maze.cells.distances.max() == 6  # opposite sides of the loop


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["#####", "#.o.#", "#####"], "characters ['o']"),
        (["#####", "#...#", "#.."], "not a rectangular grid"),
        (["#####", "#....", "#####"], "not closed by walls"),
        (["#####", "#.#.#", "#####"], "1 free cell(s) cannot be reached"),
    ],
    ids=["character", "ragged", "open border", "disconnected"],
)
def test_a_bad_maze_is_refused_at_start_naming_the_key(tmp_path, rows, message):
    refusal = refused_at_start("horizon_generalization", "real", custom(rows), tmp_path / "run")
    assert "layouts.medium.maze_rows: " in refusal and message in refusal


def test_the_rows_are_read_only_by_a_custom_maze():
    with pytest.raises(ConfigError, match=r"^layouts\.medium\.maze_rows=None: maze=CUSTOM needs"):
        compose("horizon_generalization", "real", ["layouts.medium.maze=CUSTOM"])
    with pytest.raises(ConfigError, match=r"^layouts\.medium\.maze_rows=.* does not read it"):
        compose("horizon_generalization", "real", [rows_override(RING)])
    assert real_assets(compose("horizon_generalization", "real")) == ("point_maze",)
    assert real_assets(compose("horizon_generalization", "real", custom(RING))) == ()


@pytest.mark.smoke
def test_one_run_in_a_users_maze_needs_no_asset(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    cfg = compose_dict("horizon_generalization", "real", [*custom(RING), "runtime.progress=false"])
    record = execute("horizon_generalization", cfg, tmp_path / "run")
    oracle = record["metrics"]["medium/oracle"]
    assert 0.0 <= oracle["success"]["mean"] <= 1.0
    assert "assets" not in record and record["claims"] == []
