"""Dicts keyed by a name set of papers/leret/config.py have exactly its names."""

from __future__ import annotations

from papers.leret import config, lm_policy, method, train


def test_dtype_dict_keys_are_the_config_names():
    assert set(lm_policy.DTYPES) == set(config.DTYPE_NAMES)


def test_preference_loss_dict_keys_are_the_config_names():
    assert set(method.PREFERENCE_LOSSES) == set(config.PREFERENCE_LOSS_NAMES)


def test_optimizer_dict_keys_are_the_config_names():
    assert set(train.OPTIMIZER_CLASSES) == set(config.OPTIMIZERS)


def test_loop_variants_are_keyed_by_the_config_loop_methods():
    assert set(train.VARIANTS) == set(config.LOOP_METHODS)
    assert set(config.LOOP_METHODS) <= set(train.METHODS)
