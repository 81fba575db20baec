"""Dicts keyed by a name set of papers/em_llm/config.py have exactly its names."""

from __future__ import annotations

from papers.em_llm import config, model


def test_dtype_dict_keys_are_the_config_names():
    assert set(model.DTYPES) == set(config.DTYPES)
