"""Dicts keyed by a name set of papers/infoalign/config.py have exactly its names."""

from __future__ import annotations

from papers.infoalign import config, data, model


def test_downstream_dicts_are_keyed_by_the_config_names():
    assert set(data.DOWNSTREAM) == set(config.DOWNSTREAM_NAMES)
    assert set(data.DOWNSTREAM_TASKS) == set(config.DOWNSTREAM_NAMES)


def test_readout_dict_keys_are_the_config_names():
    assert set(model.READOUTS) == set(config.READOUTS)
