"""Dicts keyed by a name set of papers/gnn_kvariance/config.py have exactly its names."""

from __future__ import annotations

from papers.gnn_kvariance import config, method, model


def test_loss_dict_keys_are_the_config_names():
    assert set(model.LOSSES) == set(config.LOSSES)


def test_log_base_dict_keys_are_the_config_names():
    assert set(method.LOG_BASES) == set(config.LOG_BASES)
