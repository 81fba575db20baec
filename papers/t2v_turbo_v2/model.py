"""Toy networks: the space-time teacher UNet, the text encoder, the reward and eval models.

The teacher is an epsilon-prediction network with the call signature of diffusers'
``UNet3DConditionModel``: ``net(sample, timestep, encoder_hidden_states, timestep_cond=None)``
(it returns a tensor; the diffusers adapter in ``paper_scale.py`` unwraps ``.sample``).
Its temporal self-attention blocks can record their softmax probabilities, which the
motion energy (Sec. 3.3) reads; ``set_attention_recording`` / ``recorded_attention_probs``
is the interface both the toy net and the diffusers adapter offer.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def sinusoidal_features(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Timestep features (B, dim) = [cos, sin] of t * exp(-log(P) k / (dim/2)) (diffusers' flip)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ConditionProjection(nn.Module):
    """Sec. 3.4 wiring: ``cond = W_c [W_w e(w) ; W_m e(lambda)]`` (all bias-free).

    Its input is ``cat(e(w), e(lambda))`` (B, 2*256). ``W_c`` starts at zero so the student
    starts as the teacher (LCM zero-initialises its ``cond_proj``); ``W_w``, ``W_m`` keep a
    random init so ``W_c`` receives a gradient.
    """

    def __init__(self, embed_dim: int, channels: int, use_motion_cond: bool = True) -> None:
        super().__init__()
        self.embed_dim = embed_dim
        self.use_motion_cond = use_motion_cond
        self.w_proj = nn.Linear(embed_dim, channels, bias=False)
        if use_motion_cond:
            self.motion_proj = nn.Linear(embed_dim, channels, bias=False)
            self.combine = nn.Linear(2 * channels, channels, bias=False)
            nn.init.zeros_(self.combine.weight)
        else:
            nn.init.zeros_(self.w_proj.weight)

    def forward(self, condition: torch.Tensor) -> torch.Tensor:
        cw = self.w_proj(condition[:, : self.embed_dim])
        if not self.use_motion_cond:
            return cw
        cm = self.motion_proj(condition[:, self.embed_dim :])
        return self.combine(torch.cat([cw, cm], dim=-1))


class TimestepEmbedding(nn.Module):
    """``emb = MLP(sinusoid(t) + cond)``: conditioning enters before the MLP (Sec. 3.4)."""

    def __init__(self, channels: int, embed_dim: int) -> None:
        super().__init__()
        self.channels = channels
        self.linear_1 = nn.Linear(channels, embed_dim)
        self.linear_2 = nn.Linear(embed_dim, embed_dim)
        self.cond_proj: nn.Module | None = None

    def forward(self, t: torch.Tensor, condition: torch.Tensor | None = None) -> torch.Tensor:
        h = sinusoidal_features(t, self.channels)
        if condition is not None:
            if self.cond_proj is None:
                raise ValueError("timestep_cond given to a network without a condition projection")
            h = h + self.cond_proj(condition)
        return self.linear_2(F.silu(self.linear_1(h)))


class ResBlock(nn.Module):
    """GroupNorm-SiLU-Conv3x3 twice over (T, L), FiLM from the embedding, residual."""

    def __init__(self, c_in: int, c_out: int, emb_dim: int, groups: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.film = nn.Linear(emb_dim, 2 * c_out)
        self.norm2 = nn.GroupNorm(groups, c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        scale, shift = self.film(F.silu(emb))[:, :, None, None].chunk(2, dim=1)
        h = self.norm2(h) * (1 + scale) + shift
        h = self.conv2(F.silu(h))
        return self.skip(x) + h


class TemporalAttention(nn.Module):
    """Self-attention across the T frames at every spatial position (pre-norm, residual).

    With ``record`` on, the softmax probabilities ``(B*L*heads, T, T)`` are kept (with their
    graph) in ``probs`` -- the toy analogue of VideoCrafter2's ``record_attn_probs``.
    """

    def __init__(self, channels: int, heads: int, groups: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm = nn.GroupNorm(groups, channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.out = nn.Linear(channels, channels)
        self.record = False
        self.probs: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, t, length = x.shape
        h = self.norm(x).permute(0, 3, 2, 1).reshape(b * length, t, c)  # (B*L, T, C)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        d = c // self.heads

        def split(a: torch.Tensor) -> torch.Tensor:
            return a.reshape(b * length, t, self.heads, d).transpose(1, 2).reshape(-1, t, d)

        q, k, v = split(q), split(k), split(v)  # (B*L*heads, T, d)
        probs = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1)  # (B*L*heads, T, T)
        if self.record:
            self.probs = probs
        o = (
            (probs @ v)
            .reshape(b * length, self.heads, t, d)
            .transpose(1, 2)
            .reshape(b * length, t, c)
        )
        o = self.out(o).reshape(b, length, t, c).permute(0, 3, 2, 1)
        return x + o


class SpaceTimeUNet(nn.Module):
    """Toy teacher (brief Sec. 5): a clip is an image over the (time, space) plane.

    in-conv -> ResBlock(w) -> down along L -> ResBlock(2w) -> mid ResBlock + attention ->
    decoder ResBlock(2w) + attention -> up -> decoder ResBlock(w) + attention -> out-conv.
    The decoder-side attentions (``decoder_attentions``) are the motion energy's layers.
    """

    def __init__(
        self,
        in_channels: int = 3,
        width: int = 24,
        text_dim: int = 64,
        heads: int = 2,
        groups: int = 8,
        cond_embed_dim: int = 256,
        use_motion_cond: bool = True,
    ) -> None:
        super().__init__()
        emb = 4 * width
        self.width = width
        self.cond_embed_dim = cond_embed_dim
        self.use_motion_cond = use_motion_cond
        self.time_embedding = TimestepEmbedding(width, emb)
        self.text_proj = nn.Linear(text_dim, emb)
        self.conv_in = nn.Conv2d(in_channels, width, 3, padding=1)
        self.enc1 = ResBlock(width, width, emb, groups)
        self.down = nn.Conv2d(width, 2 * width, 3, stride=(1, 2), padding=1)
        self.enc2 = ResBlock(2 * width, 2 * width, emb, groups)
        self.mid = ResBlock(2 * width, 2 * width, emb, groups)
        self.mid_attn = TemporalAttention(2 * width, heads, groups)
        self.dec2 = ResBlock(4 * width, 2 * width, emb, groups)
        self.dec2_attn = TemporalAttention(2 * width, heads, groups)
        self.up = nn.Conv2d(2 * width, width, 3, padding=1)
        self.dec1 = ResBlock(2 * width, width, emb, groups)
        self.dec1_attn = TemporalAttention(width, heads, groups)
        self.norm_out = nn.GroupNorm(groups, width)
        self.conv_out = nn.Conv2d(width, in_channels, 3, padding=1)

    @property
    def decoder_attentions(self) -> list[TemporalAttention]:
        return [self.dec2_attn, self.dec1_attn]

    def add_condition_projection(self) -> None:
        """Turn the teacher into the student's architecture (Sec. 3.4)."""
        self.time_embedding.cond_proj = ConditionProjection(
            self.cond_embed_dim, self.width, self.use_motion_cond
        )

    def set_attention_recording(self, on: bool) -> None:
        for attn in self.decoder_attentions:
            attn.record = on
            attn.probs = None

    def recorded_attention_probs(self) -> list[torch.Tensor]:
        return [attn.probs for attn in self.decoder_attentions]

    def forward(
        self,
        sample: torch.Tensor,
        timestep: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        timestep_cond: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if sample.dim() == 5:  # 2-D variant (B, 1, T, S, S): flatten the frame into a strip
            b, c, t, s1, s2 = sample.shape
            return self.forward(
                sample.reshape(b, c, t, s1 * s2), timestep, encoder_hidden_states, timestep_cond
            ).reshape(b, c, t, s1, s2)
        timestep = timestep.expand(sample.shape[0]) if timestep.dim() == 0 else timestep
        emb = self.time_embedding(timestep, timestep_cond) + self.text_proj(
            encoder_hidden_states.mean(dim=1)
        )
        h1 = self.enc1(self.conv_in(sample), emb)  # (B, w, T, L)
        h2 = self.enc2(self.down(h1), emb)  # (B, 2w, T, L/2)
        h = self.mid_attn(self.mid(h2, emb))
        h = self.dec2_attn(self.dec2(torch.cat([h, h2], dim=1), emb))
        h = self.up(F.interpolate(h, scale_factor=(1, 2), mode="nearest"))
        h = self.dec1_attn(self.dec1(torch.cat([h, h1], dim=1), emb))
        return self.conv_out(F.silu(self.norm_out(h)))


class TextEncoder(nn.Module):
    """Token table + mean-pool over non-pad tokens + linear; a learned null prompt (Sec. 5)."""

    def __init__(self, vocab: int, dim: int = 64) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, dim, padding_idx=0)
        self.proj = nn.Linear(dim, dim)
        self.null = nn.Parameter(torch.zeros(dim))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, S) token ids -> (B, 1, dim) encoder hidden states."""
        mask = (tokens != 0).float()[..., None]
        pooled = (self.table(tokens) * mask).sum(1) / mask.sum(1).clamp_min(1.0)
        return self.proj(pooled)[:, None]

    def empty(self, batch: int) -> torch.Tensor:
        """The empty-prompt embedding (B, 1, dim)."""
        return self.null[None, None].expand(batch, 1, -1)


class FrameClassifier(nn.Module):
    """Image RM: (shape, colour) from one frame (B, C, L): 9 classes."""

    def __init__(self, channels: int = 3, width: int = 32, classes: int = 9) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(channels, width, 5, padding=2),
            nn.SiLU(),
            nn.Conv1d(width, width, 5, padding=2),
            nn.SiLU(),
            nn.AdaptiveMaxPool1d(1),
            nn.Flatten(),
            nn.Linear(width, classes),
        )

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.net(frames.flatten(2) if frames.dim() > 3 else frames)


class ClipClassifier(nn.Module):
    """Video RM / evaluation classifier: prompt (27 classes) from a (B, C, F, L) clip.

    3x3 convolutions over (frames, space), halving L twice so the net stays cheap; ``pool``
    (avg | max) and ``width`` differ between the video RM and the independent evaluator.
    ``features`` is the penultimate layer (the FD's feature space for the eval classifier).
    """

    def __init__(
        self, channels: int = 3, width: int = 16, classes: int = 27, pool: str = "avg"
    ) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1),
            nn.SiLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1, stride=(1, 2)),
            nn.SiLU(),
            nn.Conv2d(2 * width, 2 * width, 3, padding=1, stride=(1, 2)),
            nn.SiLU(),
            nn.AdaptiveAvgPool2d(1) if pool == "avg" else nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
            nn.Linear(2 * width, 2 * width),
            nn.SiLU(),
        )
        self.head = nn.Linear(2 * width, classes)

    def features(self, clips: torch.Tensor) -> torch.Tensor:
        if clips.dim() == 5:
            clips = clips.flatten(3)
        return self.body(clips)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(clips))
