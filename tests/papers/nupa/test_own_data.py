"""NUPA's real rung on a user's own Llama-family checkpoint (issue 53): ``methods=[own]
real.model_path=DIR`` asks that model the text benchmark, checked at start before any weights
load, recorded with the files' sha256, no shipped asset needed."""

from __future__ import annotations

import json

import pytest

from papers.nupa.claims import REAL_SMOKE_OVERRIDES
from papers.nupa.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, save_tiny_llama

NUMBERS = " ".join(f"{i} + {i * 7} = {i * 8}." for i in range(200))


def test_the_model_key_is_checked_at_start(tmp_path):
    refusal = refused_at_start(
        "nupa", "real", ["methods=[own]", *REAL_SMOKE_OVERRIDES], tmp_path / "r"
    )
    assert "real.model_path is not set: methods=[own] asks your model" in refusal
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (tmp_path / "bert" / "model.safetensors").write_bytes(b"")
    overrides = ["methods=[own]", f"real.model_path={tmp_path / 'bert'}", *REAL_SMOKE_OVERRIDES]
    refusal = refused_at_start("nupa", "real", overrides, tmp_path / "r")
    assert "model_type 'bert' is not a Llama-family architecture" in refusal
    refusal = refused_at_start(
        "nupa", "real", [f"real.model_path={tmp_path}", *REAL_SMOKE_OVERRIDES], tmp_path / "r"
    )
    assert f"real.model_path={tmp_path}: only methods=[own] reads it" in refusal
    assert real_assets(compose("nupa", "real")) == ("smollm2_135m",)
    assert real_assets(compose("nupa", "real", ["methods=[own]"])) == ()


@pytest.mark.smoke
def test_one_run_on_a_users_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    model = tmp_path / "my_llama"
    save_tiny_llama(model, [NUMBERS], eos_token="</s>")
    overrides = ["methods=[own]", f"real.model_path={model}", *REAL_SMOKE_OVERRIDES]
    files = user_files(compose("nupa", "real", overrides))
    assert files["real.model_path (config.json)"] == str(model / "config.json")
    cfg = compose_dict("nupa", "real", [*overrides, "runtime.progress=false"])
    record = execute("nupa", cfg, tmp_path / "run")
    assert any(0.0 <= m["em"]["mean"] <= 1.0 for m in record["metrics"].values() if "em" in m)
    assert "assets" not in record and record["claims"] == []
    recorded = {r["key"]: r["sha256"] for r in record["user_files"]}
    assert recorded["real.model_path (model.safetensors)"] == sha256_of(model / "model.safetensors")
