"""The official code's rules behind the ``official_*`` options (README "Official quirks"),
each on a hand case, against em-llm/EM-LLM-model @ e911d1f:

(a) threshold window (``context_manager.update_memory``, ``em_llm.py`` refinement path);
(b) surprise alignment (``utils/greedy_search.py``: ``em_labels = input_ids[st+1: ed+1]``);
(c) refinement (``segmentation.events_with_similarity_adjustment``, ``em_llm.py`` offsets);
(d) block formation reads boundaries strictly before the frontier (``update_memory``);
(e) contiguity buffer (``context_manager._update_contiguity_buffer``, ``_calc_topk_blocks``).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from papers.em_llm.config import MemoryConfig, ModelConfig
from papers.em_llm.memory import LayerMemory
from papers.em_llm.method import (
    form_events,
    key_similarity,
    official_threshold_span,
    refine_boundaries,
    surprise_boundaries,
    update_contiguity_buffer,
)
from papers.em_llm.model import (
    attach_memory_attention,
    build_toy_model,
    full_attention_logits,
    read_document,
    refine_chunk_boundaries,
)

NAN = float("nan")
OFFICIAL = {
    "official_threshold": True,
    "official_shift": True,
    "official_refine": True,
    "official_frontier": True,
    "official_contiguity": True,
}


def blocks(*sizes: int) -> torch.Tensor:
    """Block-diagonal graph of ones (zero diagonal) with the given community sizes."""
    a = torch.block_diag(*[torch.ones(n, n, dtype=torch.float64) for n in sizes])
    return a.fill_diagonal_(0)


# ---------------------------------------------------------------- (a) threshold window


def test_first_chunk_threshold_uses_only_its_first_n_init_values():
    # c = 8 > n_init = 4: avg_ed = max(E - c, n_init) = 4 after the chunk is written
    assert official_threshold_span(0, 8, n_local=32, n_init=4, rem_start=0) == (0, 4)
    s = torch.tensor([1.0, 1.0, 0.9, 1.0, 1.3, 1.3, 0.0, 0.0])
    # the first four values are tight: 1.3 is far above them, not above the whole chunk's
    # mean + std (0.81 + 0.53)
    assert surprise_boundaries(s, 0, 8, 1.0, 32, span=(0, 4)) == [4, 5]
    assert surprise_boundaries(s, 0, 8, 1.0, 32, per_chunk=True) == []  # brief: own statistics


def test_refinement_path_first_chunk_uses_all_its_values():
    # em_llm.py: global_remainder_ed <= exc_length -> std / mean of the whole chunk
    assert official_threshold_span(0, 8, 32, 4, 0, before_write=True) == (0, 8)
    assert official_threshold_span(8, 16, 32, 4, 0, before_write=True) == (0, 8)


def test_partial_chunk_window_is_n_local_minus_its_length():
    # steady state: [E - n_local, E - c)
    assert official_threshold_span(96, 104, 32, 4, rem_start=60) == (72, 96)
    # last prefill chunk of c' = 3 tokens: [E - n_local, E - c'), n_local - c' = 29 values
    lo, hi = official_threshold_span(104, 107, 32, 4, rem_start=68)
    assert (lo, hi) == (75, 104) and hi - lo == 32 - 3


def test_chunk_shorter_than_n_init_reads_into_itself():
    # c = 2 < n_init = 4: the second chunk's window [0, 4) holds its own two values
    assert official_threshold_span(2, 4, 32, 4, 0) == (0, 4)


def test_fewer_than_two_window_values_give_no_boundary():
    s = torch.tensor([NAN, 9.0, 0.1, 0.1])
    assert surprise_boundaries(s, 0, 4, 1.0, 8, span=(0, 2)) == []


# ---------------------------------------------------------------- (b) shift alignment


def test_official_shift_moves_chunk_membership_by_one():
    # a surprising token 8 right after chunk [0, 8): officially position 7 holds s_8, so the
    # boundary 7 is placed while reading chunk [0, 8), with that chunk's window
    s = torch.tensor([NAN] + [1.0] * 7 + [9.0] + [1.0] * 4)
    assert surprise_boundaries(s, 0, 8, 1.0, 4, official_shift=True) == [7]
    assert surprise_boundaries(s, 0, 8, 1.0, 4) == []  # paper alignment: not in this chunk
    assert surprise_boundaries(s, 8, 12, 1.0, 4) == [8]
    # and the next chunk no longer sees it
    assert surprise_boundaries(s, 8, 12, 1.0, 4, official_shift=True) == []
    # the window shifts too: position t's past holds s_{t-w+1} .. s_t
    shifted = torch.cat([s[1:], torch.tensor([NAN])])
    for start, end in [(0, 8), (4, 12), (8, 13)]:
        got = surprise_boundaries(s, start, end, 1.0, 4, per_chunk=True, official_shift=True)
        assert got == surprise_boundaries(shifted, start, end, 1.0, 4, per_chunk=True)


def test_official_shift_can_mark_position_zero():
    s = torch.tensor([NAN, 9.0, 1.0, 1.0, 1.0, 1.0])
    assert surprise_boundaries(s, 0, 5, 1.0, 4, span=(1, 5), official_shift=True) == [0]


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    return attach_memory_attention(build_toy_model(ModelConfig()).eval())


@pytest.mark.usefixtures("one_thread")
def test_official_surprise_comes_from_the_chunk_own_logits(lm):
    """Labels input_ids[s + 1: e + 1]: every prompt token's surprise, none after the prompt."""
    ids = torch.randint(5, 101, (60,), generator=torch.Generator().manual_seed(1))
    reading = read_document(lm, ids, MemoryConfig(n_local=128, official_shift=True))
    full = full_attention_logits(lm, ids)
    reference = -torch.log_softmax(full[:-1].double(), -1).gather(-1, ids[1:, None])[:, 0]
    assert torch.isnan(reading.surprise[0])
    assert (reading.surprise[1:].double() - reference).abs().max() < 1e-4


# ---------------------------------------------------------------- (c) refinement


def test_official_prefilter_compares_with_the_original_predecessor():
    a = key_similarity(torch.randn(1, 1, 24, 4, generator=torch.Generator().manual_seed(0)))
    # 7 - 5 < 4 drops 7; 9 - 7 < 4 drops 9 (brief: 9 - 5 >= 4 keeps it)
    assert len(refine_boundaries(a, [5, 7, 9], 4, offset=0)) == 1
    assert len(refine_boundaries(a, [5, 7, 9], 4)) == 2


def test_official_first_boundary_below_min_block():
    a = blocks(6, 6)
    # no prefix (offset 0): kept and not refined; brief: dropped
    assert refine_boundaries(a, [2, 9], 4, offset=0)[0] == 2
    assert len(refine_boundaries(a, [2, 9], 4)) == 1
    # with a prefix: dropped
    assert refine_boundaries(a, [2, 9], 4, offset=1) == refine_boundaries(a, [9], 4, offset=1)


def test_official_refinement_never_moves_into_the_previous_chunk_tail():
    # graph over [prefix, end): the previous chunk's tail is 3 tokens (offset 3), the best
    # split of the window lies at 2, inside that tail
    a = blocks(2, 6)
    assert refine_boundaries(a, [7], 2) == [2]  # brief: moved back into the tail
    official = refine_boundaries(a, [7], 2, offset=3)
    assert official[0] >= 3 + 2  # never before offset + min_block
    # a boundary within min_block of the chunk start is kept as it is
    assert refine_boundaries(a, [6], 4, offset=3) == [6]


def test_official_refine_prefix_is_the_previous_chunk_tail_only():
    keys = torch.randn(2, 64, 4, generator=torch.Generator().manual_seed(3))
    cfg = MemoryConfig(refine="modularity", official_refine=True, min_block=2)

    def memory(rem_start):
        return SimpleNamespace(keys=keys, length=48, rem_start=rem_start)

    def expected(prefix):
        a = key_similarity(keys[None, :, prefix:48])
        return [b + prefix for b in refine_boundaries(a, [44 - prefix], 2, offset=32 - prefix)]

    # last boundary (20) inside the previous c' = 16 tokens [16, 32): prefix 20
    got = refine_chunk_boundaries([memory(0)], cfg, [3, 20], [44], 32)
    assert got == expected(20)
    # the last boundary is older than the previous chunk: no prefix (brief: from 3)
    assert refine_chunk_boundaries([memory(0)], cfg, [3], [44], 32) == expected(32)
    # remainder shorter than 2 c': no prefix
    assert refine_chunk_boundaries([memory(24)], cfg, [3, 20], [44], 32) == expected(32)


# ---------------------------------------------------------------- (d) frontier


def test_boundary_at_the_frontier_waits_one_update():
    assert form_events(0, 20, [8, 20], 4, 16) == ([(0, 8), (8, 20)], 20)  # brief: b <= frontier
    events, rest = form_events(0, 20, [8, 20], 4, 16, strict_frontier=True)
    assert (events, rest) == ([(0, 8)], 8)
    assert form_events(rest, 28, [8, 20], 4, 16, strict_frontier=True) == ([(8, 20)], 20)


# ---------------------------------------------------------------- (e) contiguity buffer


def test_official_buffer_reverses_the_new_neighbours():
    sizes = [4] * 6
    assert update_contiguity_buffer([], [2], sizes, 8) == [3, 1]
    assert update_contiguity_buffer([], [2], sizes, 8, official=True) == [1, 3]


def test_official_buffer_fit_is_strict_and_keeps_old_entries():
    sizes = [4] * 6
    # old [3] (now selected) + new {4, 2}: 4 + 8 = 12 < 13 -> appended as is (3 stays)
    assert update_contiguity_buffer([3], [3], sizes, 13, official=True) == [3, 2, 4]
    # 12 < 12 fails -> replaced; the stale 3 is not re-added
    assert update_contiguity_buffer([3], [3], sizes, 12, official=True) == [2, 4]
    # brief: old entries that are selected are dropped, <= fits
    assert update_contiguity_buffer([3], [3], sizes, 13) == [4, 2]


def test_official_full_buffer_is_replaced_without_re_adding():
    sizes = [1, 4, 6, 4, 4, 4]
    # neighbours of 3: 4 (4 tokens), then 2 (6): 10 crosses 7 and is dropped (3 vs 3) ->
    # the walk is full, the buffer becomes [4] alone
    assert update_contiguity_buffer([0], [3], sizes, 7, official=True) == [4]
    assert update_contiguity_buffer([0], [3], sizes, 7) == [0, 4]  # brief: 0 re-added


def test_official_re_adding_stops_at_the_first_crossing():
    sizes = [2, 5, 2, 4, 4, 4, 4]
    # neighbours of 5 are 6 and 4 (8 tokens, the cap 12 not reached); old [0, 1, 2] (9 more)
    # does not fit: re-add 2 (10), then 1 crosses (15: |12 - 10| <= |15 - 12|, dropped) and
    # the walk stops, so 0 is not tried (brief: 1 is skipped, 0 still fits)
    assert update_contiguity_buffer([0, 1, 2], [5], sizes, 12, official=True) == [2, 4, 6]
    assert update_contiguity_buffer([0, 1, 2], [5], sizes, 12) == [0, 2, 6, 4]


def test_official_all_fit_test_uses_the_similarity_share():
    def memory(official):
        cfg = MemoryConfig(n_mem=20, contiguity=True, official_contiguity=official)
        m = LayerMemory(cfg, lambda pos: (torch.ones(len(pos), 2), torch.zeros(len(pos), 2)), 1.0)
        for i in range(4):  # 16 tokens: <= 20 but > 20 - 7
            m.add_event(4 * i, 4 * i + 4, torch.tensor([float(i), 0.0]))
        return m

    q = torch.ones(1, 1, 2)
    brief, official = memory(False), memory(True)
    assert brief.retrieve(q) == [0, 1, 2, 3] and brief.contiguity_buffer == []
    assert official.retrieve(q) == [0, 1, 2, 3]  # top 3 by similarity + neighbour 0
    assert official.contiguity_buffer == [0]


# ---------------------------------------------------------------- every option runs


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("variant", ["S", "SM", "S+C", "SM+C"])
def test_official_options_run_in_every_variant(lm, variant):
    ids = torch.randint(5, 101, (230,), generator=torch.Generator().manual_seed(7))
    cfg = MemoryConfig(
        n_mem=32,
        threshold_per_chunk=True,
        refine="conductance" if "M" in variant else None,
        contiguity="C" in variant,
        **OFFICIAL,
    )
    reading = read_document(lm, ids, cfg, max_new_tokens=3)
    assert torch.isfinite(reading.last_logits).all() and reading.events
    assert all(cfg.min_block <= e - b <= cfg.max_block for b, e in reading.events)
    assert len(reading.generated) <= 3
    # no surprise (hence no boundary) for the last prompt token or the generated ones
    assert torch.isnan(reading.surprise[ids.numel() :]).all()
    assert dataclasses.replace(cfg, **{k: False for k in OFFICIAL}) == MemoryConfig(
        n_mem=32,
        threshold_per_chunk=True,
        refine=cfg.refine,
        contiguity=cfg.contiguity,
    )
