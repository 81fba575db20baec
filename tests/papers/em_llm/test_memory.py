"""The memory attention on a transformers Llama: exactness, bounded keys, bad documents."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from papers.em_llm.config import MemoryConfig, ModelConfig
from papers.em_llm.model import (
    attach_memory_attention,
    build_toy_model,
    chunk_spans,
    full_attention_logits,
    read_document,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    model = build_toy_model(ModelConfig(num_key_value_heads=2)).eval()  # GQA: 2 groups
    return attach_memory_attention(model)


def test_attached_model_without_memory_is_the_original(lm):
    torch.manual_seed(1)
    ids = torch.randint(5, 101, (40,))
    fresh = build_toy_model(ModelConfig(num_key_value_heads=2)).eval()
    fresh.load_state_dict(lm.state_dict())  # same parameter names after the swap
    assert torch.equal(full_attention_logits(fresh, ids), full_attention_logits(lm, ids))


@pytest.mark.parametrize("uniform", [False, True])
def test_memory_at_true_positions_equals_full_attention(lm, uniform):
    """Brief Sec. 7.5: everything retrieved, global keys at their true positions."""
    ids = torch.randint(5, 101, (150,), generator=torch.Generator().manual_seed(2))
    cfg = MemoryConfig(n_mem=-1, global_positions="true", uniform_blocks=uniform)
    reading = read_document(lm, ids, cfg)
    assert reading.events  # memory was really used
    full = full_attention_logits(lm, ids)
    assert (reading.last_logits - full[-1]).abs().max() < 1e-5
    # every token's surprise comes from the same logits as full attention's
    reference = -torch.log_softmax(full[:-1].double(), -1).gather(-1, ids[1:, None])[:, 0]
    assert (reading.surprise[1:].double() - reference).abs().max() < 1e-4


def test_window_longer_than_the_document_equals_full_attention(lm):
    ids = torch.randint(5, 101, (90,), generator=torch.Generator().manual_seed(3))
    reading = read_document(lm, ids, MemoryConfig(n_local=128))
    assert (reading.last_logits - full_attention_logits(lm, ids)[-1]).abs().max() < 1e-5


def test_one_angle_memory_differs_from_full_attention(lm):
    """The default one-angle global keys are an approximation: not exact."""
    ids = torch.randint(5, 101, (150,), generator=torch.Generator().manual_seed(2))
    reading = read_document(lm, ids, MemoryConfig(n_mem=-1))
    assert (reading.last_logits - full_attention_logits(lm, ids)[-1]).abs().max() > 1e-4


def test_peak_keys_do_not_grow_with_document_length(lm):
    cfg = MemoryConfig(n_mem=64)
    bound = cfg.n_init + cfg.n_local + cfg.chunk + cfg.n_mem + 2 * cfg.max_block
    g = torch.Generator().manual_seed(4)
    short = read_document(lm, torch.randint(5, 101, (200,), generator=g), cfg)
    long = read_document(lm, torch.randint(5, 101, (2000,), generator=g), cfg)
    assert max(long.peak_keys) <= bound and max(short.peak_keys) <= bound
    assert len(long.events) > 5 * len(short.events)


def test_sliding_window_holds_init_and_window_only(lm):
    cfg = MemoryConfig()
    reading = read_document(lm, torch.randint(5, 101, (300,)), cfg, sliding_window=True)
    assert (
        reading.events == [] and max(reading.peak_keys) <= cfg.n_init + cfg.n_local + 2 * cfg.chunk
    )


def test_contiguity_and_refinement_variants_run(lm):
    ids = torch.randint(5, 101, (200,), generator=torch.Generator().manual_seed(5))
    base = MemoryConfig(n_mem=32)
    for refine in (None, "modularity", "conductance"):
        for contiguity in (False, True):
            cfg = dataclasses.replace(base, refine=refine, contiguity=contiguity)
            reading = read_document(lm, ids, cfg)
            assert torch.isfinite(reading.last_logits).all()
            assert all(cfg.min_block <= e - b <= cfg.max_block for b, e in reading.events)


def test_events_are_shared_by_layers_and_retrieval_is_per_layer(lm):
    ids = torch.randint(5, 101, (300,), generator=torch.Generator().manual_seed(6))
    reading = read_document(lm, ids, MemoryConfig(n_mem=32))
    first, second = reading.memories
    assert first.events == second.events


def test_chunks_process_the_last_token_alone():
    assert chunk_spans(20, 8) == [(0, 8), (8, 16), (16, 19), (19, 20)]
    assert chunk_spans(1, 8) == [(0, 1)]


def test_bad_documents_fail_naming_the_limit(lm):
    with pytest.raises(ValueError, match="empty document"):
        read_document(lm, torch.tensor([], dtype=torch.long), MemoryConfig())
    with pytest.raises(ValueError, match="memory.max_tokens=50"):
        read_document(lm, torch.randint(5, 101, (51,)), MemoryConfig(max_tokens=50))
