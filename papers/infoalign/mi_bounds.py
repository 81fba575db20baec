r"""Secondary claim: a decoder (Barber-Agakov) MI bound can reach the truth, InfoNCE cannot.

Brief `infoalign.md` Sec. 5, acceptance item 2. The paper argues that InfoAlign's decoder-based
sufficiency term bounds I(Z; X_context) more tightly than the encoder-based InfoNCE bound of
contrastive alignment. We check both bounds on a pair with known mutual information:

    X ~ N(0, I_dim),  Y = X + noise * eps,  I(X; Y) = dim/2 * ln(1 + 1/noise^2)

(9.976 nats for dim = 8, noise = 0.3).

* Barber-Agakov: I(X; Y) >= H(X) + E[log q(x|y)] for any decoder q; H(X) = dim/2 ln(2 pi e).
  The true posterior x|y = N(y / (1 + noise^2), noise^2 / (1 + noise^2) I) is linear-Gaussian,
  so a learned linear-Gaussian q can make the bound tight.
* InfoNCE: ln N - CE of the N x N critic matrix over one batch is <= ln N for *every* critic,
  however good; with ln 128 = 4.852 < 9.976 it cannot reach the truth.

Pure torch, CPU, a few seconds; no global random state is touched.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

Critic = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

DIM = 8
NOISE = 0.3


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run tiny-tensor loops on one intra-op thread, restoring the previous setting after.

    On a busy 2-core box the 1500-step fit took ~35 s with 2 threads and ~1.5 s with 1.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def gaussian_pair(
    n: int, dim: int = DIM, noise: float = NOISE, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """n pairs X ~ N(0, I_dim), Y = X + noise * N(0, I_dim); each (n, dim) float32."""
    x = torch.randn(n, dim, generator=generator)
    y = x + noise * torch.randn(n, dim, generator=generator)
    return x, y


def true_mi(dim: int = DIM, noise: float = NOISE) -> float:
    """I(X; Y) in nats = dim/2 * ln(1 + 1/noise^2)."""
    return 0.5 * dim * math.log1p(1.0 / noise**2)


def gaussian_entropy(dim: int = DIM) -> float:
    """Differential entropy of N(0, I_dim) in nats: dim/2 * ln(2 pi e)."""
    return 0.5 * dim * math.log(2 * math.pi * math.e)


def _log_q(x: torch.Tensor, y: torch.Tensor, weight, bias, log_std) -> torch.Tensor:
    """log N(x; W y + b, diag exp(2 log_std)) per row."""
    mean = y @ weight.T + bias
    resid = (x - mean) * torch.exp(-log_std)
    return (-0.5 * resid.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)


def barber_agakov_bound(
    dim: int = DIM,
    noise: float = NOISE,
    steps: int = 1500,
    lr: float = 1e-2,
    batch: int = 256,
    n_eval: int = 20_000,
    seed: int = 0,
) -> float:
    """H(X) + E[log q(x|y)] with a learned linear-Gaussian decoder, evaluated on fresh pairs.

    q(x|y) = N(W y + b, diag exp(2 s)): W (dim, dim), b, s (dim,) start at 0 and are fitted with
    Adam on `steps` fresh batches of `batch` pairs; the bound is estimated on `n_eval` new pairs.
    """
    gen = _generator(seed)
    weight = torch.zeros(dim, dim, requires_grad=True)
    bias = torch.zeros(dim, requires_grad=True)
    log_std = torch.zeros(dim, requires_grad=True)
    opt = torch.optim.Adam([weight, bias, log_std], lr=lr)
    with single_thread():
        for _ in range(steps):
            x, y = gaussian_pair(batch, dim, noise, gen)
            loss = -_log_q(x, y, weight, bias, log_std).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        x, y = gaussian_pair(n_eval, dim, noise, gen)
        with torch.no_grad():
            expected_log_q = _log_q(x, y, weight, bias, log_std).double().mean().item()
    return gaussian_entropy(dim) + expected_log_q


def optimal_critic(noise: float = NOISE) -> Critic:
    """f(x, y) = -||y - x||^2 / (2 noise^2) as an (N, N) score matrix S[i, j] = f(x_i, y_j).

    It equals log p(x|y) / p(x) up to a function of y, so it is the Bayes-optimal critic when,
    as in `infonce_bound`, each y is matched against the N candidate x's.
    """

    def critic(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -torch.cdist(x.double(), y.double()).square() / (2 * noise**2)

    return critic


def infonce_bound(critic: Critic, x: torch.Tensor, y: torch.Tensor) -> float:
    """InfoNCE estimate on one batch: ln N - CE(scores, diagonal), at most ln N for any critic.

    scores = critic(x, y) (N, N); for every y_j the positive is x_j among the N x's (softmax over
    the rows of column j).
    """
    scores = critic(x, y)
    n = scores.size(0)
    if scores.shape != (n, n):
        raise ValueError(f"critic must return an (N, N) matrix, got {tuple(scores.shape)}")
    labels = torch.arange(n)
    ce = F.cross_entropy(scores.T, labels)  # rows of scores.T = one y against all x
    return math.log(n) - float(ce)


def infonce_estimate(
    batch: int = 128,
    n_batches: int = 50,
    dim: int = DIM,
    noise: float = NOISE,
    seed: int = 0,
    critic: Critic | None = None,
) -> float:
    """Average of `infonce_bound` over `n_batches` fresh batches (optimal critic by default)."""
    gen = _generator(seed)
    critic = optimal_critic(noise) if critic is None else critic
    with single_thread():
        values = [
            infonce_bound(critic, *gaussian_pair(batch, dim, noise, gen)) for _ in range(n_batches)
        ]
    return sum(values) / len(values)


def compare_bounds(
    dim: int = DIM, noise: float = NOISE, batch: int = 128, seed: int = 0
) -> dict[str, float]:
    """The secondary-claim numbers: truth, decoder bound, InfoNCE (optimal critic), ln N."""
    return {
        "true_mi": true_mi(dim, noise),
        "barber_agakov": barber_agakov_bound(dim, noise, seed=seed),
        "infonce": infonce_estimate(batch, dim=dim, noise=noise, seed=seed),
        "log_batch": math.log(batch),
    }
