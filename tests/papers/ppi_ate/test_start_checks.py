"""PPI-ATE's start-time checks (issue 52): a real setting's keys that its data set decides (a
covariate's name, D1's size) are refused before the first setting runs, naming the full key."""

from __future__ import annotations

import pytest

from papers.ppi_ate.train import data_preflight
from shared.config import ConfigError, compose
from tests.helpers import refused_at_start, require_assets


def test_lalonde_hidden_covariate_typo_is_refused_at_compose():
    with pytest.raises(ConfigError, match=r"^settings\.lalonde\.hidden_covariate='agee': .*age"):
        compose("ppi_ate", "real", ["settings.lalonde.hidden_covariate=agee"])


def test_lalonde_hidden_covariate_typo_is_refused_before_the_run_folder(tmp_path):
    message = refused_at_start(
        "ppi_ate", "real", ["settings.lalonde.hidden_covariate=agee"], tmp_path / "run"
    )
    assert message.startswith("settings.lalonde.hidden_covariate='agee'")


def test_every_real_setting_hides_one_of_its_data_sets_covariates():
    compose("ppi_ate", "real")  # the committed real rung passes the check


def test_hiv_n_d1_past_the_experiment_is_refused_at_start(tmp_path):
    require_assets("causaldata")  # D1's bound is the usable units of the real file
    message = refused_at_start("ppi_ate", "real", ["settings.hiv.n_d1=3000"], tmp_path / "run")
    assert "settings.hiv.n_d1=3000: must lie in [1, 2812]" in message
    assert data_preflight(compose("ppi_ate", "real")) == []  # the committed rung passes


def test_a_real_setting_without_its_asset_is_refused_at_start_naming_its_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    overrides = ["settings.rct.generator=real", "settings.rct.real_dataset=thornton_hiv"]
    message = refused_at_start("ppi_ate", "smoke", overrides, tmp_path / "run")
    assert "settings.rct.generator=real reads causaldata" in message
