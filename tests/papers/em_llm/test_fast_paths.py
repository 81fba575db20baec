"""The fast paths of the memory (benchmark issue): the attention that skips the remainder
columns no query can attend equals the full-width computation bit for bit; the top-k
retrieval order equals a full stable sort's; the benchmark runs at its smallest size."""

from __future__ import annotations

import json

import pytest
import torch

from papers.em_llm.config import MemoryConfig
from papers.em_llm.memory import LayerMemory, rotate
from papers.em_llm.method import similarity_retrieval, top_order

pytestmark = pytest.mark.usefixtures("one_thread")


class ReferenceMemory(LayerMemory):
    """The attention as first written: every remainder column computed, then masked."""

    def attend(self, q, k, v):
        cfg = self.cfg
        q = q.float()
        self._append(k, v, q.shape[0])
        s, e = self.length - k.shape[1], self.length
        query_pos = torch.arange(s, e)
        local_start = max(0, s - cfg.n_local)
        cos, sin = self._local_table(e - local_start)
        local_keys = self._expand(self.keys[:, local_start:e]).float()
        offset = s - local_start
        local_logits = rotate(q, cos[offset : offset + e - s], sin[offset : offset + e - s]) @ (
            rotate(local_keys, cos[: e - local_start], sin[: e - local_start]).transpose(-1, -2)
        )
        distance = query_pos[:, None] - torch.arange(local_start, e)[None, :]
        local_mask = (distance >= 0) & (distance < cfg.n_local)
        self.retrieved = self.retrieve(q)
        ranges = [self.events[i] for i in self.retrieved] + [(0, self.init_end)]
        always = torch.cat([torch.arange(b, e_) for b, e_ in ranges])
        remainder = torch.arange(self.rem_start, e)
        index = torch.cat([always, remainder])
        global_keys = self._expand(self.keys[:, index]).float()
        global_logits = self.one_angle_query(q) @ global_keys.transpose(-1, -2)
        far = (query_pos[:, None] - remainder[None, :]) >= cfg.n_local
        ones = torch.ones(len(query_pos), len(always), dtype=torch.bool)
        mask = torch.cat([ones, far, local_mask], 1)
        logits = torch.cat([global_logits, local_logits], dim=-1) * self.scaling
        probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)
        n_global = index.numel()
        values = torch.cat(
            [self._expand(self.values[:, index]), self._expand(self.values[:, local_start:e])], 1
        )
        self.scores[:, local_start:e] += probs[..., n_global:].sum(1)
        held = always.numel() + e - min(self.rem_start, local_start)
        self.peak_keys = max(self.peak_keys, held)
        return probs @ values.float()


def rotary(positions):
    angles = positions[:, None].float() * torch.logspace(0, -3, 8)[None]
    angles = torch.cat([angles, angles], -1)
    return angles.cos(), angles.sin()


@pytest.mark.parametrize(
    "cfg",
    [
        MemoryConfig(),  # the toy: c = 8, n_local = 32, n_mem = 64
        MemoryConfig(chunk=64, n_init=8, n_local=128, n_mem=96, min_block=8, max_block=32),
        MemoryConfig(chunk=48, n_local=16, n_mem=32, contiguity=True),
    ],
)
def test_fast_attend_equals_the_full_width_computation(cfg):
    fast, reference = LayerMemory(cfg, rotary, 0.25), ReferenceMemory(cfg, rotary, 0.25)
    g = torch.Generator().manual_seed(0)
    boundaries: list[int] = []
    for _ in range(24):
        q, k, v = (torch.randn(4, cfg.chunk, 16, generator=g) for _ in range(3))
        assert torch.equal(fast.attend(q, k, v), reference.attend(q, k, v))
        assert fast.retrieved == reference.retrieved
        start = fast.length - cfg.chunk
        boundaries += sorted(torch.randperm(cfg.chunk, generator=g)[:3].add(start).tolist())
        fast.update(boundaries)
        reference.update(boundaries)
    assert torch.equal(fast.scores, reference.scores) and fast.events == reference.events
    assert fast.peak_keys == reference.peak_keys and fast.events


def test_storage_reserved_for_the_document_is_allocated_once_with_the_same_outputs():
    """issue 44: with the document's length known, keys, values and scores are allocated once
    at that size (no doubled copy beside the old one while reading) and every output equals
    the doubling storage's bit for bit."""
    cfg = MemoryConfig(chunk=64, n_init=8, n_local=128, n_mem=96, min_block=8, max_block=32)
    chunks = 40
    reserved = LayerMemory(cfg, rotary, 0.25, reserve_tokens=chunks * cfg.chunk)
    doubling = LayerMemory(cfg, rotary, 0.25)
    g = torch.Generator().manual_seed(0)
    boundaries: list[int] = []
    addresses = set()
    for _ in range(chunks):
        q, k, v = (torch.randn(4, cfg.chunk, 16, generator=g) for _ in range(3))
        assert torch.equal(reserved.attend(q, k, v), doubling.attend(q, k, v))
        addresses.add(reserved.keys.data_ptr())
        start = reserved.length - cfg.chunk
        boundaries += sorted(torch.randperm(cfg.chunk, generator=g)[:3].add(start).tolist())
        reserved.update(boundaries)
        doubling.update(boundaries)
    assert len(addresses) == 1  # never reallocated
    assert torch.equal(reserved.scores, doubling.scores) and reserved.events == doubling.events
    tokens = chunks * cfg.chunk
    per_token = 2 * 4 * 16 * 4 + 4 * 4  # keys and values (4 heads x 16 dims), scores, float32
    reps = reserved._reps.numel() * 4  # representative keys: (E, H * d) rows, still doubling
    assert reserved.storage_bytes == tokens * per_token + reps
    assert doubling.storage_bytes > reserved.storage_bytes  # doubled past the document's end


def test_top_order_is_a_prefix_of_the_stable_sort():
    g = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 20, (500,), generator=g).float()  # many ties
    full = scores.argsort(descending=True, stable=True).tolist()
    for k in (1, 7, 60, 499, 500):
        order = top_order(scores, k)
        assert len(order) >= k and order == full[: len(order)]


def test_ranked_retrieval_equals_the_full_ranking():
    g = torch.Generator().manual_seed(1)
    reps, query = torch.randn(300, 8, generator=g), torch.randn(8, generator=g)
    sizes = torch.randint(4, 17, (300,), generator=g).tolist()
    for capacity in (5, 64, 200):
        assert similarity_retrieval(query, reps, sizes, capacity) == similarity_retrieval(
            query, reps, sizes, capacity, sum(sizes), min(sizes)
        )


def test_benchmark_runs_at_its_smallest_size(tmp_path):
    from papers.em_llm import benchmark

    out = tmp_path / "benchmark.json"
    benchmark.main(
        [
            "--lengths=512",
            "--passkey-lengths=512",
            "--passkey-docs=1",
            "--official-length=600",
            "--repeats=1",
            "--train-steps=2",
            "--real-length=200",
            f"--out={out}",
        ]
    )
    record = json.loads(out.read_text())
    row = record["results"]["sweep"][0]
    assert {"em_llm", "infllm", "full"} <= set(row)
    assert row["em_llm"]["keys_held_per_layer"] > 0
    assert row["em_llm"]["payload_mib"] > 0 and row["em_llm"]["model_mib"] > 0
    assert row["em_llm"]["peak_over_payload_plus_model"] > 0
    assert out.with_suffix(".png").is_file()
    real = record["results"]["real_model"]  # None where SmolLM2 is not fetched
    if real is not None:
        assert {"em_llm", "sliding_window", "full"} <= set(real)
        assert real["em_llm"]["tokens_per_s"] > 0 and real["length"] <= 200
