"""The two toy bilevel problems of the brief (Sec. 5), as lower/upper objectives.

Toy 1, a quadratic with closed forms: $f(x, y) = \\tfrac12 y^\\top A y - y^\\top(Bx + c)$,
$F(x, y) = \\tfrac12\\lVert y - y_{tgt}\\rVert^2 + \\tfrac\\rho2\\lVert x\\rVert^2$.

Toy 2, data hyper-cleaning on scikit-learn's digits: per-example weights $\\sigma(x_i)$ on a
corrupted training set (lower level: weighted, ridge-regularised softmax regression), chosen to
minimise the clean validation cross-entropy (upper level).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch.nn import functional as F

from papers.qnbo.method import Bilevel

DTYPE = torch.float64
DIGITS_PIXEL_MAX = 16.0


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

    def lower_step(self) -> float:
        r"""$\beta = 1/\hat L$, $\hat L = 0.25 \max_i\lVert a_i\rVert^2 + \mu$ (Sec. 3.5)."""
        return 1.0 / (0.25 * float((self.a_train**2).sum(1).max()) + self.mu)


def make_hyper_cleaning(
    seed: int, n_train: int, n_val: int, corruption: float, mu: float
) -> HyperCleaning:
    """Pixels/16 plus a bias column; a per-seed permutation splits train/val/test, and a
    ``corruption`` fraction of training labels is replaced by uniformly random classes."""
    digits = load_digits()
    features = np.hstack([digits.data / DIGITS_PIXEL_MAX, np.ones((len(digits.target), 1))])
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(digits.target))
    train, val, test = np.split(order, [n_train, n_train + n_val])
    labels = digits.target.copy()
    n_classes = int(labels.max()) + 1
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
