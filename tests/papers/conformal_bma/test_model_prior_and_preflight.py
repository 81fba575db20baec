"""CBMA's prior model probabilities p(M_k) from the config (brief Sec. 3: uniform by default),
and the paper scale's check for its local California housing cache."""

from __future__ import annotations

import numpy as np
import pytest

from papers.conformal_bma import train
from papers.conformal_bma.train import CALIFORNIA_CACHE, log_model_prior, preflight, run_setting
from shared.config import ConfigError, compose
from shared.experiment import enabled_settings


@pytest.mark.parametrize("scale", ["paper", "toy", "smoke"])
def test_every_config_keeps_the_papers_uniform_model_prior(scale):
    for name, setting in enabled_settings(compose("conformal_bma", scale).settings).items():
        assert setting.model_prior is None
        K = len(setting.models)
        np.testing.assert_allclose(log_model_prior(name, setting), np.full(K, -np.log(K)))


def test_model_prior_is_normalised():
    cfg = compose("conformal_bma", "toy", ["settings.quadratic.model_prior=[1.0,2.0,1.0]"])
    log_prior = log_model_prior("quadratic", cfg.settings["quadratic"])
    np.testing.assert_allclose(np.exp(log_prior), [0.25, 0.5, 0.25], rtol=1e-12)


@pytest.mark.parametrize("weights", ["[0.5,0.5]", "[1.0,0.0,1.0]", "[1.0,-1.0,1.0]"])
def test_a_bad_model_prior_is_refused_at_start_naming_the_key(weights):
    with pytest.raises(ConfigError, match=r"^settings\.quadratic\.model_prior="):
        compose("conformal_bma", "toy", [f"settings.quadratic.model_prior={weights}"])


@pytest.mark.parametrize("weights", ["[1.0,inf,1.0]"])
def test_a_bad_model_prior_is_refused_naming_the_key(weights):
    cfg = compose("conformal_bma", "toy", [f"settings.quadratic.model_prior={weights}"])
    with pytest.raises(ValueError, match=r"settings\.quadratic\.model_prior must hold one"):
        log_model_prior("quadratic", cfg.settings["quadratic"])
    with pytest.raises(ValueError, match=r"settings\.quadratic\.model_prior"):
        train.run(cfg, "unused")  # refused before any replication or folder


def test_the_configured_model_prior_reaches_the_method(monkeypatch, tmp_path):
    seen = []
    real = train.conformal_set_by_model

    def spy(*args, **kwargs):
        seen.append(kwargs["log_prior"])
        return real(*args, **kwargs)

    monkeypatch.setattr(train, "conformal_set_by_model", spy)
    weights = {"uniform": None, "favours the true model": "[1.0,8.0,1.0]"}
    true_weight = {}
    for label, prior in weights.items():
        overrides = ["methods=[cbma]", "replications=2", "runtime.progress=false"]
        if prior is not None:
            overrides.append(f"settings.quadratic.model_prior={prior}")
        cfg = compose("conformal_bma", "smoke", overrides)
        seen.clear()
        out = run_setting("quadratic", cfg.settings["quadratic"], 0, tmp_path / label, cfg)
        expected = np.log([0.1, 0.8, 0.1]) if prior else np.full(3, -np.log(3))
        assert len(seen) == 2 * cfg.n_test
        for log_prior in seen:
            np.testing.assert_allclose(log_prior, expected, rtol=1e-12)
        true_weight[label] = out.metrics["cbma.true_model_weight"]
    # the same data with more prior mass on the true (quadratic) model weighs it more
    assert true_weight["favours the true model"] > true_weight["uniform"]


def test_paper_scale_preflight_names_the_missing_california_cache(tmp_path):
    unset = preflight(compose("conformal_bma", "paper"))
    assert len(unset) == 1 and unset[0].startswith("data_root is not set")
    assert CALIFORNIA_CACHE in unset[0]
    empty = preflight(compose("conformal_bma", "paper", [f"data_root={tmp_path}"]))
    assert len(empty) == 1 and f"lacks {CALIFORNIA_CACHE}" in empty[0]
    (tmp_path / CALIFORNIA_CACHE).write_bytes(b"")
    assert preflight(compose("conformal_bma", "paper", [f"data_root={tmp_path}"])) == []
    bundled = ["settings.california_housing.source=diabetes"]
    assert preflight(compose("conformal_bma", "paper", bundled)) == []
