"""1-D sprite videos (brief section 5) and the paper-scale data check.

A clip is ``(3, T, L)``: T frames, each a 1-D strip of L RGB pixels in [-1, 1]
(background -1). A prompt is a triple (shape, colour, direction); the 27 triples are the
"short captions". A "long caption" appends distractor tokens (the dense-caption stand-in,
used only for the data-routing rule of Sec. 3.4: RM losses only on short captions).
A 2-D variant (T frames of S x S, one channel) is selectable with ``kind="sprites2d"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

SHAPES = ("box", "tent", "bump")
COLOURS = ("red", "green", "blue")
DIRECTIONS = ("left", "right", "static")
N_PROMPTS = len(SHAPES) * len(COLOURS) * len(DIRECTIONS)  # 27
PAD = 0  # token id 0 pads captions
N_TRIPLE_TOKENS = len(SHAPES) + len(COLOURS) + len(DIRECTIONS)  # 9 content tokens
CAPTION_LEN = 6  # 3 triple tokens + up to 3 distractors
HALF_WIDTH = 3  # pixels either side of the sprite centre that a sprite may light


def prompt_index(shape: np.ndarray, colour: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Index 0..26 of a triple."""
    return (shape * len(COLOURS) + colour) * len(DIRECTIONS) + direction


def prompt_triple(index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`prompt_index`."""
    index = np.asarray(index)
    return index // 9, (index // 3) % 3, index % 3


def prompt_name(index: int) -> str:
    s, c, d = (int(v) for v in prompt_triple(np.asarray(index)))
    return f"{COLOURS[c]} {SHAPES[s]} {DIRECTIONS[d]}"


def sprite_profile(shape: int, positions: np.ndarray, centre: float) -> np.ndarray:
    """Intensity in [0, 1] of a sprite centred at ``centre`` over pixel ``positions``."""
    offset = positions - centre
    if shape == 0:  # box: width-5 rectangle
        return (np.abs(offset) <= 2.0).astype(np.float32)
    if shape == 1:  # tent: triangle of half-width 3
        return np.clip(1.0 - np.abs(offset) / HALF_WIDTH, 0.0, 1.0).astype(np.float32)
    return np.exp(-0.5 * (offset / 1.2) ** 2).astype(np.float32)  # bump: Gaussian


def short_caption(index: np.ndarray) -> np.ndarray:
    """Token ids (n, CAPTION_LEN): shape, colour, direction tokens, then padding."""
    s, c, d = prompt_triple(index)
    tokens = np.zeros((len(s), CAPTION_LEN), dtype=np.int64)
    tokens[:, 0] = 1 + s
    tokens[:, 1] = 1 + len(SHAPES) + c
    tokens[:, 2] = 1 + len(SHAPES) + len(COLOURS) + d
    return tokens


@dataclass
class SpriteClips:
    """A set of clips with their prompts and captions (numpy, float32 pixels)."""

    clips: np.ndarray  # (n, C, T, L) or (n, 1, T, S, S)
    prompt: np.ndarray  # (n,) prompt index 0..26
    tokens: np.ndarray  # (n, CAPTION_LEN) caption token ids (short or long)
    is_short: np.ndarray  # (n,) bool: the caption is the bare triple

    def __len__(self) -> int:
        return len(self.prompt)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {
            "clips": torch.from_numpy(self.clips),
            "prompt": torch.from_numpy(self.prompt),
            "tokens": torch.from_numpy(self.tokens),
            "is_short": torch.from_numpy(self.is_short),
        }


def render(
    prompt: np.ndarray, start: np.ndarray, frames: int, length: int, speed: float, kind: str
) -> np.ndarray:
    """Pixel clips for prompts and start positions (deterministic given its inputs)."""
    s, c, d = prompt_triple(prompt)
    velocity = np.where(d == 0, -speed, np.where(d == 1, speed, 0.0))
    pix = np.arange(length, dtype=np.float32)
    if kind == "sprites1d":
        out = np.full((len(prompt), 3, frames, length), -1.0, dtype=np.float32)
        for i in range(len(prompt)):
            for f in range(frames):
                out[i, c[i], f] = -1.0 + 2.0 * sprite_profile(
                    int(s[i]), pix, start[i] + velocity[i] * f
                )
        return out
    if kind == "sprites2d":  # one channel; colour sets the sprite's brightness, motion along x
        out = np.full((len(prompt), 1, frames, length, length), -1.0, dtype=np.float32)
        for i in range(len(prompt)):
            row = sprite_profile(int(s[i]), pix, length / 2 - 0.5)
            level = (1 + c[i]) / 3.0
            for f in range(frames):
                col = sprite_profile(int(s[i]), pix, start[i] + velocity[i] * f)
                out[i, 0, f] = -1.0 + 2.0 * level * np.outer(row, col)
        return out
    raise ValueError(f"data.kind must be 'sprites1d' or 'sprites2d', got {kind!r}")


def make_toy_data(
    n: int,
    seed: int,
    frames: int = 8,
    length: int = 32,
    speed: float = 2.0,
    long_caption_fraction: float = 0.5,
    n_distractors: int = 12,
    kind: str = "sprites1d",
    prompts: np.ndarray | None = None,
) -> SpriteClips:
    """Seeded sprite clips (brief Sec. 5): uniform prompts, start so the sprite stays inside."""
    rng = np.random.default_rng(seed)
    prompt = rng.integers(0, N_PROMPTS, size=n) if prompts is None else np.asarray(prompts)
    _, _, d = prompt_triple(prompt)
    travel = speed * (frames - 1)
    lo, hi = HALF_WIDTH, length - 1 - HALF_WIDTH
    u = rng.random(len(prompt))
    start = np.where(
        d == 0,
        lo + travel + u * (hi - lo - travel),
        np.where(d == 1, lo + u * (hi - lo - travel), lo + u * (hi - lo)),
    )
    clips = render(prompt, start, frames, length, speed, kind)
    tokens = short_caption(prompt)
    is_short = rng.random(len(prompt)) >= long_caption_fraction
    distractors = 1 + N_TRIPLE_TOKENS + rng.integers(0, n_distractors, size=(len(prompt), 3))
    tokens[~is_short, 3:] = distractors[~is_short]
    return SpriteClips(
        clips=clips, prompt=prompt.astype(np.int64), tokens=tokens, is_short=is_short
    )


def vocab_size(n_distractors: int) -> int:
    return 1 + N_TRIPLE_TOKENS + n_distractors


def centroid_direction(clips: torch.Tensor, dead_zone: float) -> torch.Tensor:
    """Direction (0 left, 1 right, 2 static) from the intensity-weighted centroid track.

    ``clips``: (n, C, T, L) in [-1, 1]. Intensity = max over channels of (x + 1) / 2; the
    centroid's least-squares slope in px/frame with |slope| < dead_zone read as static.
    """
    intensity = ((clips.clamp(-1, 1) + 1) / 2).amax(dim=1)  # (n, T, L)
    if intensity.dim() == 4:  # 2-D variant: collapse rows
        intensity = intensity.sum(dim=2)
    pos = torch.arange(intensity.shape[-1], dtype=intensity.dtype)
    mass = intensity.sum(-1).clamp_min(1e-6)
    centre = (intensity * pos).sum(-1) / mass  # (n, T)
    t = torch.arange(centre.shape[1], dtype=centre.dtype)
    t = t - t.mean()
    slope = (centre * t).sum(-1) / (t * t).sum()
    return torch.where(slope <= -dead_zone, 0, torch.where(slope >= dead_zone, 1, 2))


def check_paper_data(root: str | Path) -> list[str]:
    """Missing items of the paper-scale data layout (pre-encoded latent records)."""
    root = Path(root)
    need = [root / "records"]
    return [
        f"{p} (pre-computed Algorithm 1 records: *.safetensors)" for p in need if not p.is_dir()
    ]


def config_split(data_cfg, split: str):
    """The configured ``"train"`` or ``"heldout"`` split (``DataConfig``: sizes, seeds, kind)."""
    n, seed = (
        (data_cfg.n_train, data_cfg.train_seed)
        if split == "train"
        else (data_cfg.n_heldout, data_cfg.heldout_seed)
    )
    return make_toy_data(
        n,
        seed,
        data_cfg.frames,
        data_cfg.length,
        data_cfg.speed,
        data_cfg.long_caption_fraction,
        data_cfg.n_distractors,
        data_cfg.kind,
    )
