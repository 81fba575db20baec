"""Seeding: one call makes python, numpy and torch repeatable; helpers for private streams."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed python's, numpy's legacy and torch's global generators (all devices)."""
    random.seed(seed)
    # Legacy global stream, for third-party code that still draws from it.
    np.random.seed(seed % 2**32)  # noqa: NPY002
    torch.manual_seed(seed)


def numpy_rng(seed: int, *stream: int) -> np.random.Generator:
    """An independent numpy Generator for ``seed`` and an optional stream id.

    Distinct ``stream`` values give statistically independent sequences for the same seed,
    so, e.g., a sampler and a data shuffler never share draws.
    """
    return np.random.default_rng(np.random.SeedSequence([seed, *stream]))


def torch_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A torch Generator seeded with ``seed`` on ``device``."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator
