"""Dicts keyed by a name set of papers/etcd/config.py have exactly its names."""

from __future__ import annotations

from papers.etcd import config, train


def test_graph_dict_keys_are_the_config_names():
    assert set(train.GRAPHS) == set(config.SIMULATED_GRAPHS)
