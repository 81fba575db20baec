"""MatryoshkaKV on a Hugging Face Llama (or Mistral): compressed attention and a real compressed
KV cache (brief Sec. 3.1, 3.2).

- :func:`attach_projections` swaps every decoder layer's ``self_attn`` for a
  :class:`MatryoshkaAttention` that reuses the layer's q/k/v/o weights and reads one
  :class:`~papers.matryoshka_kv.method.KVProjections` (registered as ``model.kv_projections``).
- Ranks per (layer, KV head) are set with :func:`set_ranks` (default: full rank d).
- The KV cache stores ONLY the compressed coordinates: a :class:`CompressedLayer` keeps, per
  token, head h's first r_K,h key coordinates (heads concatenated: (B, T, sum_h r_K,h)) and
  likewise for values. Ranks may differ per head; nothing is zero-padded in storage (padding
  to r_max happens only transiently when attending).

How generation uses the compressed cache: a ``MatryoshkaAttention`` never writes full keys or
values to any cache. Given a :class:`CompressedCache` it appends to its layer; given a
``DynamicCache`` (what ``model.generate(...)`` and ``model(..., use_cache=True)`` create by
default) it replaces that cache's still-empty ``DynamicLayer`` for its layer index by a
``CompressedLayer`` on first use. So ``model.generate(ids, max_new_tokens=n, do_sample=False)``
decodes from a compressed cache with no extra argument; passing
``cache=CompressedCache()`` (``past_key_values=`` in older transformers) is equivalent and
explicit. A cache already holding full keys for a layer is refused (TypeError).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import LlamaForCausalLM
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from papers.matryoshka_kv.config import ModelConfig
from papers.matryoshka_kv.method import (
    KVProjections,
    check_rank,
    compress,
    compressed_attention,
)
from shared.llama import (
    SwappedAttention,
    decoder_layers,
    load_local_causal_lm,
    swap_attention,
    swapped_attentions,
    tiny_llama,
)

# --------------------------------------------------------------------------- models


def build_toy_model(cfg: ModelConfig, attn_implementation: str = "sdpa") -> LlamaForCausalLM:
    """Randomly initialised Llama from the config's fields (untied embeddings; no bos/eos/pad
    ids, so greedy generation always runs ``max_new_tokens``). Seed torch beforehand."""
    return tiny_llama(cfg, attn_implementation)


def load_local_model(path: str | Path, dtype: torch.dtype | None = None, **kwargs):
    """A local Llama / Mistral checkpoint folder (``from_pretrained(..., local_files_only=True)``,
    never downloads). Raises ``FileNotFoundError`` when the folder or its config is absent."""
    if dtype is not None:
        kwargs["dtype"] = dtype
    return load_local_causal_lm(path, **kwargs)


def _head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def _cache_kwarg(model: nn.Module) -> str:
    """Name of the cache argument of ``model.forward``: ``cache`` (transformers >= 5.x) or
    ``past_key_values`` (older)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


# --------------------------------------------------------------------------- compressed cache


def pack(coords: Tensor, ranks: tuple[int, ...]) -> Tensor:
    """(B, H, T, r_max) per-head coordinates -> (B, T, sum_h ranks[h]): head h's first
    ranks[h] coordinates, heads concatenated (head 0 first)."""
    b, h, t, r_max = coords.shape
    if all(r == r_max for r in ranks):
        return coords.transpose(1, 2).reshape(b, t, h * r_max)
    return torch.cat([coords[:, i, :, :r] for i, r in enumerate(ranks)], dim=-1)


def unpack(packed: Tensor, ranks: tuple[int, ...]) -> Tensor:
    """Inverse of :func:`pack`: (B, S, sum r) -> (B, H, S, r_max), zero beyond each head's rank
    (a transient view for attending; storage stays packed)."""
    b, s, _ = packed.shape
    r_max = max(ranks)
    if all(r == r_max for r in ranks):
        return packed.reshape(b, s, len(ranks), r_max).transpose(1, 2)
    parts = torch.split(packed, list(ranks), dim=-1)
    return torch.stack([F.pad(p, (0, r_max - p.shape[-1])) for p in parts], dim=1)


class CompressedLayer(DynamicLayer):
    """One layer of a compressed KV cache.

    ``keys``: (B, T, sum_h r_K,h) and ``values``: (B, T, sum_h r_V,h) -- the packed compressed
    coordinates (see :func:`pack`); ``key_ranks`` / ``value_ranks`` the per-head ranks they were
    written with (fixed while the layer holds tokens). Sequence length, cropping, beam reordering
    and batch selection are inherited from ``DynamicLayer`` (the token axis is dim -2).
    """

    def __init__(self, **kwargs):
        super().__init__()
        self.key_ranks: tuple[int, ...] | None = None
        self.value_ranks: tuple[int, ...] | None = None

    def update(self, key_states: Tensor, value_states: Tensor, *args, **kwargs):
        """Append already-packed (B, T, sum r) states; full (B, H, T, d) keys are refused."""
        if key_states.dim() != 3 or value_states.dim() != 3:
            raise TypeError(
                "CompressedLayer stores packed compressed coordinates (B, T, sum_h r); it is "
                "written by MatryoshkaAttention, not with full key/value states"
            )
        return super().update(key_states, value_states)

    def append(
        self,
        key_coords: Tensor,
        value_coords: Tensor,
        key_ranks: tuple[int, ...],
        value_ranks: tuple[int, ...],
    ) -> tuple[Tensor, Tensor]:
        """Store new tokens' coordinates (B, H, T, r_max) (from ``method.compress``) packed; return
        all cached coordinates unpacked to (B, H, S, r_max_K) and (B, H, S, r_max_V)."""
        key_ranks, value_ranks = tuple(key_ranks), tuple(value_ranks)
        if self.get_seq_length() > 0 and (
            key_ranks != self.key_ranks or value_ranks != self.value_ranks
        ):
            raise ValueError(
                "ranks changed while the cache holds tokens; reset the cache (or start a new one) "
                "before calling set_ranks"
            )
        self.key_ranks, self.value_ranks = key_ranks, value_ranks
        keys, values = self.update(pack(key_coords, key_ranks), pack(value_coords, value_ranks))
        return unpack(keys, key_ranks), unpack(values, value_ranks)

    def reset(self) -> None:
        super().reset()
        self.key_ranks = self.value_ranks = None


class CompressedCache(Cache):
    """A KV cache of :class:`CompressedLayer` s (created lazily per layer index, or up front when
    ``num_layers`` is given). Pass it as ``cache=`` to ``model(...)`` / ``model.generate(...)``."""

    def __init__(self, num_layers: int | None = None):
        if num_layers is None:
            super().__init__(layer_class_to_replicate=CompressedLayer)
        else:
            super().__init__(layers=[CompressedLayer() for _ in range(num_layers)])


def _compressed_layer(cache: Cache, layer_idx: int) -> CompressedLayer:
    """The cache's CompressedLayer for ``layer_idx``; an empty DynamicLayer there is replaced."""
    if not isinstance(cache, Cache):
        raise TypeError(f"expected a transformers Cache, got {type(cache).__name__}")
    while len(cache.layers) <= layer_idx:
        cache.layers.append(CompressedLayer())
    layer = cache.layers[layer_idx]
    if isinstance(layer, CompressedLayer):
        return layer
    if type(layer) is DynamicLayer and layer.get_seq_length() == 0:
        cache.layers[layer_idx] = CompressedLayer()
        return cache.layers[layer_idx]
    raise TypeError(
        f"layer {layer_idx} of the cache is a {type(layer).__name__} that cannot be converted "
        "(already holds full states, or is static / sliding); use CompressedCache() or an empty "
        "DynamicCache"
    )


def _per_token(cache: Cache, numbers: bool) -> int:
    total = 0
    for layer in cache.layers:
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if keys is None or keys.numel() == 0:
            continue
        tokens = keys.shape[0] * layer.get_seq_length()  # batch x sequence
        for x in (keys, values):
            size = x.numel() if numbers else x.numel() * x.element_size()
            if size % tokens:
                raise ValueError("cache tensors are not a whole number of entries per token")
            total += size // tokens
    return total


def cache_numbers_per_token(cache: Cache) -> int:
    """Numbers stored per token (per sequence) over all layers, measured from the stored tensors:
    sum over layers and heads of (r_K + r_V) for a compressed cache, 2 L H d for a full one."""
    return _per_token(cache, numbers=True)


def cache_bytes_per_token(cache: Cache) -> int:
    """Bytes stored per token (per sequence) over all layers (numbers x element size)."""
    return _per_token(cache, numbers=False)


def full_cache_numbers_per_token(config) -> int:
    """2 L H_kv d: what an uncompressed cache stores per token."""
    return 2 * config.num_hidden_layers * config.num_key_value_heads * _head_dim(config)


# --------------------------------------------------------------------------- attention


def _bool_to_bias(allowed: Tensor, dtype: torch.dtype) -> Tensor:
    bias = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return bias.masked_fill(~allowed, torch.finfo(dtype).min)


def _attention_bias(
    mask: Tensor | None, q_len: int, kv_len: int, dtype: torch.dtype, device
) -> Tensor | None:
    """Additive bias from whatever HF passes: None (sdpa, causal / all visible), a boolean
    mask (sdpa, True = attend) or an additive float mask (eager)."""
    if mask is None:
        if q_len == 1:
            return None
        rows = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)
        allowed = torch.arange(kv_len, device=device)[None, :] <= rows  # bottom-right causal
        return _bool_to_bias(allowed, dtype)[None, None]
    mask = mask[..., :kv_len]
    if mask.dtype == torch.bool:
        return _bool_to_bias(mask, dtype)
    return mask.to(dtype)


class MatryoshkaAttention(SwappedAttention):
    """Replacement of a Llama / Mistral ``self_attn`` computing attention from the compressed
    keys / values (brief Sec. 3.1), reusing the base module's q/k/v/o projections.

    Per KV head h: k~ = (k - mu_K) U_K[:, :r_K], v~ = (v - mu_V) U_V[:, :r_V] (post-RoPE keys),
    q~ = q U_K[:, :r_K] (not centred), logits = (q~ . k~ + q . mu_K) * scaling with the
    causal / padding mask, out = softmax . v~ U_V[:, :r_V]^T + mu_V, then o_proj. Heterogeneous
    per-head ranks are computed at r_max with a 0/1 column mask. Exact when all ranks are d.
    """

    def __init__(self, base: nn.Module, projections: KVProjections, layer_idx: int):
        super().__init__(base)  # q/k/v/o taken over, same parameter names
        self.layer_idx = layer_idx
        self.is_causal = True
        self.set_projections(projections)

    def set_projections(self, projections: KVProjections) -> None:
        # a plain attribute, not a submodule: the single owner is ``model.kv_projections``
        object.__setattr__(self, "projections", projections)
        full = (self.head_dim,) * self.num_key_value_heads
        self.key_ranks: tuple[int, ...] = full
        self.value_ranks: tuple[int, ...] = full

    def _bases(self) -> tuple[Tensor, Tensor]:
        """This layer's Cayley bases (recomputed every call: always in sync with X)."""
        return self.projections.bases(self.layer_idx)

    def forward(
        self,
        hidden_states: Tensor,
        position_embeddings: tuple[Tensor, Tensor] | None = None,
        attention_mask: Tensor | None = None,
        cache: Cache | None = None,
        past_key_values: Cache | None = None,
        **kwargs,
    ) -> tuple[Tensor, Tensor]:
        cache = cache if cache is not None else past_key_values
        b, t = hidden_states.shape[:2]
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)  # project POST-RoPE keys

        dtype, device = q.dtype, q.device
        u_key, u_value = (u.to(dtype) for u in self._bases())
        mu_key = self.projections.mu_key[self.layer_idx].to(dtype)
        mu_value = self.projections.mu_value[self.layer_idx].to(dtype)
        rank_key = torch.tensor(self.key_ranks, device=device)
        rank_value = torch.tensor(self.value_ranks, device=device)
        key_coords = compress(k, u_key, mu_key, rank_key)
        value_coords = compress(v, u_value, mu_value, rank_value)
        if cache is not None:
            layer = _compressed_layer(cache, self.layer_idx)
            key_coords, value_coords = layer.append(
                key_coords, value_coords, self.key_ranks, self.value_ranks
            )
        bias = _attention_bias(attention_mask, t, key_coords.shape[2], dtype, device)
        out, probs = compressed_attention(
            q, key_coords, value_coords, u_key, u_value, mu_key, mu_value, bias, self.scaling
        )
        out = out.transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out), probs


def matryoshka_attentions(model: nn.Module) -> list[MatryoshkaAttention]:
    """The model's MatryoshkaAttention modules in layer order (empty if none attached)."""
    return swapped_attentions(model, MatryoshkaAttention)


def attach_projections(model: nn.Module, projections: KVProjections) -> nn.Module:
    """Swap every decoder layer's attention for a :class:`MatryoshkaAttention` in place (base
    q/k/v/o weights kept, same parameter names) and register ``projections`` as
    ``model.kv_projections``. Ranks start at d (exact). Calling it again on a model that already
    has projections swaps in the new ``projections`` and resets the ranks to d.

    Freezing is the caller's job and must leave the projections trainable, e.g.
    ``model.requires_grad_(False); projections.requires_grad_(True)``. Sliding-window attention
    and attention implementations other than eager / sdpa are refused.
    """
    config = model.config
    layers = decoder_layers(model)
    head_dim, n_kv = _head_dim(config), config.num_key_value_heads
    expected = (len(layers), n_kv, head_dim)
    got = (projections.n_layers, projections.n_heads, projections.head_dim)
    if got != expected:
        raise ValueError(f"projections are (L, H_kv, d) = {got}, the model needs {expected}")
    if getattr(config, "sliding_window", None) is not None and getattr(
        config, "use_sliding_window", True
    ):
        raise ValueError("sliding-window attention is not supported by MatryoshkaAttention")
    impl = getattr(config, "_attn_implementation", "eager")
    if impl not in ("eager", "sdpa"):
        raise ValueError(f"attn_implementation {impl!r} unsupported; use 'eager' or 'sdpa'")
    for attention in matryoshka_attentions(model):  # already attached: new projections
        attention.set_projections(projections)
    swap_attention(
        model,
        MatryoshkaAttention,
        lambda base: MatryoshkaAttention(base, projections, base.layer_idx),
    )
    model.add_module("kv_projections", projections)
    return model


def set_ranks(model: nn.Module, rank_key: Tensor, rank_value: Tensor) -> None:
    """Set the (L, H_kv) per-layer, per-head key / value ranks of an attached model."""
    attns = matryoshka_attentions(model)
    if not attns:
        raise ValueError("no MatryoshkaAttention in the model; call attach_projections first")
    rank_key, rank_value = torch.as_tensor(rank_key), torch.as_tensor(rank_value)
    expected = (len(attns), attns[0].num_key_value_heads)
    for name, table in (("rank_key", rank_key), ("rank_value", rank_value)):
        if tuple(table.shape) != expected:
            raise ValueError(f"{name} must be (L, H_kv) = {expected}, got {tuple(table.shape)}")
        check_rank(table, attns[0].head_dim)
    for attn, rk, rv in zip(attns, rank_key.tolist(), rank_value.tolist(), strict=True):
        attn.key_ranks = tuple(int(r) for r in rk)
        attn.value_ranks = tuple(int(r) for r in rv)


def get_ranks(model: nn.Module) -> tuple[Tensor, Tensor]:
    """The current (L, H_kv) key / value rank tables of an attached model."""
    attns = matryoshka_attentions(model)
    if not attns:
        raise ValueError("no MatryoshkaAttention in the model; call attach_projections first")
    return (
        torch.tensor([a.key_ranks for a in attns], dtype=torch.long),
        torch.tensor([a.value_ranks for a in attns], dtype=torch.long),
    )


# --------------------------------------------------------------------------- statistics, search


@torch.no_grad()
def collect_kv_statistics(
    model: nn.Module, batches: Iterable[Tensor]
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Running E[x] and E[x x^T] of the POST-RoPE keys and of the values of every layer / KV head
    over all tokens of ``batches`` ((B, T) id tensors, each sequence starting at position 0),
    read from the KV cache the unmodified model fills (brief Sec. 3.2).

    Returns (mean_key (L, H, d), second_key (L, H, d, d), mean_value, second_value) in float64.
    """
    if matryoshka_attentions(model):
        raise ValueError("collect statistics from the unmodified model (projections attached)")
    config = model.config
    n_layers, n_kv, d = config.num_hidden_layers, config.num_key_value_heads, _head_dim(config)
    sums = {
        "k1": torch.zeros(n_layers, n_kv, d, dtype=torch.float64),
        "k2": torch.zeros(n_layers, n_kv, d, d, dtype=torch.float64),
        "v1": torch.zeros(n_layers, n_kv, d, dtype=torch.float64),
        "v2": torch.zeros(n_layers, n_kv, d, d, dtype=torch.float64),
    }
    count = 0
    cache_kw = _cache_kwarg(model)
    for ids in batches:
        cache = DynamicCache(config=config)
        model(input_ids=ids, use_cache=True, **{cache_kw: cache})
        for layer_idx, layer in enumerate(cache.layers):
            for prefix, x in (("k", layer.keys), ("v", layer.values)):
                x = x.detach().to("cpu", torch.float64)  # (B, H, T, d)
                sums[prefix + "1"][layer_idx] += x.sum(dim=(0, 2))
                sums[prefix + "2"][layer_idx] += torch.einsum("bhtd,bhte->hde", x, x)
        count += ids.shape[0] * ids.shape[1]
    if count == 0:
        raise ValueError("no tokens to collect statistics from")
    return sums["k1"] / count, sums["k2"] / count, sums["v1"] / count, sums["v2"] / count


@torch.no_grad()
def last_hidden_states(model: nn.Module, input_ids: Tensor) -> Tensor:
    """Final hidden states (after the last norm) of the decoder, no cache (greedy search)."""
    return model.model(input_ids=input_ids, use_cache=False).last_hidden_state


def make_hidden_fn(model: nn.Module, input_ids: Tensor):
    """``hidden_fn(rank_key, rank_value)`` for ``method.greedy_rank_search``: sets the ranks on
    the attached model and returns :func:`last_hidden_states` of ``input_ids``."""

    def hidden_fn(rank_key: Tensor, rank_value: Tensor) -> Tensor:
        set_ranks(model, rank_key, rank_value)
        return last_hidden_states(model, input_ids)

    return hidden_fn
