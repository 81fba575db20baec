"""The two toy bilevel problems of the brief (Sec. 5), as lower/upper objectives.

Toy 1, a quadratic with closed forms: $f(x, y) = \\tfrac12 y^\\top A y - y^\\top(Bx + c)$,
$F(x, y) = \\tfrac12\\lVert y - y_{tgt}\\rVert^2 + \\tfrac\\rho2\\lVert x\\rVert^2$.

Toy 2, data hyper-cleaning on scikit-learn's digits: per-example weights $\\sigma(x_i)$ on a
corrupted training set (lower level: weighted, ridge-regularised softmax regression), chosen to
minimise the clean validation cross-entropy (upper level).

The real rung runs the same hyper-cleaning problem on Fashion-MNIST (``hyper_cleaning.source:
fashion_mnist``), the alternative the paper names beside MNIST (brief Sec. 6): the idx.gz files
of Debian's ``dataset-fashion-mnist`` package, read from the local asset cache
(:func:`load_fashion_mnist`; never downloaded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy.stats import rankdata
from sklearn.datasets import load_digits
from torch.nn import functional as F

from papers.qnbo.config import SOURCES  # hyper-cleaning data: sklearn digits | Fashion-MNIST
from papers.qnbo.method import Bilevel
from shared.assets import require
from shared.idx import read_idx
from shared.images import IMAGE_SOURCES, load_image_set

DTYPE = torch.float64
DIGITS_PIXEL_MAX = 16.0
FASHION_ASSET = "fashion_mnist"
FASHION_PIXEL_MAX = 255.0
FASHION_SIDE = 28  # images are 28 x 28
FASHION_CLASSES = 10
FASHION_FILES = {  # split -> (images, labels) file names inside the asset
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


@dataclass
class Quadratic:
    """Toy 1 with its closed forms (brief Sec. 5)."""

    A: torch.Tensor  # (d_y, d_y) SPD
    B: torch.Tensor  # (d_y, d_x)
    c: torch.Tensor  # (d_y,)
    y_target: torch.Tensor  # (d_y,)
    rho: float

    def bilevel(self) -> Bilevel:
        def lower(x, y):
            return 0.5 * y @ (self.A @ y) - y @ (self.B @ x + self.c)

        def upper(x, y):
            return 0.5 * torch.sum((y - self.y_target) ** 2) + 0.5 * self.rho * torch.sum(x**2)

        return Bilevel(lower, upper)

    def y_star(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.solve(self.A, self.B @ x + self.c)

    def phi(self, x: torch.Tensor) -> float:
        r"""$\Phi(x) = F(x, y^*(x))$."""
        y = self.y_star(x)
        return float(0.5 * torch.sum((y - self.y_target) ** 2) + 0.5 * self.rho * torch.sum(x**2))

    def hypergradient(self, x: torch.Tensor) -> torch.Tensor:
        r"""$\nabla\Phi(x) = \rho x + B^\top A^{-1}(y^* - y_{tgt})$."""
        return self.rho * x + self.B.T @ torch.linalg.solve(self.A, self.y_star(x) - self.y_target)

    def x_star(self) -> torch.Tensor:
        r"""Solves $(M^\top M + \rho I)x = M^\top(y_{tgt} - A^{-1}c)$, $M = A^{-1}B$."""
        M = torch.linalg.solve(self.A, self.B)
        rhs = M.T @ (self.y_target - torch.linalg.solve(self.A, self.c))
        return torch.linalg.solve(M.T @ M + self.rho * torch.eye(M.shape[1], dtype=DTYPE), rhs)

    def upper_step(self) -> float:
        r"""$\alpha = 1/(\lVert M\rVert_2^2 + \rho)$, the inverse smoothness of $\Phi$."""
        M = torch.linalg.solve(self.A, self.B)
        return 1.0 / (float(torch.linalg.matrix_norm(M, ord=2)) ** 2 + self.rho)

    def lower_step(self) -> float:
        r"""$\beta = 1/\lambda_{max}(A)$."""
        return 1.0 / float(torch.linalg.eigvalsh(self.A).max())


def make_quadratic(
    seed: int, d_y: int, d_x: int, condition: float, target_sd: float, rho: float
) -> Quadratic:
    r"""Toy 1: $A = Q\Lambda Q^\top$ with $\Lambda$ log-spaced in [1, condition],
    $B \sim N(0, 1/d_x)$, $c \sim N(0, 1)$, $y_{tgt} \sim N(0, \text{target\_sd}^2)$."""
    gen = torch.Generator().manual_seed(seed)
    Qm, _ = torch.linalg.qr(torch.randn(d_y, d_y, generator=gen, dtype=DTYPE))
    eigen = torch.logspace(0.0, float(np.log10(condition)), d_y, dtype=DTYPE)
    A = Qm @ torch.diag(eigen) @ Qm.T
    A = 0.5 * (A + A.T)
    B = torch.randn(d_y, d_x, generator=gen, dtype=DTYPE) / np.sqrt(d_x)
    c = torch.randn(d_y, generator=gen, dtype=DTYPE)
    y_target = target_sd * torch.randn(d_y, generator=gen, dtype=DTYPE)
    return Quadratic(A, B, c, y_target, rho)


@dataclass
class HyperCleaning:
    """Toy 2: digits with corrupted training labels (brief Sec. 5)."""

    a_train: torch.Tensor  # (n, 65) features + bias
    y_train: torch.Tensor  # (n,) corrupted labels
    a_val: torch.Tensor
    y_val: torch.Tensor
    a_test: torch.Tensor
    y_test: torch.Tensor
    corrupted: torch.Tensor  # (n,) bool
    mu: float
    n_classes: int

    def bilevel(self) -> Bilevel:
        n_features = self.a_train.shape[1]

        def lower(x, w):
            W = w.view(n_features, self.n_classes)
            losses = F.cross_entropy(self.a_train @ W, self.y_train, reduction="none")
            return torch.mean(torch.sigmoid(x) * losses) + 0.5 * self.mu * torch.sum(w**2)

        def upper(x, w):
            W = w.view(n_features, self.n_classes)
            return F.cross_entropy(self.a_val @ W, self.y_val)

        return Bilevel(lower, upper)

    def validation_ce(self, w: torch.Tensor) -> float:
        W = w.view(self.a_train.shape[1], self.n_classes)
        return float(F.cross_entropy(self.a_val @ W, self.y_val))

    def test_accuracy(self, w: torch.Tensor) -> float:
        W = w.view(self.a_train.shape[1], self.n_classes)
        return float((torch.argmax(self.a_test @ W, dim=1) == self.y_test).double().mean())

    def validation_accuracy(self, w: torch.Tensor) -> float:
        W = w.view(self.a_train.shape[1], self.n_classes)
        return float((torch.argmax(self.a_val @ W, dim=1) == self.y_val).double().mean())

    def test_ce(self, w: torch.Tensor) -> float:
        W = w.view(self.a_train.shape[1], self.n_classes)
        return float(F.cross_entropy(self.a_test @ W, self.y_test))

    def corruption_auc(self, x: torch.Tensor) -> float:
        r"""How well the learned weights flag the corrupted labels: the probability that a random
        corrupted example gets a lower weight $\sigma(x_i)$ than a random clean one (ties count
        half; the Mann-Whitney AUC). 0.5 is chance; NaN without both kinds of example. About a
        tenth of the corrupted labels were redrawn as their true class and look clean."""
        bad, good = x[self.corrupted], x[~self.corrupted]
        if bad.numel() == 0 or good.numel() == 0:
            return float("nan")
        ranks = torch.as_tensor(rankdata(torch.cat([bad, good]).numpy()), dtype=DTYPE)
        # AUC of "clean scores higher": (rank sum of clean - n_g (n_g + 1) / 2) / (n_b n_g)
        n_b, n_g = bad.numel(), good.numel()
        return float((ranks[n_b:].sum() - n_g * (n_g + 1) / 2) / (n_b * n_g))

    def lower_step(self) -> float:
        r"""$\beta = 1/\hat L$, $\hat L = 0.25 \max_i\lVert a_i\rVert^2 + \mu$ (Sec. 3.5)."""
        return 1.0 / (0.25 * float((self.a_train**2).sum(1).max()) + self.mu)


class FashionMNISTError(ValueError):
    """A Fashion-MNIST file that is not what the asset table promises; the message names it."""


def _read_split(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, 784)`` uint8 and labels ``(N,)`` of one split, checked for the format's
    shapes, a matching count and labels in 0..9 (a bad file raises naming it)."""
    images, labels = read_idx(images_path), read_idx(labels_path)  # IdxError names the file
    if images.ndim != 3 or images.shape[1:] != (FASHION_SIDE, FASHION_SIDE):
        raise FashionMNISTError(
            f"{images_path}: images of shape {images.shape}, expected (N, 28, 28)"
        )
    if images.dtype != np.uint8:
        raise FashionMNISTError(f"{images_path}: pixels of type {images.dtype}, expected uint8")
    if labels.ndim != 1 or len(labels) != len(images):
        raise FashionMNISTError(
            f"{labels_path}: labels of shape {labels.shape} for {len(images)} images in "
            f"{images_path.name}"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= FASHION_CLASSES):
        raise FashionMNISTError(
            f"{labels_path}: labels in [{labels.min()}, {labels.max()}], expected 0..9"
        )
    return images.reshape(len(images), -1), labels.astype(np.int64)


def load_fashion_mnist(
    files: dict[str, Path] | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fashion-MNIST's train (60k) and test (10k) splits: ``{split: (images, labels)}`` with
    images flattened to ``(N, 784)`` uint8 and labels int64 in 0..9.

    Args:
        files: ``{file name: path}`` of the four idx.gz files; default the verified asset
            (``shared.assets.require("fashion_mnist")``, which raises naming the fetch command
            when it is missing).
    """
    files = require(FASHION_ASSET) if files is None else files
    out = {}
    for split, (images_name, labels_name) in FASHION_FILES.items():
        missing = [n for n in (images_name, labels_name) if n not in files]
        if missing:
            raise FashionMNISTError(f"Fashion-MNIST file {missing[0]} not given")
        out[split] = _read_split(Path(files[images_name]), Path(files[labels_name]))
    return out


def image_splits(
    source: str, path: str | None = None, test_fraction: float = 1 / 7, split_seed: int = 0
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], str]:
    """The training and test splits of an image source, pixels flattened and on [0, 1]:
    ``((train_x, train_y), (test_x, test_y), name)``. fashion_mnist: the asset, pixels / 255;
    idx / npz: a user's set (:func:`shared.images.load_image_set`, its own range)."""
    if source == "fashion_mnist":
        splits = load_fashion_mnist()
        (train_x, train_y), (test_x, test_y) = splits["train"], splits["test"]
        return (
            (train_x / FASHION_PIXEL_MAX, train_y),
            (test_x / FASHION_PIXEL_MAX, test_y),
            "Fashion-MNIST",
        )
    if source not in IMAGE_SOURCES:
        raise ValueError(f"hyper_cleaning.source must be one of {list(SOURCES)}, got {source!r}")
    images = load_image_set(source, path, test_fraction, split_seed)

    def flat(x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), -1).astype(np.float64)

    return (flat(images.x_train), images.y_train), (flat(images.x_test), images.y_test), str(path)


def _hyper_cleaning_pool(
    source: str,
    seed: int,
    n_train: int,
    n_val: int,
    n_test: int | None,
    path: str | None = None,
    test_fraction: float = 1 / 7,
    split_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features (pixels scaled to [0, 1] plus a bias column) and labels of the train, val and
    test examples of one seed, and the seed's random generator for the label corruption.

    digits: a per-seed permutation of the 1797 digits splits train/val/test (test: the rest,
    or its first ``n_test``). fashion_mnist: a per-seed permutation of the 60k training images
    gives train and the clean validation set; test is the official 10k test split (or a
    per-seed subsample of ``n_test`` of it)."""
    rng = np.random.default_rng(seed)
    if source == "digits":
        digits = load_digits()
        features = np.hstack([digits.data / DIGITS_PIXEL_MAX, np.ones((len(digits.target), 1))])
        labels = digits.target.copy()
        order = rng.permutation(len(labels))
        if n_train + n_val >= len(labels):
            raise ValueError(f"n_train + n_val = {n_train + n_val} leaves no digit for testing")
        train, val, test = np.split(order, [n_train, n_train + n_val])
        test = test if n_test is None else test[:n_test]
        return features, labels, train, val, test, rng
    (train_images, train_labels), (test_images, test_labels), name = image_splits(
        source, path, test_fraction, split_seed
    )
    if n_train + n_val > len(train_labels):
        raise ValueError(
            f"n_train + n_val = {n_train + n_val} exceeds {name}'s {len(train_labels)} "
            "training images"
        )
    order = rng.permutation(len(train_labels))
    train, val = order[:n_train], order[n_train : n_train + n_val]
    test_rows = np.arange(len(test_labels))
    if n_test is not None:
        test_rows = np.sort(rng.permutation(len(test_labels))[:n_test])
    rows = np.concatenate([train, val])
    pixels = np.vstack([train_images[rows], test_images[test_rows]])  # on [0, 1] already
    features = np.hstack([pixels, np.ones((len(pixels), 1))])
    labels = np.concatenate([train_labels[rows], test_labels[test_rows]])
    n_fit = len(rows)
    return (
        features,
        labels,
        np.arange(n_train),
        np.arange(n_train, n_fit),
        np.arange(n_fit, len(labels)),
        rng,
    )


def make_hyper_cleaning(
    seed: int,
    n_train: int,
    n_val: int,
    corruption: float,
    mu: float,
    source: str = "digits",
    n_test: int | None = None,
    path: str | None = None,
    test_fraction: float = 1 / 7,
    split_seed: int = 0,
) -> HyperCleaning:
    """Pixels scaled to [0, 1] plus a bias column, split per seed (see
    :func:`_hyper_cleaning_pool`); a ``corruption`` fraction of training labels is replaced by
    uniformly random classes (the same draws for every source)."""
    features, labels, train, val, test, rng = _hyper_cleaning_pool(
        source, seed, n_train, n_val, n_test, path, test_fraction, split_seed
    )
    n_classes = FASHION_CLASSES if source == "fashion_mnist" else int(labels.max()) + 1
    corrupted = np.zeros(n_train, dtype=bool)
    corrupted[rng.permutation(n_train)[: int(round(corruption * n_train))]] = True
    noisy = labels[train].copy()
    noisy[corrupted] = rng.integers(0, n_classes, size=int(corrupted.sum()))

    def t(a, dtype=DTYPE):
        return torch.as_tensor(a, dtype=dtype)

    return HyperCleaning(
        t(features[train]),
        t(noisy, torch.long),
        t(features[val]),
        t(labels[val], torch.long),
        t(features[test]),
        t(labels[test], torch.long),
        t(corrupted, torch.bool),
        mu,
        n_classes,
    )
