"""LlamaGen's VQ-16 image tokenizer, decoding half (paper scale; brief Sec. 3.1).

Paper-scale training reads precomputed code grids, so only code -> image is needed here:
codebook lookup (l2-normalised 8-d codes), ``post_quant_conv`` and the convolutional decoder
(ch 128, multipliers 1, 1, 2, 2, 4, two residual blocks per level, self-attention at the
lowest resolution, GroupNorm(32), swish). Module names follow the official
``tokenizer/tokenizer_image/vq_model.py`` so that its checkpoint (``vq_ds16_c2i.pt``, a
``{"model": state_dict}``) loads directly; the encoder's weights are skipped.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def group_norm(channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(num_groups=32, num_channels=channels, eps=1e-6, affine=True)


class ResnetBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.norm1 = group_norm(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm2 = group_norm(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.nin_shortcut = (
            nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None
        )

    def forward(self, x: Tensor) -> Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        return (x if self.nin_shortcut is None else self.nin_shortcut(x)) + h


class AttnBlock(nn.Module):
    """Single-head self-attention over the pixels of a feature map (1x1 conv projections)."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = group_norm(channels)
        self.q, self.k, self.v, self.proj_out = (nn.Conv2d(channels, channels, 1) for _ in range(4))

    def forward(self, x: Tensor) -> Tensor:
        b, c, h, w = x.shape
        y = self.norm(x)
        q, k, v = (m(y).flatten(2).transpose(1, 2) for m in (self.q, self.k, self.v))  # (B, HW, C)
        out = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0]
        return x + self.proj_out(out.transpose(1, 2).reshape(b, c, h, w))


class Upsample(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class Decoder(nn.Module):
    def __init__(self, z_channels: int, ch: int, ch_mult: list[int], num_res_blocks: int):
        super().__init__()
        self.num_res_blocks = num_res_blocks
        block_in = ch * ch_mult[-1]
        self.conv_in = nn.Conv2d(z_channels, block_in, 3, padding=1)
        self.mid = nn.ModuleList(
            [ResnetBlock(block_in, block_in), AttnBlock(block_in), ResnetBlock(block_in, block_in)]
        )
        self.conv_blocks = nn.ModuleList()
        for level in reversed(range(len(ch_mult))):
            block = nn.Module()
            block.res, block.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(num_res_blocks + 1):
                block.res.append(ResnetBlock(block_in, ch * ch_mult[level]))
                block_in = ch * ch_mult[level]
                if level == len(ch_mult) - 1:
                    block.attn.append(AttnBlock(block_in))
            if level != 0:
                block.upsample = Upsample(block_in)
            self.conv_blocks.append(block)
        self.norm_out = group_norm(block_in)
        self.conv_out = nn.Conv2d(block_in, 3, 3, padding=1)

    def forward(self, z: Tensor) -> Tensor:
        h = self.conv_in(z)
        for module in self.mid:
            h = module(h)
        for level, block in enumerate(self.conv_blocks):
            for i in range(self.num_res_blocks + 1):
                h = block.res[i](h)
                if len(block.attn):
                    h = block.attn[i](h)
            if level != len(self.conv_blocks) - 1:
                h = block.upsample(h)
        return self.conv_out(F.silu(self.norm_out(h)))


class Codebook(nn.Module):
    def __init__(self, n_codes: int, code_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(n_codes, code_dim)


class VQ16Decoder(nn.Module):
    """Code grid (B, h, w) -> image (B, 3, 16h, 16w) in [-1, 1] (official ``decode_code``)."""

    def __init__(
        self,
        n_codes: int = 16384,
        code_dim: int = 8,
        z_channels: int = 256,
        ch: int = 128,
        ch_mult: list[int] | None = None,
        num_res_blocks: int = 2,
    ):
        super().__init__()
        self.quantize = Codebook(n_codes, code_dim)
        self.post_quant_conv = nn.Conv2d(code_dim, z_channels, 1)
        self.decoder = Decoder(z_channels, ch, ch_mult or [1, 1, 2, 2, 4], num_res_blocks)

    @torch.no_grad()
    def decode_code(self, codes: Tensor) -> Tensor:
        codebook = F.normalize(self.quantize.embedding.weight, p=2, dim=-1)  # l2-normalised
        z = codebook[codes].permute(0, 3, 1, 2)  # (B, code_dim, h, w)
        return self.decoder(self.post_quant_conv(z))

    def load_official(self, path: str | Path) -> None:
        """Load LlamaGen's checkpoint (``{"model": ...}`` / ``{"ema": ...}`` or a bare state
        dict, ``.pt`` with ``weights_only=True`` or ``.safetensors``); encoder weights are
        ignored, every decoder weight must be present."""
        state = load_state_dict(path)
        wanted = {k: v for k, v in state.items() if k.split(".")[0] in dict(self.named_children())}
        missing, _ = self.load_state_dict(wanted, strict=False)
        if missing:
            raise KeyError(f"{path} lacks VQ-16 decoder weights {missing[:5]}...")


def load_state_dict(path: str | Path) -> dict[str, Tensor]:
    """A state dict from ``.safetensors`` or a ``torch.save`` file (safe unpickler); LlamaGen
    wraps it as ``{"model": ...}`` (or ``"ema"`` / ``"state_dict"``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path} (a local file; nothing is downloaded)")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("model", "ema", "state_dict"):
        if isinstance(state.get(key), dict):
            return state[key]
    return state
