"""The toy's image tokenizer: a "tiny VQ" whose codebook is k-means over 4x4 patches.

Brief Sec. 5: images are cut into non-overlapping f x f patches (f = 4: 48-d vectors), the
codebook is k-means with K codes fitted on the patches of the first training images (Lloyd
iterations from K distinct random patches, run-seeded). Encode = index of the nearest code;
decode = paste the code patches. It stands in for LlamaGen's VQ-16 (down-sample 16, 16384
codes): the AR model only ever sees the raster-ordered token grid.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.cluster import KMeans


def patchify(images: np.ndarray, patch: int) -> np.ndarray:
    """(n, H, W, C) -> (n, (H/patch)*(W/patch), patch*patch*C), patches in raster order."""
    n, height, width, channels = images.shape
    if height % patch or width % patch:
        raise ValueError(f"image size {height}x{width} is not a multiple of the patch {patch}")
    grid = images.reshape(n, height // patch, patch, width // patch, patch, channels)
    return grid.transpose(0, 1, 3, 2, 4, 5).reshape(n, -1, patch * patch * channels)


def unpatchify(patches: np.ndarray, patch: int, grid: int, channels: int = 3) -> np.ndarray:
    """Inverse of :func:`patchify` for a square ``grid`` x ``grid`` of patches."""
    n = patches.shape[0]
    x = patches.reshape(n, grid, grid, patch, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, grid * patch, grid * patch, channels)


class KMeansTokenizer:
    """Nearest-code quantiser over image patches; ``codebook`` is (K, patch*patch*3)."""

    def __init__(self, codebook: np.ndarray, patch: int):
        self.codebook = np.asarray(codebook, dtype=np.float32)
        self.patch = patch

    @property
    def vocab_size(self) -> int:
        return len(self.codebook)

    @classmethod
    def fit(
        cls, images: np.ndarray, patch: int, n_codes: int, iterations: int, seed: int
    ) -> KMeansTokenizer:
        """Lloyd's k-means (scikit-learn) from ``n_codes`` distinct random patches."""
        patches = patchify(images, patch).reshape(-1, patch * patch * images.shape[-1])
        distinct = np.unique(patches, axis=0)
        if len(distinct) < n_codes:
            raise ValueError(f"{len(distinct)} distinct patches < {n_codes} codes")
        rng = np.random.default_rng(seed)
        init = distinct[rng.choice(len(distinct), n_codes, replace=False)]
        kmeans = KMeans(n_codes, init=init, n_init=1, max_iter=iterations, tol=0.0)
        kmeans.fit(patches.astype(np.float64))
        return cls(kmeans.cluster_centers_, patch)

    def encode(self, images: np.ndarray) -> np.ndarray:
        """(n, H, W, 3) -> (n, N) int64 token ids in raster order (nearest code, L2)."""
        patches = torch.from_numpy(patchify(np.asarray(images, np.float32), self.patch))
        codebook = torch.from_numpy(self.codebook)
        distance = torch.cdist(patches, codebook.expand(len(patches), -1, -1))  # (n, N, K)
        return distance.argmin(-1).numpy().astype(np.int64)

    def decode(self, tokens: np.ndarray) -> np.ndarray:
        """(n, N) token ids -> (n, H, W, 3) images made of the code patches."""
        tokens = np.asarray(tokens)
        grid = int(round(tokens.shape[1] ** 0.5))
        if grid * grid != tokens.shape[1]:
            raise ValueError(f"{tokens.shape[1]} tokens do not form a square grid")
        return unpatchify(self.codebook[tokens], self.patch, grid)
