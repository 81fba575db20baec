"""Control fidelity: edge F1 with a pixel tolerance (brief Sec. 5 "Metrics", Sec. 3.6)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def dilate(edges: np.ndarray, tolerance: int) -> np.ndarray:
    """Binary dilation of (n, H, W) maps with a (2t+1) x (2t+1) square (t = 0: identity)."""
    if tolerance == 0:
        return np.asarray(edges, dtype=bool)
    x = torch.from_numpy(np.asarray(edges, dtype=np.float32))[:, None]
    size = 2 * tolerance + 1
    return F.max_pool2d(x, size, stride=1, padding=tolerance)[:, 0].numpy() > 0


def edge_f1(predicted: np.ndarray, target: np.ndarray, tolerance: int = 1) -> np.ndarray:
    """Per-image F1 (n,) between predicted and target edge maps (n, H, W).

    precision = share of predicted edge pixels within ``tolerance`` px (Chebyshev) of a target
    edge pixel; recall = share of target edge pixels within ``tolerance`` px of a predicted
    one; F1 = 2PR / (P + R), 0 when both are 0 (an empty prediction scores 0). With
    ``tolerance = 0`` this is the paper's pixel-exact binary F1.
    """
    predicted, target = np.asarray(predicted, bool), np.asarray(target, bool)
    if predicted.shape != target.shape or predicted.ndim != 3:
        raise ValueError(f"edge maps must both be (n, H, W); got {predicted.shape}, {target.shape}")
    axes = (1, 2)
    hit_p = (predicted & dilate(target, tolerance)).sum(axes)
    hit_r = (target & dilate(predicted, tolerance)).sum(axes)
    precision = hit_p / np.maximum(predicted.sum(axes), 1)
    recall = hit_r / np.maximum(target.sum(axes), 1)
    total = precision + recall
    return np.where(total > 0, 2 * precision * recall / np.where(total > 0, total, 1), 0.0)
