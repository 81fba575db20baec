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
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from papers.em_llm.config import MemoryConfig
from papers.em_llm.method import (
    contiguity_split,
    form_events,
    representative_key,
    similarity_retrieval,
    update_contiguity_buffer,
)

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
    """

    def __init__(
        self,
        cfg: MemoryConfig,
        rotary: Rotary,
        scaling: float,
        groups: int = 1,
        sliding_window: bool = False,
    ):
        if cfg.global_positions not in ("one_angle", "true"):
            raise ValueError(
                f"global_positions must be one_angle or true, not {cfg.global_positions!r}"
            )
        self.cfg, self.rotary, self.scaling, self.groups = cfg, rotary, scaling, groups
        self.sliding_window = sliding_window
        self.keys: Tensor | None = None  # (H_kv, T, d) un-rotated
        self.values: Tensor | None = None  # (H_kv, T, d)
        self.scores: Tensor | None = None  # (H, T) representative scores
        self.length = 0
        self.init_end = 0  # init tokens are [0, init_end)
        self.rem_start = 0
        self.events: list[tuple[int, int]] = []
        self.representatives: list[Tensor] = []  # (H * d,) each
        self.contiguity_buffer: list[int] = []
        self.retrieved: list[int] = []  # events attended by the last chunk
        self.peak_keys = 0  # most distinct keys held in one chunk's attention
        self._local_cos_sin: tuple[Tensor, Tensor] | None = None

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
        sizes = [e - b for b, e in self.events]
        capacity = self.capacity()
        official = self.cfg.official_contiguity
        fits = capacity  # official +C: "all fit" is tested against the similarity share
        if capacity is not None and self.cfg.contiguity and official:
            fits = contiguity_split(capacity, self.cfg.contiguity_share)[0]
        if capacity is None or sum(sizes) <= fits:
            return list(range(len(self.events)))
        query = self.one_angle_query(q).mean(1).reshape(-1)  # (H * d,), this chunk's queries
        representatives = torch.stack(self.representatives)  # (E, H * d)
        if not self.cfg.contiguity:
            return sorted(similarity_retrieval(query, representatives, sizes, capacity))
        similar_cap, contiguous_cap = contiguity_split(capacity, self.cfg.contiguity_share)
        selected = similarity_retrieval(query, representatives, sizes, similar_cap)
        self.contiguity_buffer = update_contiguity_buffer(
            self.contiguity_buffer, selected, sizes, contiguous_cap, official
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
        cfg = self.cfg
        dtype = q.dtype
        q = q.float()
        if self.keys is None:
            self.keys, self.values = k, v
            self.scores = q.new_zeros(q.shape[0], k.shape[1])
        else:
            self.keys = torch.cat([self.keys, k], dim=1)
            self.values = torch.cat([self.values, v], dim=1)
            self.scores = torch.cat([self.scores, q.new_zeros(q.shape[0], k.shape[1])], dim=1)
        s, e = self.length, self.length + k.shape[1]
        self.length = e
        query_pos = torch.arange(s, e)

        # local part: RoPE at positions inside the buffer [s - n_local, e)
        local_start = max(0, s - cfg.n_local)
        cos, sin = self._local_table(e - local_start)
        local_keys = self._expand(self.keys[:, local_start:e]).float()
        local_logits = rotate(
            q, cos[s - local_start : e - local_start], sin[s - local_start : e - local_start]
        ) @ rotate(local_keys, cos[: e - local_start], sin[: e - local_start]).transpose(
            -1, -2
        )  # (H, c, n_loc)
        distance = query_pos[:, None] - torch.arange(local_start, e)[None, :]
        local_mask = (distance >= 0) & (distance < cfg.n_local)

        # global part: retrieved events + init + remainder older than the window
        self.retrieved = self.retrieve(q)
        ranges = [self.events[i] for i in self.retrieved] + [(0, self.init_end)]
        always = torch.cat([torch.arange(b, e_) for b, e_ in ranges])
        remainder = torch.arange(self.rem_start, e)
        index = torch.cat([always, remainder])
        global_keys = self._expand(self.keys[:, index]).float()  # (H, G, d)
        if cfg.global_positions == "one_angle":
            global_logits = self.one_angle_query(q) @ global_keys.transpose(-1, -2)
        else:  # true positions: exact full attention when nothing is evicted or dropped
            qc, qs = self._cos_sin(query_pos)
            kc, ks = self._cos_sin(index)
            global_logits = rotate(q, qc, qs) @ rotate(global_keys, kc, ks).transpose(-1, -2)
        far = (query_pos[:, None] - remainder[None, :]) >= cfg.n_local
        global_mask = torch.cat([torch.ones(len(query_pos), len(always), dtype=torch.bool), far], 1)

        # one softmax over [global | local]
        logits = torch.cat([global_logits, local_logits], dim=-1) * self.scaling
        mask = torch.cat([global_mask, local_mask], dim=-1)
        probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)  # (H, c, G + L)
        n_global = index.numel()
        values = torch.cat(
            [self._expand(self.values[:, index]), self._expand(self.values[:, local_start:e])], 1
        )
        out = probs @ values.float()
        # representative scores: local attention received, summed over this chunk's queries
        self.scores[:, local_start:e] += probs[..., n_global:].sum(1)
        # distinct keys held (the remainder's columns that overlap the local buffer are the
        # same tokens): init + retrieved events + everything from the remainder start on
        held = always.numel() + e - min(self.rem_start, local_start)
        self.peak_keys = max(self.peak_keys, held)
        return out.to(dtype)

    # ---------------------------------------------------------------- memory formation (Sec. 3.4)

    def update(self, boundaries: list[int]) -> None:
        """Evict tokens that left the local window; store events at the shared ``boundaries``
        (brief Sec. 3.4). Called once per chunk, after the model's forward pass."""
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
            keys = self._expand(self.keys[:, b:e]).float()
            self.representatives.append(
                representative_key(keys, self.scores[:, b:e], cfg.repr_topk)
            )
            self.events.append((b, e))
