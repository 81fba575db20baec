"""LlamaGen's class-to-image GPT with ControlAR's control path (paper scale; brief Sec. 3.1).

Llama-style blocks: pre-norm RMSNorm, SwiGLU FFN (hidden = 2/3 * 4 * dim rounded up to a
multiple of 256), 2-D RoPE on q/k (half of each head's rotary pairs rotate with the row, half
with the column; base 10000), no biases, dropouts on tokens, residuals and FFN, one class
token (index ``num_classes`` = the null class for CFG) and an untied output head. Module names
follow the official ``autoregressive/models/gpt.py`` (``tok_embeddings``, ``cls_embedding``,
``layers.i.attention.wqkv``, ``adapter_mlp``, ``condition_layers``...) so LlamaGen's GPT-B/L
checkpoints load into it; the control modules start from N(0, 0.02) as in the official code.

The control encoder is a pretrained ViT (``transformers.AutoModel`` from a local folder: ViT
or DINOv2); its patch tokens (CLS and register tokens dropped) are the control features.
The model implements the interface of :class:`papers.controlar.method.ControlARModel`, so
training, cached sampling and the tests use the same functions as the toy.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from papers.controlar.config import PaperModelConfig
from papers.controlar.method import (
    VARIANTS,
    BiasFreeMLP,
    align_controls,
    drop_controls,
    fusion_mlps,
    inject_control,
    injection_layers,
)
from papers.controlar.vq16 import load_state_dict


def rope_2d(grid: int, head_dim: int, base: float) -> Tensor:
    """(grid * grid, head_dim // 2, 2) cos/sin table in raster order (official
    ``precompute_freqs_cis_2d`` without its zero prefix rows)."""
    half = head_dim // 2
    freqs = 1.0 / (base ** (torch.arange(0, half, 2)[: half // 2].float() / half))
    angles = torch.outer(torch.arange(grid).float(), freqs)  # (grid, head_dim // 4)
    table = torch.cat(
        [angles[:, None].expand(-1, grid, -1), angles[None].expand(grid, -1, -1)], dim=-1
    )  # (grid, grid, head_dim // 2): rows, then columns
    return torch.stack([table.cos(), table.sin()], dim=-1).flatten(0, 1)


def apply_rope(x: Tensor, table: Tensor) -> Tensor:
    """Rotate pairs of (B, T, H, Dh) by (T, Dh // 2, 2); a zero row zeroes the vector (the
    official position-less prefix)."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    cos, sin = table[None, :, None, :, 0], table[None, :, None, :, 1]
    out = torch.stack(
        [pairs[..., 0] * cos - pairs[..., 1] * sin, pairs[..., 1] * cos + pairs[..., 0] * sin], -1
    )
    return out.flatten(3).type_as(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(
            x
        ) * self.weight


class FeedForward(nn.Module):
    def __init__(self, dim: int, dropout: float):
        super().__init__()
        hidden = 256 * math.ceil(int(2 * 4 * dim / 3) / 256)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.ffn_dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.ffn_dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int, dropout: float):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wqkv = nn.Linear(dim, 3 * dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, rope: Tensor, cache: list | None, layer: int) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.wqkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)
        q, k = apply_rope(q, rope), apply_rope(k, rope)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))  # (B, H, T, Dh)
        past = 0
        if cache is not None:
            if len(cache) > layer:
                past = cache[layer][0].shape[2]
                k = torch.cat([cache[layer][0], k], 2)
                v = torch.cat([cache[layer][1], v], 2)
                cache[layer] = (k, v)
            else:
                cache.append((k, v))
        # causal over [past, past + t): query i sees keys 0 .. past + i
        mask = torch.ones(t, past + t, dtype=torch.bool, device=x.device).tril(past)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.resid_dropout(self.wo(out.transpose(1, 2).reshape(b, t, d)))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: PaperModelConfig):
        super().__init__()
        self.attention = Attention(cfg.dim, cfg.n_heads, cfg.resid_dropout)
        self.feed_forward = FeedForward(cfg.dim, cfg.ffn_dropout)
        self.attention_norm = RMSNorm(cfg.dim)
        self.ffn_norm = RMSNorm(cfg.dim)

    def forward(self, x: Tensor, rope: Tensor, cache: list | None, layer: int) -> Tensor:
        h = x + self.attention(self.attention_norm(x), rope, cache, layer)
        return h + self.feed_forward(self.ffn_norm(h))


class ClassEmbedding(nn.Module):
    """``embedding_table`` with one extra row: index ``num_classes`` is the null class."""

    def __init__(self, num_classes: int, dim: int):
        super().__init__()
        self.embedding_table = nn.Embedding(num_classes + 1, dim)


class LlamaGenControlAR(nn.Module):
    """LlamaGen c2i GPT + ViT control encoder + ControlAR (or prefill / no control).

    Sequence layouts: ``cond`` / ``none``: [class, e(x_1) .. e(x_{N-1})], the class token
    position-less (zero rotation, as the official cache) and e(x_t) at x_t's grid cell;
    ``prefill``: [c_1 .. c_N, class, e(x_1) ..], c_t rotated at x_t's grid cell and carrying
    a learned type embedding (brief Sec. 3.4).
    """

    def __init__(self, cfg: PaperModelConfig, variant: str, encoder: nn.Module | None = None):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        if variant != "none" and encoder is None:
            raise ValueError(f"variant {variant!r} needs a control encoder")
        self.cfg, self.variant = cfg, variant
        self.grid = cfg.image_size // cfg.downsample
        self.n_tokens = self.grid**2
        self.prefix_length = cfg.cls_token_num + (self.n_tokens if variant == "prefill" else 0)
        self.cls_embedding = ClassEmbedding(cfg.num_classes, cfg.dim)
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.tok_dropout = nn.Dropout(cfg.token_dropout)
        self.layers = nn.ModuleList(TransformerBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.register_buffer(
            "rope", rope_2d(self.grid, cfg.dim // cfg.n_heads, cfg.rope_base), persistent=False
        )
        self.injection: dict[int, nn.Module] = {}
        if variant != "none":
            self.adapter = encoder
            width = encoder.config.hidden_size
            self.adapter_mlp = BiasFreeMLP(width, cfg.dim, cfg.dim)
            self.condition_mlp = BiasFreeMLP(cfg.dim, cfg.dim, cfg.dim)
        if variant == "cond":
            self.condition_layers = fusion_mlps(cfg.dim, cfg.n_layers)
            self.injection = dict(
                zip(injection_layers(cfg.n_layers), self.condition_layers, strict=True)
            )
        if variant == "prefill":
            self.control_type = nn.Parameter(torch.zeros(cfg.dim))
        self.apply(self._init_weights)
        if variant != "none":
            self.adapter = encoder  # keep the pretrained encoder's own weights

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)  # official initializer_range
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def load_gpt(self, path: str) -> list[str]:
        """LlamaGen GPT weights; returns the keys left at their init (the new modules)."""
        state = {k: v for k, v in load_state_dict(path).items() if k != "freqs_cis"}
        missing, unexpected = self.load_state_dict(state, strict=False)
        if unexpected:
            raise KeyError(f"{path}: weights this model does not have: {unexpected[:5]}")
        return missing

    # -------------------------------------------------------------- control path

    def control_tokens(self, control_maps: Tensor, dropped: Tensor | None = None) -> Tensor:
        """(B, H, W) or (B, 1, H, W) maps in [0, 1] -> (B, N, dim). The map is replicated to 3
        channels, scaled to [-1, 1] and, for a patch-14 encoder (DINOv2), resized (nearest)
        to grid * 14 so the patch grid equals the token grid (Sec. 3.1, 3.7 item 6)."""
        if self.variant == "none":
            raise ValueError("the no-control model has no control encoder")
        size = self.cfg.image_size
        expected = (
            f"control maps must be floating (B, {size}, {size}) or (B, 1, {size}, {size}) so the "
            f"control encoder yields the {self.grid}x{self.grid} image-token grid"
        )
        if not torch.is_tensor(control_maps) or not control_maps.is_floating_point():
            raise TypeError(f"{expected}; got {getattr(control_maps, 'dtype', type(control_maps))}")
        maps = control_maps[:, None] if control_maps.dim() == 3 else control_maps
        if maps.dim() != 4 or maps.shape[1:] != (1, size, size):
            raise ValueError(f"{expected}; got shape {tuple(control_maps.shape)}")
        patch = self.adapter.config.patch_size
        if patch * self.grid != size:
            maps = F.interpolate(maps, size=(patch * self.grid,) * 2, mode="nearest")
        pixels = (2.0 * maps - 1.0).expand(-1, 3, -1, -1)
        options = {}
        if "interpolate_pos_encoding" in inspect.signature(self.adapter.forward).parameters:
            options["interpolate_pos_encoding"] = True  # ViT: 224-trained positions at 256
        hidden = self.adapter(pixel_values=pixels, **options).last_hidden_state
        features = hidden[:, -self.n_tokens :]  # patch tokens; CLS / registers dropped
        if dropped is not None:
            features = drop_controls(features, dropped)
        return self.condition_mlp(self.adapter_mlp(features))

    # -------------------------------------------------------------- the model interface

    def with_null_condition(self, condition: Tensor) -> Tensor:
        return torch.cat([condition, torch.full_like(condition, self.cfg.num_classes)])

    def embed_prefix(self, control: Tensor | None, condition: Tensor, batch: int) -> Tensor:
        cls = self.cls_embedding.embedding_table(condition)[:, None].expand(
            -1, self.cfg.cls_token_num, -1
        )
        if self.variant != "prefill":
            return self.tok_dropout(cls)
        return self.tok_dropout(torch.cat([control + self.control_type, cls], 1))

    def embed_tokens(self, tokens: Tensor) -> Tensor:
        return self.tok_dropout(self.tok_embeddings(tokens))

    def rotations(self, start: int, length: int) -> Tensor:
        """RoPE rows of sequence positions [start, start + length) (see class doc)."""
        p = torch.arange(start, start + length, device=self.rope.device)
        zero = torch.zeros_like(self.rope[:1])
        table = torch.cat([self.rope, zero])  # last row: no position
        n, cls = self.n_tokens, self.cfg.cls_token_num
        if self.variant == "prefill":
            cell = torch.where(p < n, p, p - n - cls)
        else:
            cell = p - cls
        return table[torch.where(cell >= 0, cell, n)]

    def run(self, embeds: Tensor, start: int, control: Tensor | None, cache: Any) -> Tensor:
        rope = self.rotations(start, embeds.shape[1])
        aligned = None
        if self.variant == "cond":
            if control is None:
                raise ValueError("conditional decoding needs control tokens")
            aligned = align_controls(control, start, embeds.shape[1], self.prefix_length)
        h = embeds
        for layer, block in enumerate(self.layers):
            if layer in self.injection:  # before blocks 0, L/3, 2L/3 (Sec. 3.2)
                h = inject_control(h, self.injection[layer], aligned)
            h = block(h, rope, cache, layer)
        return self.norm(h)

    def new_cache(self) -> list:
        return []

    def head(self, hidden: Tensor) -> Tensor:
        return self.output(hidden).float()


def load_control_encoder(path: str) -> nn.Module:
    """A local ViT / DINOv2 folder through ``transformers.AutoModel`` (nothing downloaded)."""
    from transformers import AutoModel

    return AutoModel.from_pretrained(path, local_files_only=True)
