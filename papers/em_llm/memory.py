"""The per-layer episodic memory and its chunked attention (paper Sec. 3.1 and 3.4, brief
Sec. 3.1, 3.4, 3.5).

One :class:`LayerMemory` per attention layer keeps, for one document:

* the un-rotated keys and the values of every token seen (positions are assigned when used);
  the index ranges below say which of them take part in attention;
* ``init``: the first n_init tokens ever evicted from the local window (kept forever);
* ``events``: [begin, end) ranges formed from evicted tokens at the shared boundaries, each with
  a representative key;
* the ``remainder``: tokens from ``rem_start`` on that are not (yet) in an event; the part
  that is at least n_local older than a query is attended globally;
* representative scores: the local attention each token received while in the window.

Attention of a chunk [s, e) (brief Sec. 3.1): local keys [s - n_local, e) with RoPE at their
positions inside that buffer and the mask 0 <= i - j < n_local; global keys = retrieved events
(temporal order) + init + the remainder with the mask i - j >= n_local, all at one relative
distance (query rotated at position n_local - 1, keys not rotated; ``global_positions="true"``
rotates both at their true positions instead); one softmax over [global | local] logits.

Cost (``benchmark.py``): keys, values, scores and representative keys live in buffers that
grow by doubling (no copy of the whole memory per chunk); the remainder columns that no query
of the chunk can attend (the last n_local) are not computed, in whole groups of 8 so the
softmax's vector sums and the toy's metrics stay bit-identical; retrieval ranks only the
top ``capacity // min_size + 1`` events (the nearest-capacity walk never reads further).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from papers.em_llm.config import GLOBAL_POSITIONS, MemoryConfig
from papers.em_llm.method import (
    contiguity_split,
    form_events,
    representative_key,
    similarity_retrieval,
    update_contiguity_buffer,
)

LANES = 8  # float lanes of the softmax's vector sums (AVX2): masked columns dropped in 8s
MIN_COLUMNS = 16  # global logit columns always computed (see LayerMemory.attend)

# positions (n,) -> (cos, sin), each (n, d): the base model's own rotary embedding
Rotary = Callable[[Tensor], tuple[Tensor, Tensor]]


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """RoPE as Llama applies it: x cos + rotate_half(x) sin. x (H, n, d); cos, sin (n, d)."""
    half = x.shape[-1] // 2
    rotated_half = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated_half * sin


class LayerMemory:
    """Episodic memory of one attention layer for one document.

    Args:
        cfg: the memory's settings (brief Sec. 3.6).
        rotary: the base model's rotary embedding as a function of positions.
        scaling: the attention's logit scale (1 / sqrt(d)).
        groups: query heads per KV head (GQA); keys are expanded to query heads when used.
        sliding_window: the sliding-window baseline: evicted tokens beyond the init tokens are
            dropped instead of stored.
        reserve_tokens: how many tokens the document will bring (prompt plus generation) when
            the reader knows it: the key, value and score storage is allocated once at that
            size, so reading a long document never holds an old and a doubled copy at once
            (0: unknown, grown by doubling).
    """

    def __init__(
        self,
        cfg: MemoryConfig,
        rotary: Rotary,
        scaling: float,
        groups: int = 1,
        sliding_window: bool = False,
        reserve_tokens: int = 0,
    ):
        if cfg.global_positions not in GLOBAL_POSITIONS:
            raise ValueError(
                f"global_positions must be one_angle or true, not {cfg.global_positions!r}"
            )
        self.cfg, self.rotary, self.scaling, self.groups = cfg, rotary, scaling, groups
        self.sliding_window = sliding_window
        self.reserve_tokens = reserve_tokens
        self._keys: Tensor | None = None  # (H_kv, capacity, d) un-rotated; first `length` used
        self._values: Tensor | None = None  # (H_kv, capacity, d)
        self._scores: Tensor | None = None  # (H, capacity) representative scores
        self.length = 0
        self.init_end = 0  # init tokens are [0, init_end)
        self.rem_start = 0
        self.events: list[tuple[int, int]] = []
        self.sizes: list[int] = []  # event sizes (e - b)
        self.stored = 0  # tokens in events: sum(sizes)
        self.min_size = 0  # smallest event
        self._reps: Tensor | None = None  # (capacity, H * d) representative keys
        self.contiguity_buffer: list[int] = []
        self.retrieved: list[int] = []  # events attended by the last chunk
        self.peak_keys = 0  # most distinct keys held in one chunk's attention
        self._local_cos_sin: tuple[Tensor, Tensor] | None = None
        self._local_masks: dict[tuple[int, int], Tensor] = {}

    # ---------------------------------------------------------------- storage

    @property
    def keys(self) -> Tensor | None:
        """(H_kv, T, d) un-rotated keys of every token read."""
        return None if self._keys is None else self._keys[:, : self.length]

    @property
    def values(self) -> Tensor | None:
        return None if self._values is None else self._values[:, : self.length]

    @property
    def scores(self) -> Tensor | None:
        """(H, T) representative scores (local attention received)."""
        return None if self._scores is None else self._scores[:, : self.length]

    @property
    def storage_bytes(self) -> int:
        """Bytes allocated for keys, values, scores and representative keys (capacity, not
        only the part in use): what this layer's memory holds in RAM."""
        buffers = (self._keys, self._values, self._scores, self._reps)
        return sum(b.numel() * b.element_size() for b in buffers if b is not None)

    @property
    def representatives(self) -> Tensor:
        """(E, H * d) representative keys of the stored events."""
        if self._reps is None:
            return torch.zeros(0, 0)
        return self._reps[: len(self.events)]

    @staticmethod
    def _grown(
        buffer: Tensor | None, used: int, needed: int, shape, dim: int, dtype, reserve: int = 0
    ) -> Tensor:
        """``buffer`` (``shape`` with any size along ``dim``) with room for ``needed``
        entries along ``dim``: allocated at ``reserve`` entries when that is known, doubled
        when short; its first ``used`` entries kept."""
        if buffer is not None and buffer.shape[dim] >= needed:
            return buffer
        full = list(shape)
        full[dim] = max(needed, reserve, 2 * (0 if buffer is None else buffer.shape[dim]), 64)
        grown = torch.zeros(full, dtype=dtype)
        if buffer is not None and used:
            grown.narrow(dim, 0, used).copy_(buffer.narrow(dim, 0, used))
        return grown

    def _append(self, k: Tensor, v: Tensor, heads: int) -> None:
        """Store a chunk's un-rotated keys, values and zero scores."""
        used, end = self.length, self.length + k.shape[1]
        shape = (k.shape[0], 0, k.shape[2])
        reserve = self.reserve_tokens
        self._keys = self._grown(self._keys, used, end, shape, 1, k.dtype, reserve)
        self._values = self._grown(self._values, used, end, shape, 1, v.dtype, reserve)
        self._scores = self._grown(self._scores, used, end, (heads, 0), 1, torch.float32, reserve)
        self._keys[:, used:end] = k
        self._values[:, used:end] = v
        self._scores[:, used:end] = 0.0
        self.length = end

    def add_event(self, begin: int, end: int, representative: Tensor) -> None:
        """Store event [begin, end) with its (H * d,) representative key."""
        count = len(self.events)
        self._reps = self._grown(
            self._reps, count, count + 1, (0, representative.numel()), 0, representative.dtype
        )
        self._reps[count] = representative
        self.events.append((begin, end))
        self.sizes.append(end - begin)
        self.stored += end - begin
        self.min_size = end - begin if count == 0 else min(self.min_size, end - begin)

    # ---------------------------------------------------------------- helpers

    def _expand(self, x: Tensor) -> Tensor:
        """(H_kv, ...) -> (H, ...) for grouped-query attention."""
        return x if self.groups == 1 else x.repeat_interleave(self.groups, dim=0)

    def _cos_sin(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        cos, sin = self.rotary(positions)
        return cos.float(), sin.float()

    def _local_table(self, n: int) -> tuple[Tensor, Tensor]:
        """cos / sin of buffer positions 0..n-1 (cached: the buffer never exceeds
        n_local + chunk, and position n_local - 1 is the one global angle)."""
        size = max(n, self.cfg.n_local)
        if self._local_cos_sin is None or self._local_cos_sin[0].shape[0] < size:
            self._local_cos_sin = self._cos_sin(torch.arange(size))
        return self._local_cos_sin

    def _local_blocked(self, offset: int, width: int, chunk: int) -> Tensor:
        """(c, width) True where the local mask 0 <= i - j < n_local fails; queries sit at
        buffer positions offset..offset + c - 1 (cached: it depends on these three only)."""
        key = (offset, width)
        if key not in self._local_masks:
            distance = torch.arange(offset, offset + chunk)[:, None] - torch.arange(width)[None]
            self._local_masks[key] = (distance < 0) | (distance >= self.cfg.n_local)
        return self._local_masks[key]

    def one_angle_query(self, q: Tensor) -> Tensor:
        """Queries rotated at position n_local - 1: every global key sits at one distance."""
        cos, sin = self._local_table(self.cfg.n_local)
        n = self.cfg.n_local - 1
        return rotate(q, cos[n : n + 1], sin[n : n + 1])

    def capacity(self) -> int | None:
        return None if self.cfg.n_mem < 0 else self.cfg.n_mem

    # ---------------------------------------------------------------- retrieval (Sec. 3.5)

    def retrieve(self, q: Tensor) -> list[int]:
        """Events this chunk attends (brief Sec. 3.5), in temporal order. q: (H, c, d)."""
        if not self.events:
            return []
        capacity = self.capacity()
        official = self.cfg.official_contiguity
        fits = capacity  # official +C: "all fit" is tested against the similarity share
        if capacity is not None and self.cfg.contiguity and official:
            fits = contiguity_split(capacity, self.cfg.contiguity_share)[0]
        if capacity is None or self.stored <= fits:
            return list(range(len(self.events)))
        query = self.one_angle_query(q).mean(1).reshape(-1)  # (H * d,), this chunk's queries
        representatives = self.representatives  # (E, H * d)
        if not self.cfg.contiguity:
            return sorted(
                similarity_retrieval(
                    query, representatives, self.sizes, capacity, self.stored, self.min_size
                )
            )
        similar_cap, contiguous_cap = contiguity_split(capacity, self.cfg.contiguity_share)
        selected = similarity_retrieval(
            query, representatives, self.sizes, similar_cap, self.stored, self.min_size
        )
        self.contiguity_buffer = update_contiguity_buffer(
            self.contiguity_buffer, selected, self.sizes, contiguous_cap, official
        )
        # a set: an official stale buffer entry also selected is not loaded twice (README)
        return sorted(set(selected) | set(self.contiguity_buffer))

    # ---------------------------------------------------------------- attention (Sec. 3.1)

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Attention of the next chunk; stores its keys / values (un-rotated).

        Args:
            q: (H, c, d) un-rotated queries; k, v: (H_kv, c, d) un-rotated keys, values.

        Returns:
            (H, c, d) attention output (before the output projection).
        """
        if not self.cfg.exact_order:
            return self.attend_fast(q, k, v)
        cfg = self.cfg
        dtype = q.dtype
        q = q.float()
        self._append(k, v, q.shape[0])
        s = self.length - k.shape[1]
        e = self.length
        keys, values = self._keys, self._values

        # local part: RoPE at positions inside the buffer [s - n_local, e)
        local_start = max(0, s - cfg.n_local)
        width = e - local_start
        cos, sin = self._local_table(width)
        local_keys = self._expand(keys[:, local_start:e]).float()
        offset = s - local_start
        local_logits = rotate(q, cos[offset : offset + e - s], sin[offset : offset + e - s]) @ (
            rotate(local_keys, cos[:width], sin[:width]).transpose(-1, -2)
        )  # (H, c, n_loc)

        # global part: retrieved events + init + the remainder older than the window. The
        # remainder's last min(n_local, e - rem_start) tokens are masked for every query of
        # the chunk (i - j < n_local): they are dropped in whole groups of LANES, so every
        # kept logit keeps its lane in the softmax's vector sums (exact zeros dropped).
        self.retrieved = self.retrieve(q)
        ranges = [self.events[i] for i in self.retrieved] + [(0, self.init_end)]
        always = torch.cat([torch.arange(b, e_) for b, e_ in ranges])
        unseen = min(cfg.n_local, e - self.rem_start)
        # at least MIN_COLUMNS global columns stay: a narrower product (MKL's small-matrix
        # path) sums each logit in another order
        n_full = always.numel() + e - self.rem_start
        dropped = min(unseen, max(0, n_full - MIN_COLUMNS)) // LANES * LANES
        remainder = torch.arange(self.rem_start, e - dropped)
        index = torch.cat([always, remainder])
        global_keys = self._expand(keys[:, index]).float()  # (H, G, d)
        query_pos = None
        if cfg.global_positions == "one_angle":
            global_logits = self.one_angle_query(q) @ global_keys.transpose(-1, -2)
        else:  # true positions: exact full attention when nothing is evicted or dropped
            query_pos = torch.arange(s, e)
            qc, qs = self._cos_sin(query_pos)
            kc, ks = self._cos_sin(index)
            global_logits = rotate(q, qc, qs) @ rotate(global_keys, kc, ks).transpose(-1, -2)

        # one softmax over [global | local]
        logits = torch.cat([global_logits, local_logits], dim=-1) * self.scaling
        n_always, n_global = always.numel(), index.numel()
        if remainder.numel():
            far = torch.arange(s, e)[:, None] - remainder[None, :] < cfg.n_local  # blocked
            logits[..., n_always:n_global].masked_fill_(far, float("-inf"))
        logits[..., n_global:].masked_fill_(
            self._local_blocked(offset, width, e - s), float("-inf")
        )
        probs = torch.softmax(logits, dim=-1)  # (H, c, G + L)
        # the value product at the full width (dropped columns: probability and value 0), so
        # the matrix product sums in the order of the full computation (bit-identical)
        heads, chunk = probs.shape[:2]
        padded = probs.new_zeros(heads, chunk, probs.shape[-1] + dropped)
        padded[..., :n_global] = probs[..., :n_global]
        padded[..., n_global + dropped :] = probs[..., n_global:]
        values = torch.cat(
            [
                self._expand(values[:, index]),
                values.new_zeros(heads, dropped, values.shape[-1]),
                self._expand(values[:, local_start:e]),
            ],
            1,
        )
        out = padded @ values.float()
        # representative scores: local attention received, summed over this chunk's queries
        self._scores[:, local_start:e] += probs[..., n_global:].sum(1)
        # distinct keys held (the remainder's columns that overlap the local buffer are the
        # same tokens): init + retrieved events + everything from the remainder start on
        held = n_always + e - min(self.rem_start, local_start)
        self.peak_keys = max(self.peak_keys, held)
        return out.to(dtype)

    def attend_fast(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """:meth:`attend` computing only what a query can see (``memory.exact_order=false``).

        The same attention (brief Sec. 3.1), in another summation order: the global part holds
        init + retrieved events + only the remainder tokens some query of the chunk sees
        (j <= e - 1 - n_local); grouped-query products run per KV head on the queries of its
        group, so keys and values are never copied per query head; the one softmax over
        [global | local] is formed from the two parts' exponentials under a shared row
        maximum, without concatenating them.
        """
        cfg = self.cfg
        dtype = q.dtype
        q = q.float()
        heads, chunk, dim = q.shape
        kv_heads = heads // self.groups
        self._append(k, v, heads)
        s, e = self.length - chunk, self.length

        def grouped(x: Tensor) -> Tensor:  # (H, c, n) -> (H_kv, groups * c, n)
            return x.reshape(kv_heads, self.groups * chunk, x.shape[-1])

        scaled = q * self.scaling  # the logit scale folded into the (small) queries
        # local part: RoPE at positions inside the buffer [s - n_local, e)
        local_start = max(0, s - cfg.n_local)
        width = e - local_start
        offset = s - local_start
        cos, sin = self._local_table(width)
        local_keys = rotate(self._keys[:, local_start:e].float(), cos[:width], sin[:width])
        local_queries = rotate(scaled, cos[offset : offset + chunk], sin[offset : offset + chunk])
        local_logits = torch.bmm(grouped(local_queries), local_keys.transpose(-1, -2))
        local_logits = local_logits.view(heads, chunk, width)
        local_logits.masked_fill_(self._local_blocked(offset, width, chunk), float("-inf"))

        # global part: retrieved events + init + the remainder older than the window
        self.retrieved = self.retrieve(q)
        ranges = [self.events[i] for i in self.retrieved] + [(0, self.init_end)]
        ranges.append((self.rem_start, max(self.rem_start, e - cfg.n_local)))
        index = torch.cat([torch.arange(b, e_) for b, e_ in ranges])
        n_always = index.numel() - (ranges[-1][1] - ranges[-1][0])
        row_max = local_logits.amax(-1, keepdim=True)
        global_logits = None
        if index.numel():
            global_keys = self._keys[:, index].float()  # (H_kv, G, d)
            if cfg.global_positions == "one_angle":
                global_queries = self.one_angle_query(scaled)
            else:  # true positions: exact full attention when nothing is evicted
                qc, qs = self._cos_sin(torch.arange(s, e))
                kc, ks = self._cos_sin(index)
                global_queries = rotate(scaled, qc, qs)
                global_keys = rotate(global_keys, kc, ks)
            global_logits = torch.bmm(grouped(global_queries), global_keys.transpose(-1, -2))
            global_logits = global_logits.view(heads, chunk, -1)
            remainder = index[n_always:]
            if remainder.numel():  # query i sees remainder token j iff i - j >= n_local
                far = torch.arange(s, e)[:, None] - remainder[None, :] < cfg.n_local
                global_logits[..., n_always:].masked_fill_(far, float("-inf"))
            row_max = torch.maximum(row_max, global_logits.amax(-1, keepdim=True))
        local_probs = local_logits.sub_(row_max).exp_()  # unnormalised, in place
        total = local_probs.sum(-1, keepdim=True)  # (H, c, 1)
        out = torch.bmm(grouped(local_probs), self._values[:, local_start:e].float())
        if global_logits is not None:
            global_probs = global_logits.sub_(row_max).exp_()
            total += global_probs.sum(-1, keepdim=True)
            out += torch.bmm(grouped(global_probs), self._values[:, index].float())
        inverse = total.reciprocal_()  # (H, c, 1)
        out = out.view(heads, chunk, dim) * inverse
        # representative scores: local attention received, summed over this chunk's queries
        # (sum_i p_ij / total_i as one product)
        self._scores[:, local_start:e] += torch.bmm(inverse.transpose(1, 2), local_probs)[:, 0]
        held = n_always + e - min(self.rem_start, local_start)
        self.peak_keys = max(self.peak_keys, held)
        return out.to(dtype)

    # ---------------------------------------------------------------- memory formation (Sec. 3.4)

    def update(self, boundaries: list[int]) -> None:
        """Evict tokens that left the local window; store events at the shared ``boundaries``
        (brief Sec. 3.4; only those after ``rem_start`` matter). Called once per chunk, after
        the model's forward pass."""
        cfg = self.cfg
        frontier = self.length - cfg.n_local
        if frontier <= 0:
            return
        self.init_end = min(cfg.n_init, frontier)
        self.rem_start = max(self.rem_start, self.init_end)
        if self.sliding_window:  # no memory: evicted tokens beyond init are dropped
            self.rem_start = max(self.rem_start, frontier)
            return
        events, self.rem_start = form_events(
            self.rem_start,
            frontier,
            boundaries,
            cfg.min_block,
            cfg.max_block,
            cfg.uniform_blocks,
            cfg.official_frontier,
        )
        for b, e in events:
            keys = self._expand(self._keys[:, b:e]).float()
            self.add_event(b, e, representative_key(keys, self._scores[:, b:e], cfg.repr_topk))
