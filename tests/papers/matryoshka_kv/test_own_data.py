"""MatryoshkaKV's real rung on a user's own Llama-family checkpoint and text (issue 53):
``model.path`` (any local folder, ``from_pretrained(local_dir)``) and ``corpus.path`` (a folder
of UTF-8 .txt files, split into train and test documents), checked at start before any weights
load: the architecture, the ranks against the head size, the segment against the window, and
each text file; recorded with sha256."""

from __future__ import annotations

import json

import pytest

from papers.matryoshka_kv.claims import REAL_SMOKE_OVERRIDES
from papers.matryoshka_kv.train import real_assets, split_documents, user_files
from shared.assets import sha256_of
from shared.config import compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, save_tiny_llama

TEXT = "The cat sat on the mat. A dog ran in the park. Numbers 12345 and 67890 follow. " * 8
# the tiny model's head size is 8 (hidden 16, 2 heads): ranks at its 25 / 37.5 / 50 / 100 %
TINY_RANKS = ("eval.ranks=[2,3,4,8]", "projection.rank_schedule=[1,2,3,4,5,6,7,8]")
SMALL = (*REAL_SMOKE_OVERRIDES, *TINY_RANKS)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_llama")
    save_tiny_llama(folder, [TEXT], eos_token="</s>")
    return folder


THREE_TEXTS = (TEXT, TEXT.upper(), TEXT.lower())


def write_corpus(folder, texts=THREE_TEXTS):
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (folder / f"doc{i}.txt").write_text(text, encoding="utf-8")
    return folder


def test_documents_split_whole_with_at_least_one_on_each_side():
    documents = {f"d{i}.txt": str(i) for i in (3, 1, 2, 0)}
    train, test = split_documents(documents, 0.25)
    assert list(train) == ["d0.txt", "d1.txt", "d2.txt"] and list(test) == ["d3.txt"]
    train, test = split_documents(documents, 0.5)
    assert list(test) == ["d2.txt", "d3.txt"]
    with pytest.raises(ValueError, match="needs at least 2"):
        split_documents({"only.txt": "x"}, 0.375)


def test_a_checkpoint_is_checked_before_any_weights_load(tmp_path, tiny_model):
    refusal = refused_at_start("matryoshka_kv", "real", [f"model.path={tmp_path}"], tmp_path / "r")
    assert f"model.path={tmp_path} holds no model (no config.json)" in refusal
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    (gpt2 / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (gpt2 / "model.safetensors").write_bytes(b"")
    refusal = refused_at_start("matryoshka_kv", "real", [f"model.path={gpt2}"], tmp_path / "r")
    assert "model_type 'gpt2' is not a Llama-family architecture" in refusal
    # the real rung's ranks (d = 64) against the tiny model's head size 8, and a segment past
    # its window
    refusal = refused_at_start(
        "matryoshka_kv", "real", [f"model.path={tiny_model}", "corpus.seq_len=4096"], tmp_path / "r"
    )
    assert "eval.ranks=[16, 24, 32, 64]: each rank must be <= 8 (model.path's head size)" in refusal
    assert "projection.rank_schedule=[8, 16, 24, 32, 40, 48, 56, 64]" in refusal
    assert "corpus.seq_len=4096: above model.path's window (2048 tokens)" in refusal
    grouped = tmp_path / "grouped"
    grouped.mkdir()
    config = json.loads((tiny_model / "config.json").read_text())
    (grouped / "config.json").write_text(json.dumps({**config, "num_key_value_heads": 3}))
    (grouped / "model.safetensors").write_bytes(b"")
    refusal = refused_at_start("matryoshka_kv", "real", [f"model.path={grouped}"], tmp_path / "r")
    assert "num_key_value_heads=3 does not divide num_attention_heads=2" in refusal


def test_a_corpus_folder_is_checked_file_by_file(tmp_path, tiny_model):
    model = f"model.path={tiny_model}"
    folder = write_corpus(tmp_path / "texts")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    refusal = refused_at_start(
        "matryoshka_kv", "real", [model, f"corpus.path={folder}", *SMALL], tmp_path / "r"
    )
    assert f"corpus.path: {folder / 'latin.txt'} is not UTF-8 text" in refusal
    one = write_corpus(tmp_path / "one", texts=(TEXT,))
    refusal = refused_at_start(
        "matryoshka_kv", "real", [model, f"corpus.path={one}", *SMALL], tmp_path / "r"
    )
    assert "corpus.path: 1 text file(s): needs at least 2" in refusal
    short = write_corpus(tmp_path / "short", texts=(TEXT, "too short"))
    refusal = refused_at_start(
        "matryoshka_kv", "real", [model, f"corpus.path={short}", *SMALL], tmp_path / "r"
    )
    assert (
        "corpus.path (test files): no document of ['doc1.txt'] holds corpus.seq_len=64" in refusal
    )


def test_the_assets_read_follow_the_keys(tmp_path):
    assert real_assets(compose("matryoshka_kv", "real")) == ("smollm2_135m", "docutils_docs")
    cfg = compose("matryoshka_kv", "real", [f"corpus.path={tmp_path}"])
    assert real_assets(cfg) == ("smollm2_135m",)
    cfg = compose("matryoshka_kv", "real", [f"model.path={tmp_path}"])
    assert real_assets(cfg) == ("docutils_docs",)


@pytest.mark.smoke
def test_one_run_on_a_users_checkpoint_and_text(tmp_path, tiny_model, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))  # no shipped asset
    folder = write_corpus(tmp_path / "texts")
    overrides = [f"model.path={tiny_model}", f"corpus.path={folder}", *SMALL]
    files = user_files(compose("matryoshka_kv", "real", overrides))
    assert files["corpus.path (doc0.txt)"] == str(folder / "doc0.txt")
    assert files["model.path (model.safetensors)"] == str(tiny_model / "model.safetensors")
    cfg = compose_dict("matryoshka_kv", "real", [*overrides, "runtime.progress=false"])
    record = execute("matryoshka_kv", cfg, tmp_path / "run")
    matryoshka = record["metrics"]["matryoshka"]
    assert matryoshka["abs_kl_r8"]["mean"] < 1e-4  # exact at the tiny model's full rank
    assert matryoshka["kl_r2"]["mean"] > matryoshka["kl_r4"]["mean"] > 0
    assert "assets" not in record and record["claims"] == []
    recorded = {r["key"]: r["sha256"] for r in record["user_files"]}
    assert recorded["corpus.path (doc2.txt)"] == sha256_of(folder / "doc2.txt")
