"""Dicts keyed by a name set of papers/horizon_generalization/config.py have exactly its names."""

from __future__ import annotations

from papers.horizon_generalization import config, point_maze


def test_maze_env_ids_are_keyed_by_the_config_names():
    assert set(point_maze.ENV_IDS) == set(config.MAZES)
