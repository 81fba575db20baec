"""Checkpoints that load with ``weights_only=True`` and are written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write ``state`` to ``path`` atomically (a crash mid-write never leaves a torn file).

    ``state`` must hold only tensors, python scalars, strings, lists and dicts so that
    :func:`load_checkpoint` can use the safe ``weights_only`` unpickler.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Load a checkpoint with the safe unpickler (no arbitrary code runs)."""
    return torch.load(path, map_location="cpu", weights_only=True)
