"""Data of the ControlAR experiment.

Toy (brief Sec. 5): 32x32 RGB images of 1-3 axis-aligned filled rectangles on a background,
in a palette of 8 colours, and their binary edge maps as the control. Paper scale (brief
Sec. 6): a local folder of precomputed VQ codes and control maps (as the official
``extract_file_*.py`` scripts write them); nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

# brief Sec. 5: the 8 palette colours (RGB in [0, 1])
PALETTE = np.array(
    [
        (0.1, 0.1, 0.1),
        (0.9, 0.1, 0.1),
        (0.1, 0.8, 0.2),
        (0.2, 0.3, 0.9),
        (0.9, 0.9, 0.2),
        (0.8, 0.3, 0.8),
        (0.2, 0.8, 0.8),
        (0.95, 0.95, 0.95),
    ],
    dtype=np.float32,
)


def make_rectangle_images(
    n: int,
    rng: np.random.Generator,
    size: int = 32,
    min_side: int = 8,
    max_side: int = 20,
    max_rectangles: int = 3,
) -> np.ndarray:
    """``n`` images (n, size, size, 3): a random palette background, then 1..max_rectangles
    filled rectangles with even sides in [min_side, max_side] and even top-left corners inside
    the image, each a random palette colour (later ones overwrite earlier ones)."""
    images = np.empty((n, size, size, 3), dtype=np.float32)
    sides = np.arange(min_side, max_side + 1, 2)
    for i in range(n):
        images[i] = PALETTE[rng.integers(len(PALETTE))]
        for _ in range(rng.integers(1, max_rectangles + 1)):
            h, w = rng.choice(sides, size=2)
            top, left = 2 * rng.integers(0, size // 2, size=2)
            images[i, top : top + h, left : left + w] = PALETTE[rng.integers(len(PALETTE))]
    return images


def edge_map(images: np.ndarray, threshold: float = 0.3) -> np.ndarray:
    """Binary edge map (n, H, W) of images (n, H, W, 3): pixel (i, j) is an edge when the L1
    colour difference to its left or upper neighbour exceeds ``threshold`` (brief Sec. 5; exact
    for piecewise-constant images, applied alike to generated ones)."""
    images = np.asarray(images, dtype=np.float32)
    edges = np.zeros(images.shape[:3], dtype=bool)
    left = np.abs(images[:, :, 1:] - images[:, :, :-1]).sum(-1) > threshold
    up = np.abs(images[:, 1:, :] - images[:, :-1, :]).sum(-1) > threshold
    edges[:, :, 1:] |= left
    edges[:, 1:, :] |= up
    return edges


@dataclass
class ToyData:
    """Training and test images with their control (edge) maps."""

    train_images: np.ndarray  # (n_train, H, W, 3) float32 in [0, 1]
    train_controls: np.ndarray  # (n_train, H, W) bool
    test_images: np.ndarray  # (n_test, H, W, 3)
    test_controls: np.ndarray  # (n_test, H, W)


def make_toy_data(
    seed: int,
    n_train: int,
    n_test: int,
    test_seed_offset: int,
    size: int = 32,
    edge_threshold: float = 0.3,
) -> ToyData:
    """Train set from generator seed ``seed``, test set from ``test_seed_offset + seed``."""
    train = make_rectangle_images(n_train, np.random.default_rng(seed), size)
    test = make_rectangle_images(n_test, np.random.default_rng(test_seed_offset + seed), size)
    return ToyData(train, edge_map(train, edge_threshold), test, edge_map(test, edge_threshold))


# ------------------------------------------------------------------ paper scale


CODES_DIR, CONTROLS_DIR, LABELS_FILE = "codes", "controls", "labels.npy"


@dataclass
class CodeFolder:
    """A local folder of precomputed training data (brief Sec. 6)::

        <root>/codes/<name>.npy      VQ-16 code grid of the image, (h, w) integer
        <root>/controls/<name>.npy   control map at image resolution, (H, W) uint8 / bool
        <root>/labels.npy            (optional) class index per sorted name, int

    ``names`` are the stems present in both folders, sorted.
    """

    root: Path
    names: list[str]
    labels: np.ndarray | None

    @classmethod
    def open(cls, root: str | Path) -> CodeFolder:
        root = Path(root)
        missing = [str(root / d) for d in (CODES_DIR, CONTROLS_DIR) if not (root / d).is_dir()]
        if missing:
            raise FileNotFoundError(
                f"data.root must hold {CODES_DIR}/ and {CONTROLS_DIR}/ (.npy per image); "
                f"missing: {', '.join(missing)} (nothing is downloaded)"
            )
        codes = {p.stem for p in (root / CODES_DIR).glob("*.npy")}
        controls = {p.stem for p in (root / CONTROLS_DIR).glob("*.npy")}
        names = sorted(codes & controls)
        if not names:
            raise FileNotFoundError(f"{root}: no image has both codes/<name>.npy and controls/")
        labels = np.load(root / LABELS_FILE) if (root / LABELS_FILE).is_file() else None
        if labels is not None and len(labels) != len(names):
            raise ValueError(f"{root / LABELS_FILE}: {len(labels)} labels for {len(names)} images")
        return cls(root, names, labels)

    def __len__(self) -> int:
        return len(self.names)

    def item(self, index: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(codes (h*w,) int64 in raster order, control map (H, W) float32 in {0, 1}, label)."""
        name = self.names[index]
        codes = np.load(self.root / CODES_DIR / f"{name}.npy").astype(np.int64).reshape(-1)
        control = np.load(self.root / CONTROLS_DIR / f"{name}.npy").astype(np.float32)
        if control.ndim != 2:
            raise ValueError(f"{name}: control map must be (H, W), got shape {control.shape}")
        control = (control > 0).astype(np.float32) if control.max() > 1 else control
        label = int(self.labels[index]) if self.labels is not None else 0
        return codes, control, label
