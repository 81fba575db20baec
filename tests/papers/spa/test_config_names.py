"""Dicts keyed by a name set of papers/spa/config.py have exactly its names."""

from __future__ import annotations

from papers.spa import config, model


def test_dtype_dict_keys_are_the_config_names():
    assert set(model.DTYPES) == set(config.DTYPES)
