"""EM-LLM's real path on the real pretrained LM (the ``smollm2`` fixture: SmolLM2-135M) on a
few hundred tokens: the memory attention with everything in the local window is the model's
own full attention, the fast path is the exact one in another summation order, a tiny
pass-key that EM-LLM answers and the sliding window does not, the pass-key documents and the
segmentation metrics of a real test document."""

from __future__ import annotations

import math

import pytest
import torch

from papers.em_llm.config import Config, MemoryConfig, RealConfig
from papers.em_llm.data import passkey_prompt
from papers.em_llm.model import attach_memory_attention, full_attention_logits, read_document
from papers.em_llm.real import check_real, passkey_documents, segment_document
from shared import pretrained
from shared.llama import decoder_layers

# a small memory that keeps the paper's rules (official quirks on, as configs/em_llm/real.yaml)
TINY = MemoryConfig(
    chunk=32,
    n_init=8,
    n_local=128,
    n_mem=128,
    min_block=8,
    max_block=32,
    threshold_window=96,
    threshold_per_chunk=True,
    official_threshold=True,
    official_shift=True,
    official_refine=True,
    official_frontier=True,
    official_contiguity=True,
    refine_from_layer=19,
    exact_order=False,
)


@pytest.fixture
def lm(smollm2):
    """The session's SmolLM2 with the memory attention attached, detached again afterwards
    (the fixture's model is shared with other papers' tests)."""
    model, tokenizer = smollm2
    originals = [layer.self_attn for layer in decoder_layers(model)]
    attach_memory_attention(model)
    yield model, tokenizer
    for layer, original in zip(decoder_layers(model), originals, strict=True):
        layer.self_attn = original


def passkey_ids(tokenizer, depth: float, key: int, n_filler: int = 20) -> torch.Tensor:
    prompt, _ = passkey_prompt(n_filler, depth, key)  # ~64 + 24 tokens per filler sentence
    return torch.tensor(tokenizer(prompt)["input_ids"])


def test_memory_path_with_everything_local_is_the_full_model(lm):
    model, tokenizer = lm
    text = next(iter(pretrained.corpus("test").values()))
    ids = torch.tensor(tokenizer(text)["input_ids"][:160])
    full = full_attention_logits(model, ids)
    for exact in (True, False):  # both summation orders; nothing is ever evicted
        memory = MemoryConfig(chunk=64, n_init=8, n_local=256, n_mem=64, exact_order=exact)
        reading = read_document(model, ids, memory)
        assert not reading.events
        torch.testing.assert_close(reading.last_logits, full[-1], atol=2e-4, rtol=1e-4)


def test_fast_path_is_the_exact_path_in_another_order(lm):
    model, tokenizer = lm
    ids = passkey_ids(tokenizer, 0.4, 52817, n_filler=10)  # ~300 tokens, 128 local
    exact = read_document(model, ids, MemoryConfig(**{**vars(TINY), "exact_order": True}))
    fast = read_document(model, ids, TINY)
    assert fast.events == exact.events and fast.boundaries == exact.boundaries
    assert [m.peak_keys for m in fast.memories] == [m.peak_keys for m in exact.memories]
    torch.testing.assert_close(fast.last_logits, exact.last_logits, atol=2e-4, rtol=1e-4)
    torch.testing.assert_close(fast.surprise, exact.surprise, atol=1e-4, rtol=1e-4, equal_nan=True)


def test_tiny_passkey_em_llm_answers_and_the_sliding_window_does_not(lm):
    """352 tokens, a 128-token local window: the key (at 30 % depth) has left the window."""
    model, tokenizer = lm
    ids = passkey_ids(tokenizer, 0.3, 52817, n_filler=12)
    answers = {}
    for sliding in (False, True):
        reading = read_document(
            model,
            ids,
            TINY,
            sliding_window=sliding,
            max_new_tokens=7,
            eos=tokenizer.eos_token_id,
            score_surprise=not sliding,
        )
        answers[sliding] = tokenizer.decode(reading.generated)
    assert "52817" in answers[False], answers
    assert "52817" not in answers[True], answers


def test_passkey_documents_fit_their_length_and_depths(smollm2):
    _, tokenizer = smollm2
    cfg = RealConfig(documents=4)
    docs = passkey_documents(tokenizer, 2000, cfg, seed=0)
    unit = 24  # one filler sentence inside the text
    assert all(2000 - unit < len(d.ids) + cfg.new_tokens <= 2000 for d in docs)
    assert all(cfg.min_depth <= d.depth <= cfg.max_depth for d in docs)
    assert len({d.passkey for d in docs}) == 4 and all(len(d.passkey) == 5 for d in docs)
    again = passkey_documents(tokenizer, 2000, cfg, seed=0)
    assert [d.ids for d in again] == [d.ids for d in docs]  # a pure function of (seed, length)


def test_segmentation_metrics_of_a_real_test_document(lm):
    model, tokenizer = lm
    cfg = Config(memory=TINY, real=RealConfig(segmentation_tokens=320))
    cfg.eval.refine_min_block = TINY.min_block
    text = next(iter(pretrained.corpus("test").values()))
    rows = segment_document(model, tokenizer, text, cfg)
    assert set(rows) == {"S", "SM", "fixed"}
    assert rows["S"]["events"] == rows["SM"]["events"] == rows["fixed"]["events"] >= 2
    for row in rows.values():
        assert math.isfinite(row["modularity"]) and math.isfinite(row["conductance"])
        assert -0.5 <= row["modularity"] <= 1.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"documents": 0}, "real.documents"),
        ({"min_depth": 0.9, "max_depth": 0.1}, "real.min_depth"),
        ({"passkey_lengths": {"passkey_16k": 10}}, "real.passkey_lengths"),
    ],
)
def test_bad_real_settings_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        check_real(RealConfig(**change))
