"""Plotting helpers: learning curves with a mean ± std band over seeds, saved as PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: CI and clusters have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_curves(
    curves: dict[str, np.ndarray],
    x: np.ndarray,
    path: Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    labels: dict[str, str] | None = None,
    logy: bool = False,
) -> Path:
    """One line per method: the mean over seeds with a ±1 std band.

    Args:
        curves: method -> array of shape (seeds, len(x)).
        x: the shared x-axis values.
        path: where to write the PNG (folders are created).
    """
    labels = labels or {}
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for method, values in curves.items():
        values = np.asarray(values, dtype=float)  # (S, T)
        mean, std = values.mean(axis=0), values.std(axis=0)
        (line,) = ax.plot(x, mean, label=labels.get(method, method), linewidth=1.6)
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=8, loc="best")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
