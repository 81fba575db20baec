"""The toy ControlAR model: a tiny GPT-2 (``transformers.GPT2Model``) with a local control
encoder, and the three variants of the brief's Sec. 5: ``cond`` (conditional decoding),
``prefill`` (control tokens as a second prefix) and ``none`` (no control).

The decoder is the library's GPT-2 (pre-LayerNorm blocks, GELU MLP x4, learned absolute
positions, ``inputs_embeds``, ``position_ids``, KV cache). Conditional decoding enters through
a forward pre-hook on each injection block that calls :func:`method.inject_control` on the
block's input; the hook is armed by :meth:`ToyControlAR.run`, the single forward used by
training, uncached and cached decoding alike.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import DynamicCache, GPT2Config, GPT2Model

from papers.controlar.config import ModelConfig
from papers.controlar.method import (
    VARIANTS,
    ControlProjection,
    align_controls,
    drop_controls,
    fusion_mlps,
    inject_control,
    injection_layers,
)


class LocalControlEncoder(nn.Module):
    """Conv3x3(1 -> c1, pad 1) - GELU - Conv f x f stride f (c1 -> c2) - GELU - Conv1x1 (c2 ->
    out): one feature per f x f patch, depending only on that patch and a 1-pixel border, so
    the control grid equals the image-token grid (brief Sec. 5, Sec. 3.7 item 6)."""

    def __init__(self, patch: int, channels: tuple[int, int], out_dim: int):
        super().__init__()
        c1, c2 = channels
        self.conv_in = nn.Conv2d(1, c1, 3, padding=1)
        self.conv_patch = nn.Conv2d(c1, c2, patch, stride=patch)
        self.conv_out = nn.Conv2d(c2, out_dim, 1)
        # NHWC: oneDNN's channels-last convolutions cost about half the CPU of NCHW here
        self.to(memory_format=torch.channels_last)

    def forward(self, maps: Tensor) -> Tensor:
        maps = maps.contiguous(memory_format=torch.channels_last)
        x = F.gelu(self.conv_in(maps))  # (B, c1, H, W)
        x = F.gelu(self.conv_patch(x))  # (B, c2, H/f, W/f)
        return self.conv_out(x).flatten(2).transpose(1, 2)  # (B, N, out), raster order


def check_control_maps(maps: Tensor, image_size: int, patch: int) -> Tensor:
    """(B, H, W) or (B, 1, H, W) floating maps in [0, 1] -> (B, 1, H, W) in [-1, 1]; anything
    else fails naming the expected grid."""
    grid = image_size // patch
    expected = (
        f"control maps must be floating (B, {image_size}, {image_size}) or "
        f"(B, 1, {image_size}, {image_size}) so the control encoder yields the {grid}x{grid} "
        f"image-token grid"
    )
    if not torch.is_tensor(maps) or not maps.is_floating_point():
        raise TypeError(f"{expected}; got dtype {getattr(maps, 'dtype', type(maps).__name__)}")
    if maps.dim() == 3:
        maps = maps[:, None]
    if maps.dim() != 4 or maps.shape[1:] != (1, image_size, image_size):
        raise ValueError(f"{expected}; got shape {tuple(maps.shape)}")
    return 2.0 * maps - 1.0  # scaled to [-1, 1] (Sec. 3.1)


class ToyControlAR(nn.Module):
    """GPT-2 over the N = (H/f)^2 image tokens with a learned start token as the 1-token
    prefix (the unconditional c2i analogue), and the control path of ``variant``.

    Sequence layouts (0-based sequence position -> learned position id):

    * ``cond`` / ``none``: [start, e(x_1) .. e(x_{N-1})]; position p has id p, the grid index
      of the token it predicts. ``cond`` adds FusionMLP_j(c_{p+1}) at p before block j.
    * ``prefill``: [c_1 .. c_N, start, e(x_1) .. e(x_{N-1})]; control token c_t gets id t - 1
      (the grid index of x_t, as the position that predicts x_t) plus a learned "control"
      type embedding (brief Sec. 3.4: positions shared with their image tokens, not LlamaGen's
      position-less prefix).
    """

    def __init__(self, cfg: ModelConfig, variant: str):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
        if cfg.image_size % cfg.patch:
            raise ValueError(f"model.image_size {cfg.image_size} % model.patch {cfg.patch} != 0")
        self.cfg, self.variant = cfg, variant
        self.n_tokens = (cfg.image_size // cfg.patch) ** 2
        config = GPT2Config(
            vocab_size=cfg.vocab_size,
            n_positions=self.n_tokens,
            n_embd=cfg.dim,
            n_layer=cfg.n_layers,
            n_head=cfg.n_heads,
            n_inner=cfg.mlp_ratio * cfg.dim,
            resid_pdrop=cfg.dropout,
            embd_pdrop=cfg.dropout,
            attn_pdrop=cfg.dropout,
            bos_token_id=None,
            eos_token_id=None,
            activation_function=cfg.activation,  # exact GELU in the toy (config.py)
        )
        self.gpt = GPT2Model(config)  # wte embeds image tokens; wpe holds the N grid positions
        self.start = nn.Parameter(torch.randn(cfg.dim) * config.initializer_range)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size)
        self.prefix_length = 1 + (self.n_tokens if variant == "prefill" else 0)
        if variant != "none":
            self.encoder = LocalControlEncoder(
                cfg.patch, tuple(cfg.encoder_channels), cfg.encoder_dim
            )
            self.projection = ControlProjection(cfg.encoder_dim, cfg.dim)
        if variant == "cond":
            self.fusion = fusion_mlps(cfg.dim, cfg.n_layers)
            self.injection = dict(zip(injection_layers(cfg.n_layers), self.fusion, strict=True))
            for layer in self.injection:
                self.gpt.h[layer].register_forward_pre_hook(
                    self._injection_hook(layer), with_kwargs=True
                )
        if variant == "prefill":
            self.control_type = nn.Parameter(torch.randn(cfg.dim) * config.initializer_range)
        self._aligned: Tensor | None = None  # set by run() for the duration of one forward

    # -------------------------------------------------------------- control path

    def control_tokens(self, control_maps: Tensor, dropped: Tensor | None = None) -> Tensor:
        """Encoder + projection: (B, N, D) control tokens; ``dropped`` samples get zero
        features (joint dropping), hence exactly zero control tokens (bias-free MLPs)."""
        if self.variant == "none":
            raise ValueError("the no-control model has no control encoder")
        features = self.encoder(
            check_control_maps(control_maps, self.cfg.image_size, self.cfg.patch)
        )
        if dropped is not None:
            features = drop_controls(features, dropped)
        return self.projection(features)

    def _injection_hook(self, layer: int):
        def hook(module, args, kwargs):
            if self._aligned is None:
                return None
            hidden = inject_control(args[0], self.injection[layer], self._aligned)
            return (hidden, *args[1:]), kwargs

        return hook

    # -------------------------------------------------------------- the model interface

    def with_null_condition(self, condition: Any) -> Any:
        return None  # the toy is unconditional: its null condition is the same start token

    def embed_prefix(self, control: Tensor | None, condition: Any, batch: int) -> Tensor:
        start = self.start.expand(batch, 1, -1)
        if self.variant != "prefill":
            return start  # (B, 1, D)
        if control is None:
            raise ValueError("the prefill variant needs control tokens")
        return torch.cat([control + self.control_type, start], 1)  # (B, N + 1, D)

    def embed_tokens(self, tokens: Tensor) -> Tensor:
        return self.gpt.wte(tokens)  # (B, T, D)

    def position_ids(self, start: int, length: int) -> Tensor:
        """Learned position id of sequence positions [start, start + length) (see class doc)."""
        p = torch.arange(start, start + length)
        if self.variant == "prefill":
            p = torch.where(p < self.n_tokens, p, p - self.n_tokens)
        return p

    def run(self, embeds: Tensor, start: int, control: Tensor | None, cache: Any) -> Tensor:
        """Hidden states of sequence positions [start, start + T) given the cache of [0, start).

        ``cond``: every injection block first adds its FusionMLP of the aligned control
        (:func:`method.align_controls`, :func:`method.inject_control`)."""
        batch, length, _ = embeds.shape
        positions = self.position_ids(start, length).to(embeds.device).expand(batch, -1)
        if self.variant == "cond":
            if control is None:
                raise ValueError("conditional decoding needs control tokens")
            self._aligned = align_controls(control, start, length, self.prefix_length)
        # An explicit all-ones mask: without one, transformers reads repeated position ids
        # (the prefill layout) as packed sequences and blocks attention across them.
        mask = torch.ones(batch, start + length, dtype=torch.long, device=embeds.device)
        try:
            out = self.gpt(
                inputs_embeds=embeds,
                position_ids=positions,
                attention_mask=mask,
                cache=cache,
                use_cache=cache is not None,
            )
        finally:
            self._aligned = None
        return out.last_hidden_state  # (B, T, D)

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.gpt.config)

    def head(self, hidden: Tensor) -> Tensor:
        return self.output(hidden)  # (..., V)
