"""EM-LLM's real rung on a user's own Llama-family checkpoint and text (issue 53):
``model.path`` (any local folder, ``from_pretrained(local_dir)``) and ``real.corpus_path`` (a
folder of UTF-8 .txt files), checked at start before any weights load (the architecture, the
memory's sizes against the model's window and layers, each text file), recorded with sha256."""

from __future__ import annotations

import json

import pytest

from papers.em_llm.claims import REAL_SMOKE_OVERRIDES
from papers.em_llm.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, save_tiny_llama

TEXT = "The cat sat on the mat. A dog ran in the park. Numbers 12345 and 67890 follow. " * 12
# the tiny model has one layer: the refinement reads from layer 0
SMALL = (*REAL_SMOKE_OVERRIDES, "memory.refine_from_layer=0")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_llama")
    save_tiny_llama(folder, [TEXT], eos_token="</s>")
    return folder


TEXTS = (TEXT, TEXT.upper())


def write_corpus(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(TEXTS):
        (folder / f"doc{i}.txt").write_text(text, encoding="utf-8")
    return folder


def test_a_checkpoint_is_checked_before_any_weights_load(tmp_path, tiny_model):
    refusal = refused_at_start("em_llm", "real", [f"model.path={tmp_path}", *SMALL], tmp_path / "r")
    assert f"model.path={tmp_path} holds no model (no config.json)" in refusal
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (gpt2 / "model.safetensors").write_bytes(b"")
    refusal = refused_at_start("em_llm", "real", [f"model.path={gpt2}", *SMALL], tmp_path / "r")
    assert "model_type 'gpt2' is not a Llama-family architecture" in refusal
    # the tiny model's window (2,048 positions) against the real rung's own sizes
    refusal = refused_at_start("em_llm", "real", [f"model.path={tiny_model}"], tmp_path / "r")
    assert "real.full_lengths.passkey_4k=4096: above model.path's window (2048 tokens)" in refusal
    assert "memory.refine_from_layer=19: model.path has 1 layers" in refusal


def test_a_corpus_folder_is_checked_file_by_file(tmp_path):
    folder = write_corpus(tmp_path / "texts")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    refusal = refused_at_start(
        "em_llm", "real", [f"real.corpus_path={folder}", *SMALL], tmp_path / "r"
    )
    assert f"real.corpus_path: {folder / 'latin.txt'} is not UTF-8 text" in refusal
    empty = tmp_path / "empty"
    empty.mkdir()
    refusal = refused_at_start(
        "em_llm", "real", [f"real.corpus_path={empty}", *SMALL], tmp_path / "r"
    )
    assert f"real.corpus_path: {empty}: no .txt files" in refusal


def test_the_assets_read_follow_the_keys(tmp_path):
    assert real_assets(compose("em_llm", "real")) == ("smollm2_135m", "docutils_docs")
    cfg = compose("em_llm", "real", [f"real.corpus_path={tmp_path}"])
    assert real_assets(cfg) == ("smollm2_135m",)


@pytest.mark.smoke
def test_one_run_on_a_users_checkpoint_and_text(tmp_path, tiny_model, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))  # no shipped asset
    folder = write_corpus(tmp_path / "texts")
    overrides = [f"model.path={tiny_model}", f"real.corpus_path={folder}", *SMALL]
    files = user_files(compose("em_llm", "real", overrides))
    assert files["real.corpus_path (doc0.txt)"] == str(folder / "doc0.txt")
    assert files["model.path (model.safetensors)"] == str(tiny_model / "model.safetensors")
    cfg = compose_dict("em_llm", "real", [*overrides, "runtime.progress=false"])
    record = execute("em_llm", cfg, tmp_path / "run")
    assert 0.0 <= record["metrics"]["em_llm"]["passkey_16k"]["mean"] <= 1.0
    assert "modularity" in record["metrics"]["em_llm"]
    assert "assets" not in record and record["claims"] == []
    recorded = {r["key"]: r["sha256"] for r in record["user_files"]}
    assert recorded["real.corpus_path (doc1.txt)"] == sha256_of(folder / "doc1.txt")
