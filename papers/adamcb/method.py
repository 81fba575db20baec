r"""
# Adam Optimization with Adaptive Batch Selection (AdamCB)

Kim & Oh, ICLR 2025, [arXiv 2512.06795](https://arxiv.org/abs/2512.06795).

Adam draws its mini-batches uniformly. AdamCB treats every training example as an arm of a
*combinatorial* (multiple-play) bandit: each step it

1. turns one weight per example into inclusion probabilities $p_i$ with $\sum_i p_i = K$ and
   $p_i \le 1$ (Exp3.M, with the largest weights capped),
2. draws **K distinct** examples by dependent rounding, so that $P(i \in J_t) = p_i$ exactly,
3. forms the unbiased gradient $\hat g_t = \sum_{j \in J_t} \nabla f_j / (n p_j)$ and takes an
   Adam-type step (see `optimizers.py`),
4. feeds the K per-example gradient norms back into the weights, so that examples whose
   gradients are large (or which were rarely played) gain probability.

This module holds the contribution only: the Exp3.M probabilities, DepRound, the samplers of
AdamCB and of its baselines (uniform, AdamBS as coded, corrected AdamBS), per-sample gradients and
the importance-weighted loss. It has no Hydra, no I/O and no global state; every random draw goes
through a `numpy.random.Generator` owned by a sampler.

Section numbers ("Sec. 3.1 step 1.2") refer to the implementation brief `adamcb.md`, which follows
the first author's code (commit `49c2c7f`) and the paper.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

# The loss of a model output against its targets, e.g. `torch.nn.functional.cross_entropy`.
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
# Per-sample gradient norms fed back to a sampler, shape (K,): an array or a (any-device) tensor.
Norms = np.ndarray | torch.Tensor


def _check_k_gamma(n: int, K: int, gamma: float) -> None:
    r"""Validate the bandit sizes shared by every sampler: $1 \le K < n$, $0 < \gamma < 1$."""
    if not 1 <= K < n:
        raise ValueError(f"need 1 <= K < n, got K={K}, n={n}")
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"need 0 < gamma < 1, got gamma={gamma}")


def exp3m_probabilities(
    log_weights: np.ndarray, K: int, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exp3.M inclusion probabilities with capping of the largest weights.

    Sec. 3.1 step 1 (Exp3.M probabilities), steps 1.1-1.4, computed from log-weights
    (Sec. 3.6 "Log-weights": the maximum is subtracted before exponentiating, so the result
    is invariant to a common shift and never overflows or underflows).

    Step 1.1: $\tau = (1/K - \gamma/n) / (1 - \gamma)$.

    Step 1.2 (capping): with the weights sorted decreasingly, $w_{(0)} \ge w_{(1)} \ge \dots$,
    and suffix sums $S_i = \sum_{j \ge i} w_{(j)}$, take
    $\alpha_t = \tau S_i / (1 - i\tau)$ at the first $i$ where $\alpha_t > w_{(i)}$ and cap the
    $i$ largest weights at $\alpha_t$. At $i = 0$ the test reads $\tau \sum_j w_j > \max_j w_j$,
    which is exactly the "no capping" case of step 1.3, so one scan covers both steps.

    Step 1.4: $p_i = K [(1-\gamma) w'_i / \sum_j w'_j + \gamma / n]$.

    The scan is vectorised and stays in log space: all candidate $\log\alpha$ come from one
    reversed `logaddexp` accumulation, so weights that differ by more than the float range
    (e.g. a capped arm $e^{1000}$ times heavier than the rest) neither overflow nor collapse to
    0. Only $i$ with $1 - i\tau > 0$ are candidates; since $\tau > 1/K$ there are fewer than $K$
    of them, and the first one that qualifies always exists (the last candidate's $\alpha$
    exceeds every weight).

    S_null is defined by sorted position (the $i$ largest weights), which equals the brief's
    $\{i : w_i \ge \alpha_t\}$ in exact arithmetic and is immune to round-off at ties.

    Args:
        log_weights: log of the Exp3.M weights, one per example, shape (n,).
        K: number of plays (batch size), $1 \le K < n$.
        gamma: exploration rate, $0 < \gamma < 1$ (official value 0.4, Sec. 3.1 step 5.5).

    Returns:
        `(p, capped)`: `p` (n,) float64 with $\sum p = K$ up to round-off, $K\gamma/n \le p \le 1$,
        and `p == 1.0` exactly on S_null; `capped` (n,) bool mask of S_null.

    Raises:
        ValueError: on a non-1-D or non-finite input, or K, gamma out of range.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    if log_weights.ndim != 1:
        raise ValueError(f"log_weights must be 1-D, got shape {log_weights.shape}")
    if not np.all(np.isfinite(log_weights)):
        raise ValueError("log_weights must be finite")
    n = log_weights.shape[0]
    _check_k_gamma(n, K, gamma)

    # Step 1.1
    tau = (1.0 / K - gamma / n) / (1.0 - gamma)

    log_w = log_weights - log_weights.max()  # (n,) Sec. 3.6 shift: the largest weight is 1

    # Step 1.3 first, as the official code does: with max w = 1, no arm is capped iff
    # tau * sum(w) > 1 (the scan's i = 0 test). Most steps end here, without the O(n log n)
    # sort; the result is the one the scan gives with n_capped = 0, bit for bit.
    w = np.exp(log_w)  # (n,) w up to the common factor e^{-max}
    w_sum = w.sum()
    if tau * w_sum > 1.0:
        p = K * ((1.0 - gamma) * w / w_sum + gamma / n)  # (n,) step 1.4
        np.minimum(p, 1.0, out=p)
        return p, np.zeros(n, dtype=bool)

    return _exp3m_scan(log_w, K, gamma, tau)


def _exp3m_scan(
    log_w: np.ndarray, K: int, gamma: float, tau: float
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1.2-1.4 of :func:`exp3m_probabilities` by the sorted scan, for shifted
    log-weights `log_w` (max 0) and threshold `tau`; covers the no-capping case as well."""
    n = log_w.shape[0]
    # Step 1.2: the scan over sorted weights, in log space.
    order = np.argsort(-log_w, kind="stable")  # (n,) indices, largest weight first
    log_w_sorted = log_w[order]  # (n,) log w_(i)
    log_suffix = np.logaddexp.accumulate(log_w_sorted[::-1])[::-1]  # (n,) log S_i
    denom = 1.0 - np.arange(n) * tau  # (n,) 1 - i tau
    candidate = denom > 0.0  # (n,) True on a prefix
    log_alphas = np.full(n, np.inf)  # (n,) log alpha_i
    log_alphas[candidate] = np.log(tau) + log_suffix[candidate] - np.log(denom[candidate])
    hit = candidate & (log_alphas > log_w_sorted)  # (n,) alpha_i > w_(i)
    if not hit.any():  # cannot happen for finite log-weights (see above)
        raise RuntimeError("Exp3.M capping scan found no threshold")
    n_capped = int(np.argmax(hit))  # first i with alpha_i > w_(i)

    capped = np.zeros(n, dtype=bool)  # (n,)
    capped[order[:n_capped]] = True
    log_w_capped = log_w.copy()  # (n,) log w'
    log_w_capped[capped] = log_alphas[n_capped]
    w_capped = np.exp(log_w_capped - log_w_capped.max())  # (n,) w' up to a common factor

    # Step 1.4
    p = K * ((1.0 - gamma) * w_capped / w_capped.sum() + gamma / n)  # (n,)
    p[capped] = 1.0  # exact on S_null (equals 1 up to round-off by the choice of alpha)
    np.minimum(p, 1.0, out=p)  # round-off guard for weights just below alpha
    return p, capped


def dep_round(p: np.ndarray, rng: np.random.Generator, tol: float = 1e-9) -> np.ndarray:
    r"""Dependent rounding (Gandhi et al. 2006): K distinct indices with $P(i \in J) = p_i$.

    Sec. 3.1 step 2 and Sec. 3.3. While two entries $i \ne j$ are strictly fractional, set
    $a = \min(1 - p_i, p_j)$, $b = \min(p_i, 1 - p_j)$ and, with probability $b/(a+b)$, move
    $p_i \mathrel{+}= a, p_j \mathrel{-}= a$, otherwise $p_i \mathrel{-}= b,
    p_j \mathrel{+}= b$. Both moves keep $p_i + p_j$ and $E[p_i]$ unchanged, and at least one
    of the two entries becomes 0 or 1, so the final 0/1 vector has the same sum (K) and the same
    marginals as $p$.

    Pairing order: a "carrier" (the one fractional entry left so far) is paired with each next
    fractional entry in index order, with one uniform coin per fractional entry. This chain is
    computed without a Python loop (:func:`_dep_round_chain`): the value the carrier holds
    after each pairing is not random, only *which* index holds it is. Values within `tol` of 0
    or 1 count as integral and are snapped; a single fractional entry left over by float
    round-off is rounded by $> 0.5$ (Sec. 3.3). This is *not*
    `np.random.choice(..., replace=False)`, whose inclusion probabilities differ from $p$
    (Sec. 3.6).

    Args:
        p: inclusion probabilities, shape (n,), in [0, 1] with an integral sum K.
        rng: generator consumed for the coin flips (one uniform per fractional entry).
        tol: integrality tolerance for entries and for the sum (Sec. 3.3 default 1e-9).

    Returns:
        Sorted int64 array of shape (K,) with K = round(sum p) distinct indices.

    Raises:
        ValueError: if `p` is not 1-D, not finite, outside [0, 1] beyond `tol`, or its sum is
            not an integer within `tol`.
    """
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p must be 1-D, got shape {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("p must be finite")
    if p.size and (p.min() < -tol or p.max() > 1.0 + tol):
        raise ValueError(f"p must lie in [0, 1], got range [{p.min()}, {p.max()}]")
    total = float(p.sum())
    K = round(total)
    if abs(total - K) > tol:
        raise ValueError(f"sum(p) must be an integer within {tol}, got {total!r}")

    q = np.clip(p, 0.0, 1.0)  # (n,)
    fractional = np.flatnonzero((q > tol) & (q < 1.0 - tol))  # (m,) in index order
    coins = rng.random(fractional.size)  # (m,) coins[0] is never used: nothing to pair with
    chosen_mask = q >= 1.0 - tol  # (n,) integral entries keep their value
    chosen_mask[fractional] = _dep_round_chain(q[fractional], coins, tol)

    chosen = np.flatnonzero(chosen_mask).astype(np.int64)  # (K,) sorted
    if chosen.shape[0] != K:
        raise RuntimeError(f"DepRound produced {chosen.shape[0]} indices, expected {K}")
    return chosen


def _dep_round_chain(v: np.ndarray, coins: np.ndarray, tol: float) -> np.ndarray:
    r"""Final 0/1 values of the fractional entries `v` (m,) after the pairing chain of
    :func:`dep_round`, computed with array operations.

    Pairing the carrier's value $c$ with the next entry $v_k$ leaves the value
    $c + v_k$ (no crossing, $c + v_k < 1$) or $c + v_k - 1$ (crossing) on one of the two and
    finalises the other at 0 or 1 respectively. So within a *segment* (the chain restarts
    whenever the carried value lands within `tol` of 0 or 1, and both entries are then
    integral) the carried value is the fractional part of the partial sum
    $P_k = v_s + \dots + v_k$, whatever the coins. The coin $k$ only decides which of the
    two entries keeps it: with $a, b$ as in :func:`dep_round`, the first move
    (probability $b/(a+b)$) keeps the carrier when there is no crossing and hands the carried
    value to $k$ when there is one.

    Args:
        v: fractional entries, shape (m,), each in (tol, 1 - tol), in pairing order.
        coins: one uniform per entry, shape (m,); ``coins[k]`` decides pairing k.
        tol: integrality tolerance.

    Returns:
        Boolean array (m,): True where the entry rounds to 1.
    """
    m = v.size
    if m == 0:
        return np.zeros(0, dtype=bool)
    positions = np.arange(m)
    prefix = np.cumsum(v)  # (m,) S_k
    before = np.concatenate([[0.0], prefix[:-1]])  # (m,) S_{k-1}
    # Segment ends ("resets") depend on the segment starts, which depend on the resets. The
    # prefix of agreement with the sequential chain grows with every pass (the first wrong
    # reset is fixed by the next pass), so this reaches the unique fixed point; one or two
    # passes in practice.
    reset = np.zeros(m, dtype=bool)  # (m,) the carried value becomes integral at pairing k
    while True:
        start = np.concatenate([[True], reset[:-1]])  # (m,) k starts a segment
        segment = np.maximum.accumulate(np.where(start, positions, 0))  # (m,) its start s
        partial = prefix - before[segment]  # (m,) P_k = v_s + ... + v_k
        new_reset = ~start & (np.abs(partial - np.rint(partial)) <= tol)
        if np.array_equal(new_reset, reset):
            break
        reset = new_reset

    carried = partial - np.floor(partial)  # (m,) value the carrier holds after pairing k
    c = np.concatenate([[0.0], carried[:-1]])  # (m,) carrier's value before pairing k
    a = np.minimum(1.0 - c, v)  # (m,) meaningful where ~start
    b = np.minimum(c, 1.0 - v)
    first = coins * (a + b) < b  # (m,) the move of probability b / (a + b)
    crossing = c + v > 1.0  # (m,) the finalised entry gets 1 (else 0)
    paired = ~start & ~reset  # (m,) an ordinary pairing: one entry finalised, one carries
    handover = paired & (first == crossing)  # (m,) entry k becomes the carrier
    becomes_carrier = start | handover  # (m,)
    last = np.maximum.accumulate(np.where(becomes_carrier, positions, -1))  # (m,)
    old = np.concatenate([[-1], last[:-1]])  # (m,) the carrier before pairing k

    value = np.zeros(m, dtype=bool)  # (m,) every entry is finalised exactly once, below
    finalised = np.where(handover, old, positions)[paired]  # the entry that stops carrying
    value[finalised] = crossing[paired]
    value[old[reset]] = first[reset]  # a reset finalises both: the carrier gets 1 on `first`
    value[reset] = ~first[reset]
    if not reset[-1]:  # the last carrier holds a round-off leftover (Sec. 3.3)
        value[last[-1]] = carried[-1] > 0.5
    return value


class NormRange:
    r"""Running min and max of all per-sample gradient norms seen so far.

    Sec. 3.1 step 5.1: $\bar g_j = (\|\nabla f_j\| - \min) / (\max - \min) \in [0, 1]$
    plays the role of "L = 1" in the paper's bound. Sec. 3.6: on the first step
    $\max = \min$ is possible (e.g. K = 1); then every norm is normalised to 0.
    """

    def __init__(self) -> None:
        self.min = float("inf")
        self.max = float("-inf")

    def update(self, norms: np.ndarray) -> None:
        """Widen the range with this step's norms (Sec. 3.1 step 5.1).

        Args:
            norms: per-sample gradient norms, shape (K,).
        """
        norms = np.asarray(norms, dtype=np.float64)
        if norms.size == 0:
            return
        self.min = min(self.min, float(norms.min()))
        self.max = max(self.max, float(norms.max()))

    def normalise(self, norms: np.ndarray) -> np.ndarray:
        """Map norms into [0, 1] with the running range (Sec. 3.1 step 5.1, Sec. 3.6 guard).

        Args:
            norms: per-sample gradient norms, shape (K,).

        Returns:
            Normalised norms, shape (K,), clipped to [0, 1]; all zeros while max <= min.
        """
        norms = np.asarray(norms, dtype=np.float64)
        span = self.max - self.min
        if not span > 0.0:  # also catches the empty range (inf - inf = nan)
            return np.zeros_like(norms)
        return np.clip((norms - self.min) / span, 0.0, 1.0)

    def state_dict(self) -> dict:
        """Return the range as Python floats."""
        return {"min": self.min, "max": self.max}

    def load_state_dict(self, state: dict) -> None:
        """Restore the range saved by `state_dict`."""
        self.min = float(state["min"])
        self.max = float(state["max"])


@dataclass
class Draw:
    r"""One sampled batch and everything the gradient estimate and the update need.

    Sec. 3.1 steps 2-3 and Sec. 3.6 (the p used for sampling, for $\hat g$ and for the weight
    update must be identical, so it is stored here).

    Attributes:
        indices: example indices, shape (K,) int64; may repeat for with-replacement samplers.
        weights: importance weights $1/(n \bar p_j)$, shape (K,) float64, such that
            $\hat g = \frac1K \sum_j \text{weights}_j \nabla f_{\text{indices}_j}$ is unbiased
            for $\frac1n \sum_i \nabla f_i$ (all ones for uniform sampling).
        probs: the normalised distribution $\bar p$ used, shape (n,) float64, summing to 1
            ($\bar p = p / K$ for AdamCB, the per-draw distribution for with-replacement samplers).
        capped: S_null mask, shape (n,) bool; all False for samplers without capping.
    """

    indices: np.ndarray  # (K,) int64
    weights: np.ndarray  # (K,) float64
    probs: np.ndarray  # (n,) float64
    capped: np.ndarray  # (n,) bool


class Sampler(abc.ABC):
    """Shared plumbing: sizes, the owned generator, argument checks and (de)serialisation.

    `state_dict` returns only Python scalars, strings, lists, dicts and torch tensors, so it
    passes `torch.load(..., weights_only=True)`; the numpy bit-generator state is a dict of
    (big) Python ints, which that loader accepts.
    """

    def __init__(self, n: int, K: int, seed: int) -> None:
        if not 1 <= K <= n:
            raise ValueError(f"need 1 <= K <= n, got K={K}, n={n}")
        self.n = int(n)
        self.K = int(K)
        self.rng = np.random.default_rng(seed)

    @abc.abstractmethod
    def draw(self) -> Draw:
        """Sample one batch (Sec. 3.1 step 2)."""

    @abc.abstractmethod
    def update(self, draw: Draw, grad_norms: Norms) -> None:
        """Feed back the per-sample gradient norms of `draw` (Sec. 3.1 step 5)."""

    def _check_feedback(self, draw: Draw, grad_norms: Norms) -> np.ndarray:
        """Validate `grad_norms` (K,) against `draw`; return it as a float64 array.

        A torch tensor (e.g. from `per_sample_grad_norms`, on any device) is accepted too.
        """
        if isinstance(grad_norms, torch.Tensor):
            grad_norms = grad_norms.detach().cpu().numpy()
        grad_norms = np.asarray(grad_norms, dtype=np.float64)
        if grad_norms.shape != draw.indices.shape:
            raise ValueError(
                f"grad_norms shape {grad_norms.shape} != indices shape {draw.indices.shape}"
            )
        if not np.all(np.isfinite(grad_norms)) or np.any(grad_norms < 0):
            raise ValueError("grad_norms must be finite and non-negative")
        if draw.probs.shape != (self.n,):
            raise ValueError(f"draw.probs has shape {draw.probs.shape}, expected ({self.n},)")
        return grad_norms

    def _draw_with_replacement(self, probs: np.ndarray) -> Draw:
        r"""K i.i.d. draws from `probs` (n,), summing to 1, with weights $1/(n\,\text{probs}_j)$."""
        indices = self.rng.choice(self.n, size=self.K, replace=True, p=probs).astype(np.int64)
        weights = 1.0 / (self.n * probs[indices])  # (K,)
        return Draw(
            indices=indices, weights=weights, probs=probs, capped=np.zeros(self.n, dtype=bool)
        )

    def _extra_state(self) -> dict:
        return {}

    def _load_extra_state(self, state: dict) -> None:  # noqa: B027 - optional hook
        """Restore what `_extra_state` saved; samplers without extra state keep this no-op."""

    def state_dict(self) -> dict:
        """Everything needed to continue the identical draw sequence (Sec. 7 item 8)."""
        return {
            "type": type(self).__name__,
            "n": self.n,
            "K": self.K,
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            **self._extra_state(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a state saved by `state_dict` of the same sampler type and sizes."""
        expected = (type(self).__name__, self.n, self.K)
        found = (state["type"], int(state["n"]), int(state["K"]))
        if found != expected:
            raise ValueError(f"state is for (type, n, K) = {found}, this sampler is {expected}")
        self.rng.bit_generator.state = copy.deepcopy(state["rng"])
        self._load_extra_state(state)


class UniformSampler(Sampler):
    r"""Uniform batches: the Adam / AMSGrad / AdamX baselines and a without-replacement diagnostic.

    Sec. 3.2 (Adam, AMSGrad, AdamX: K i.i.d. uniform draws, `replace=True`) and Sec. 4 (the
    diagnostic "uniform sampling without replacement", `replace=False`: K distinct indices,
    inclusion probability K/n each). In both cases $\bar p = 1/n$ and the importance weights are
    all 1. `update` is a no-op.

    Args:
        n: number of training examples.
        K: batch size ($K \le n$).
        seed: seed of the owned `numpy.random.Generator`.
        replace: draw with replacement (paper baselines) or K distinct indices (diagnostic).
    """

    def __init__(self, n: int, K: int, seed: int, replace: bool = True) -> None:
        super().__init__(n, K, seed)
        self.replace = bool(replace)

    def draw(self) -> Draw:
        """Sample K uniform indices (Sec. 3.2); distinct and sorted when `replace=False`."""
        if self.replace:
            indices = self.rng.integers(0, self.n, size=self.K, dtype=np.int64)  # (K,)
        else:
            indices = np.sort(self.rng.choice(self.n, size=self.K, replace=False))  # (K,)
            indices = indices.astype(np.int64)
        return Draw(
            indices=indices,
            weights=np.ones(self.K),  # 1 / (n * (1/n))
            probs=np.full(self.n, 1.0 / self.n),
            capped=np.zeros(self.n, dtype=bool),
        )

    def update(self, draw: Draw, grad_norms: Norms) -> None:
        """No-op: uniform sampling does not adapt (Sec. 3.2)."""
        self._check_feedback(draw, grad_norms)

    def _extra_state(self) -> dict:
        return {"replace": self.replace}

    def _load_extra_state(self, state: dict) -> None:
        if bool(state["replace"]) != self.replace:
            raise ValueError("state was saved with a different `replace`")


class _LogWeightBandit(Sampler):
    r"""What AdamCB's and corrected AdamBS's samplers share: log-weights and the variance loss.

    Both keep one log-weight per example (starting at 0, $w_i = 1$), a running range of the
    per-sample gradient norms, and the loss of Sec. 3.1 steps 5.1-5.2,
    $\ell_j = -\bar g_j^2 / \bar p_j^2 + 1/p_{\min}^2 \ge 0$ with $p_{\min} = \gamma/n$.
    """

    def __init__(
        self, n: int, K: int, seed: int, gamma: float = 0.4, alpha_p: float | None = None
    ) -> None:
        _check_k_gamma(n, K, gamma)
        super().__init__(n, K, seed)
        self.gamma = float(gamma)
        self.p_min = self.gamma / self.n  # Sec. 3.1 step 5.2
        self.alpha_p = self.p_min**3 if alpha_p is None else float(alpha_p)
        self.log_weights = np.zeros(self.n)  # (n,)
        self.norm_range = NormRange()

    def _variance_loss(self, draw: Draw, grad_norms: Norms) -> tuple[np.ndarray, np.ndarray]:
        """Steps 5.1-5.2: widen the norm range with this step's norms, normalise, and return
        `(loss, p_bar)` of the drawn examples, each of shape (K,)."""
        grad_norms = self._check_feedback(draw, grad_norms)  # (K,)
        self.norm_range.update(grad_norms)
        g_bar = self.norm_range.normalise(grad_norms)  # (K,) in [0, 1]
        p_bar = draw.probs[draw.indices]  # (K,)
        loss = -(g_bar**2) / p_bar**2 + 1.0 / self.p_min**2  # (K,) step 5.2
        return loss, p_bar

    def _extra_state(self) -> dict:
        return {
            "gamma": self.gamma,
            "alpha_p": self.alpha_p,
            "log_weights": torch.from_numpy(self.log_weights.copy()),
            "norm_range": self.norm_range.state_dict(),
        }

    def _load_extra_state(self, state: dict) -> None:
        self.gamma = float(state["gamma"])
        self.p_min = self.gamma / self.n
        self.alpha_p = float(state["alpha_p"])
        self.log_weights = state["log_weights"].numpy().astype(np.float64, copy=True)
        self.norm_range.load_state_dict(state["norm_range"])


class AdamCBSampler(_LogWeightBandit):
    r"""AdamCB's combinatorial-bandit sampler: Exp3.M probabilities + DepRound.

    Sec. 3.1 steps 1, 2 and 5. Log-weights start at 0 ($w_i = 1$).

    Args:
        n: number of training examples.
        K: batch size, $1 \le K < n$.
        seed: seed of the owned `numpy.random.Generator`.
        gamma: exploration rate $\gamma$ (official 0.4, Sec. 3.1 step 5.5).
        alpha_p: weight learning rate; `None` gives the official $p_{\min}^3 = (\gamma/n)^3$
            (Sec. 3.1 step 5.5).
        feedback: `False` gives the ablation of issue 51 (not in the paper): every normalised
            norm $\bar g_j$ is set to 0, so step 5.2's loss is the constant $1/p_{\min}^2$
            and a played arm's log-weight falls by $\alpha_p / (p_{\min}^2 \bar p_j)$
            whatever its gradient: the weights then depend only on which arms were played,
            and when. Everything else (Exp3.M, capping, DepRound, $\hat g$) is unchanged.
    """

    def __init__(
        self,
        n: int,
        K: int,
        seed: int,
        gamma: float = 0.4,
        alpha_p: float | None = None,
        feedback: bool = True,
    ) -> None:
        super().__init__(n, K, seed, gamma, alpha_p)
        self.feedback = bool(feedback)

    def draw(self) -> Draw:
        """Exp3.M probabilities, then DepRound (Sec. 3.1 steps 1-2, weights of step 3)."""
        p, capped = exp3m_probabilities(self.log_weights, self.K, self.gamma)  # (n,), (n,)
        indices = dep_round(p, self.rng)  # (K,) distinct
        probs = p / self.K  # (n,) p-bar, sums to 1
        weights = 1.0 / (self.n * probs[indices])  # (K,)
        return Draw(indices=indices, weights=weights, probs=probs, capped=capped)

    def update(self, draw: Draw, grad_norms: Norms) -> None:
        r"""Exp3.M weight update from the K feedbacks (Sec. 3.1 step 5).

        Step 5.1: widen the running norm range with this step's norms, then normalise.
        Step 5.2: $\ell_j = -\bar g_j^2 / \bar p_j^2 + 1/p_{\min}^2 \ge 0$.
        Step 5.3: $\hat\ell_j = \ell_j / \bar p_j$.
        Step 5.4: $\log w_j \mathrel{-}= \alpha_p \hat\ell_j$ for $j \in J_t \setminus$
        S_null; capped and unplayed arms keep their weights.

        Args:
            draw: the batch returned by `draw()` this step (its `probs` and `capped` are used).
            grad_norms: L2 norms of the drawn examples' gradients, shape (K,), same order as
                `draw.indices`.
        """
        if not self.feedback:  # the ablation: g_bar = 0, the norms are never read
            grad_norms = np.zeros(draw.indices.shape)  # (K,) a zero range normalises to 0
        loss, p_bar = self._variance_loss(draw, grad_norms)  # (K,), (K,) steps 5.1-5.2
        loss_hat = loss / p_bar  # (K,) step 5.3
        free = ~draw.capped[draw.indices]  # (K,) not in S_null
        # DepRound indices are distinct, so fancy-index subtraction is exact.
        self.log_weights[draw.indices[free]] -= self.alpha_p * loss_hat[free]

    def _extra_state(self) -> dict:
        return {**super()._extra_state(), "feedback": self.feedback}

    def _load_extra_state(self, state: dict) -> None:
        super()._load_extra_state(state)
        if bool(state.get("feedback", True)) != self.feedback:
            raise ValueError("state was saved with a different `feedback`")


class CorrectedAdamBSSampler(_LogWeightBandit):
    r"""Corrected AdamBS: Exp3 with gamma-mixing, K draws with replacement.

    Sec. 3.2 "Corrected AdamBS": $\bar p = (1-\gamma) w / \sum w + \gamma / n$; K i.i.d. draws
    from $\bar p$; normalised norms $\bar g$ as in Sec. 3.1 step 5.1;
    $\hat\ell_i = \sum_{\text{draws } j = i} (-\bar g_j^2/\bar p_i^2 + 1/p_{\min}^2)
    / (K \bar p_i)$; $\log w \mathrel{-}= \alpha_p \hat\ell$ with $\alpha_p = p_{\min}^3$.

    Args:
        n: number of training examples.
        K: batch size, $1 \le K < n$.
        seed: seed of the owned `numpy.random.Generator`.
        gamma: exploration rate (official 0.4).
        alpha_p: weight learning rate; `None` gives $(\gamma/n)^3$.
    """

    def probabilities(self) -> np.ndarray:
        r"""The per-draw distribution $\bar p$ (Sec. 3.2), shape (n,), summing to 1."""
        w = np.exp(self.log_weights - self.log_weights.max())  # (n,) Sec. 3.6 shift
        return (1.0 - self.gamma) * w / w.sum() + self.gamma / self.n

    def draw(self) -> Draw:
        r"""K i.i.d. draws from $\bar p$ with weights $1/(n \bar p_j)$ (Sec. 3.2)."""
        return self._draw_with_replacement(self.probabilities())

    def update(self, draw: Draw, grad_norms: Norms) -> None:
        """Log-weight update with losses accumulated over duplicate draws (Sec. 3.2).

        Args:
            draw: the batch returned by `draw()` this step.
            grad_norms: L2 norms of the drawn examples' gradients, shape (K,).
        """
        loss, p_bar = self._variance_loss(draw, grad_norms)  # (K,), (K,)
        per_draw = loss / (self.K * p_bar)  # (K,)
        loss_hat = np.zeros(self.n)  # (n,)
        np.add.at(loss_hat, draw.indices, per_draw)  # sums duplicates
        self.log_weights -= self.alpha_p * loss_hat


class AdamBSSampler(Sampler):
    r"""Original AdamBS (Liu, Wu & Mozafari 2020) exactly as the official code has it.

    Sec. 3.2 "AdamBS (as coded)": $p$ starts uniform and is stored directly (float64, no
    $\gamma$-mixing); K draws with replacement from $p$; with $L$ the running max of the
    **raw** norms,
    $\hat\ell_i = \sum_{\text{draws } j = i} (-\|g_j\|^2/p_i^2 + L^2/p_{\min}^2) / (K p_i)$,
    then $p \leftarrow p \cdot \exp(\text{clip}(-\alpha_p \hat\ell, -c, c))$, renormalised.
    $p_{\min} = \gamma/n$ only enters the loss.

    Args:
        n: number of training examples.
        K: batch size, $1 \le K < n$.
        seed: seed of the owned `numpy.random.Generator`.
        gamma: sets $p_{\min} = \gamma/n$ in the loss (official 0.4).
        alpha_p: step size of the multiplicative update (official 1e-16).
        exp_clip: $c$, the clip on the exponent (official 100).
    """

    def __init__(
        self,
        n: int,
        K: int,
        seed: int,
        gamma: float = 0.4,
        alpha_p: float = 1e-16,
        exp_clip: float = 100.0,
    ) -> None:
        _check_k_gamma(n, K, gamma)
        super().__init__(n, K, seed)
        self.gamma = float(gamma)
        self.p_min = self.gamma / self.n
        self.alpha_p = float(alpha_p)
        self.exp_clip = float(exp_clip)
        self.p = np.full(self.n, 1.0 / self.n)  # (n,)
        self.max_norm = 0.0  # L, running max of raw norms

    def draw(self) -> Draw:
        """K i.i.d. draws from $p$ with weights $1/(n p_j)$ (Sec. 3.2)."""
        return self._draw_with_replacement(self.p.copy())  # a copy: update() replaces self.p

    def update(self, draw: Draw, grad_norms: Norms) -> None:
        """Clipped multiplicative update of $p$ (Sec. 3.2, AdamBS as coded).

        Args:
            draw: the batch returned by `draw()` this step.
            grad_norms: raw L2 norms of the drawn examples' gradients, shape (K,).
        """
        grad_norms = self._check_feedback(draw, grad_norms)  # (K,)
        self.max_norm = max(self.max_norm, float(grad_norms.max()))
        p_drawn = draw.probs[draw.indices]  # (K,)
        loss = -(grad_norms**2) / p_drawn**2 + self.max_norm**2 / self.p_min**2  # (K,)
        per_draw = loss / (self.K * p_drawn)  # (K,)
        loss_hat = np.zeros(self.n)  # (n,)
        np.add.at(loss_hat, draw.indices, per_draw)
        p = draw.probs * np.exp(np.clip(-self.alpha_p * loss_hat, -self.exp_clip, self.exp_clip))
        self.p = p / p.sum()

    def _extra_state(self) -> dict:
        return {
            "gamma": self.gamma,
            "alpha_p": self.alpha_p,
            "exp_clip": self.exp_clip,
            "p": torch.from_numpy(self.p.copy()),
            "max_norm": self.max_norm,
        }

    def _load_extra_state(self, state: dict) -> None:
        self.gamma = float(state["gamma"])
        self.p_min = self.gamma / self.n
        self.alpha_p = float(state["alpha_p"])
        self.exp_clip = float(state["exp_clip"])
        self.p = state["p"].numpy().astype(np.float64, copy=True)
        self.max_norm = float(state["max_norm"])


def _trainable(
    model: torch.nn.Module,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Detached trainable parameters and buffers of `model`, by name."""
    params = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    return params, buffers


def _per_sample_grad_fn(
    model: torch.nn.Module,
    loss_fn: LossFn,
    chunk_size: int | None,
    names: set[str] | None = None,
) -> tuple[dict[str, torch.Tensor], Callable[..., dict[str, torch.Tensor]]]:
    """`vmap(grad(loss of one example))` over the batch dimension (Sec. 3.4).

    Differentiates the trainable parameters in `names` (all of them when `None`); the other
    parameters and the buffers are held fixed.
    """
    params, buffers = _trainable(model)
    fixed = {k: v for k, v in params.items() if names is not None and k not in names}
    params = {k: v for k, v in params.items() if k not in fixed}

    def loss_of_one(
        p: dict[str, torch.Tensor], x_i: torch.Tensor, y_i: torch.Tensor
    ) -> torch.Tensor:
        # A batch of one, so mean-reduced losses are the example's own loss.
        out = functional_call(model, (p, fixed, buffers), (x_i.unsqueeze(0),))
        return loss_fn(out, y_i.unsqueeze(0))

    return params, vmap(grad(loss_of_one), in_dims=(None, 0, 0), chunk_size=chunk_size)


def per_sample_grads(
    model: torch.nn.Module,
    loss_fn: LossFn,
    x: torch.Tensor,
    y: torch.Tensor,
    chunk_size: int | None = None,
) -> dict[str, torch.Tensor]:
    r"""Per-example gradients $\nabla f_j(\theta)$ of every trainable parameter.

    Sec. 3.4: `torch.func.functional_call` + `vmap(grad(loss of one example))`; each example's
    loss is `loss_fn` on a batch of one (e.g. cross-entropy, mean over one). Only parameters
    with `requires_grad` are differentiated; frozen ones and buffers are held fixed. The model
    must have no cross-example coupling such as BatchNorm in training mode (Sec. 3.4), and no
    dropout (vmap refuses random ops by default). `per_sample_grad_norms` uses this for the
    layers its exact shortcut does not cover; the unit tests use it as the reference.

    Args:
        model: the network; its current parameters are used.
        loss_fn: `loss_fn(output, target) -> scalar`.
        x: inputs, shape (K, *input_shape).
        y: targets, shape (K, *target_shape).
        chunk_size: examples per vmap chunk (bounds intermediate memory); `None` = all at once.

    Returns:
        Name -> tensor of shape (K, *param.shape) for each trainable parameter.
    """
    params, fn = _per_sample_grad_fn(model, loss_fn, chunk_size)
    return fn(params, x, y)


def _linear_pass(
    model: torch.nn.Module, loss_fn: LossFn, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, set[str]]:
    r"""Squared per-example gradient norms of the `nn.Linear` layers, from one forward and one
    backward pass over the batch, without forming a per-example gradient.

    A linear layer $z = W a + b$ applied once per example has
    $\partial f_j / \partial W = \delta_j a_j^\top$ and $\partial f_j / \partial b = \delta_j$
    with $\delta_j = \partial f_j / \partial z_j$, hence
    $\lVert \partial f_j / \partial W \rVert_F^2 + \lVert \partial f_j / \partial b \rVert^2
    = \lVert \delta_j \rVert^2 (\lVert a_j \rVert^2 + 1)$. Forward hooks keep each layer's
    input $a$ and output $z$; since examples do not interact (Sec. 3.4), the gradient of
    $\sum_j f_j$ with respect to $z$ has row $j$ equal to $\delta_j$. The per-example losses
    $f_j$ are `loss_fn` on a batch of one, vectorised over the batch, as in `per_sample_grads`.

    Only layers whose hook fired exactly once, on a (K, features) input, are covered (a layer
    applied per token or reused within one forward needs the full per-example gradient).

    Returns:
        ``(squared norms (K,), names of the parameters covered)``.
    """
    layers = {
        name: module
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear)
        and any(p.requires_grad for p in module.parameters(recurse=False))
    }
    calls: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {name: [] for name in layers}

    def recorder(name: str):
        def hook(module, inputs, output):
            calls[name].append((inputs[0], output))

        return hook

    handles = [module.register_forward_hook(recorder(name)) for name, module in layers.items()]
    try:
        with torch.enable_grad():
            out = model(x)  # (K, ...)
    finally:
        for handle in handles:
            handle.remove()
    once = [
        n
        for n in layers
        if len(calls[n]) == 1 and calls[n][0][0].ndim == 2 and len(calls[n][0][0]) == len(x)
    ]
    sq = torch.zeros(x.shape[0], dtype=out.dtype, device=out.device)  # (K,)
    if not once:
        return sq, set()
    with torch.enable_grad():
        per_example = vmap(lambda o, t: loss_fn(o.unsqueeze(0), t.unsqueeze(0)))(out, y)  # (K,)
        deltas = torch.autograd.grad(
            per_example.sum(), [calls[n][0][1] for n in once], allow_unused=True
        )
    covered = set()
    for name, delta in zip(once, deltas, strict=True):
        if delta is None:  # the loss does not depend on this layer: zero gradient
            delta = torch.zeros_like(calls[name][0][1])
        delta_sq = delta.detach().pow(2).sum(dim=1)  # (K,) ||delta_j||^2
        input_sq = calls[name][0][0].detach().pow(2).sum(dim=1)  # (K,) ||a_j||^2
        prefix = f"{name}." if name else ""
        weight, bias = layers[name].weight, layers[name].bias
        if weight.requires_grad:
            sq += delta_sq * input_sq  # ||delta_j a_j^T||_F^2
            covered.add(prefix + "weight")
        if bias is not None and bias.requires_grad:
            sq += delta_sq
            covered.add(prefix + "bias")
    return sq, covered


def per_sample_grad_norms(
    model: torch.nn.Module,
    loss_fn: LossFn,
    x: torch.Tensor,
    y: torch.Tensor,
    chunk_size: int | None = None,
) -> torch.Tensor:
    r"""L2 norms of the per-example gradients over the whole trainable parameter vector.

    Sec. 3.1 step 5.1 (the feedback) and Sec. 3.4:
    $\lVert \nabla f_j \rVert^2 = \sum_{\text{layers}} \lVert \nabla_{\theta_l} f_j \rVert^2$.
    `nn.Linear` layers (the MLPs and the conv nets' heads) contribute
    $\lVert \delta_j \rVert^2 (\lVert a_j \rVert^2 + 1)$ from one batched forward and backward
    pass (`_linear_pass`), exact and without forming per-example gradients. Every other
    trainable parameter (the conv layers) goes through `per_sample_grads`' vmap, restricted to
    those parameters, `chunk_size` examples at a time (Sec. 6 "Memory": peak memory about
    `chunk_size x n_conv_params` floats).

    Args:
        model: the network; its current parameters are used. Examples must not interact
            (no BatchNorm in training mode, Sec. 3.4).
        loss_fn: `loss_fn(output, target) -> scalar`; an example's loss is `loss_fn` on a
            batch of one (e.g. `F.cross_entropy`).
        x: inputs, shape (K, *input_shape).
        y: targets, shape (K, *target_shape).
        chunk_size: examples per vmap chunk of the non-linear layers; `None` = the whole batch.

    Returns:
        Detached norms, shape (K,).
    """
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1 or None, got {chunk_size}")
    sq, covered = _linear_pass(model, loss_fn, x, y)  # (K,)
    rest = {k for k, v in model.named_parameters() if v.requires_grad and k not in covered}
    if rest:
        params, fn = _per_sample_grad_fn(model, loss_fn, None, rest)
        step = x.shape[0] if chunk_size is None else chunk_size
        parts = []
        for start in range(0, x.shape[0], step):
            grads = fn(params, x[start : start + step], y[start : start + step])
            parts.append(sum(g.flatten(1).pow(2).sum(dim=1) for g in grads.values()))
        sq = sq + torch.cat(parts).to(sq)  # (K,)
    return torch.sqrt(sq).detach()  # (K,)


def importance_weighted_loss(
    per_example_losses: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    r"""The batch loss whose autograd gradient is exactly the unbiased estimate $\hat g_t$.

    Sec. 3.1 step 3: $\hat g_t = \sum_{j \in J_t} \nabla f_j / (n p_j)
    = \frac1K \sum_j \nabla f_j / (n \bar p_j)$, so with `weights` $= 1/(n \bar p_j)$ the
    loss is $\frac1K \sum_j \text{weights}_j f_j$ (the weights are constants). The mean form,
    rather than the sum, is what keeps it correct under data parallelism: when P processes each
    take K/P of the drawn examples and average their gradients (as DDP / `accelerate` do), the
    average of the per-shard means over equal shards is the mean over all K, i.e. $\hat g_t$
    again. For uniform sampling the weights are 1 and this is the ordinary mean loss.

    Args:
        per_example_losses: $f_j$ of the drawn examples, shape (K,), unreduced.
        weights: importance weights $1/(n \bar p_j)$ from `Draw.weights`, shape (K,).

    Returns:
        Scalar loss $\frac1K \sum_j \text{weights}_j f_j$.
    """
    if per_example_losses.ndim != 1 or per_example_losses.shape != weights.shape:
        raise ValueError(
            f"need matching 1-D shapes, got {tuple(per_example_losses.shape)} and "
            f"{tuple(weights.shape)}"
        )
    weights = weights.to(device=per_example_losses.device, dtype=per_example_losses.dtype)
    return (weights.detach() * per_example_losses).mean()
