"""MatryoshkaKV's contribution in plain torch (brief Sec. 3).

- Orthogonal per-head projections kept exactly orthogonal by the Cayley map
  U = (I - A/2)^{-1} (I + A/2), A = X - X^T (Sec. 3.3), initialised from PCA (Sec. 3.2).
- The compressed-attention algebra (Sec. 3.1): only the first r coordinates of the centred,
  rotated keys / values are kept; queries are rotated but never centred, the q . mu_K term keeps
  the logits exact, the value mean is added back after the softmax mix.
- Rank tables, their budget, Matryoshka rank sampling (Sec. 3.4), the distillation loss and the
  greedy heterogeneous rank search (Sec. 3.5).

Shapes: L layers, H key/value heads, d head_dim; a rank table is an (L, H) integer tensor.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# --------------------------------------------------------------------------- validation


def check_rank(rank: int | Tensor, head_dim: int) -> None:
    """Raise ``ValueError`` unless every rank lies in {1, ..., head_dim}."""
    r = torch.as_tensor(rank)
    if r.is_floating_point() and not torch.equal(r, r.round()):
        raise ValueError(f"ranks must be integers, got {rank}")
    if r.numel() == 0:
        raise ValueError("empty rank table")
    lo, hi = int(r.min()), int(r.max())
    if lo < 1 or hi > head_dim:
        raise ValueError(
            f"rank out of range: every rank must satisfy 1 <= r <= head_dim = {head_dim}, "
            f"got min {lo}, max {hi}"
        )


def check_budget(budget: float) -> None:
    """Raise ``ValueError`` unless 0 < budget <= 1 (budget = cached fraction of the full cache)."""
    if not (0.0 < float(budget) <= 1.0):
        raise ValueError(f"budget must lie in (0, 1] (fraction of the full KV cache), got {budget}")


# --------------------------------------------------------------------------- orthogonal maps


def _solve_dtype(dtype: torch.dtype) -> torch.dtype:
    """Cayley maps / solves run in float64 when given float64, else float32 (never lower)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def cayley(x: Tensor) -> Tensor:
    """Cayley map of the skew part of ``x`` (..., d, d): U = (I - A/2)^{-1}(I + A/2), A = X - X^T.

    U is orthogonal with det U = +1 for any X. Computed (and returned) in float32, or float64
    when ``x`` is float64; the caller casts the result to the activation dtype.
    """
    x = x.to(_solve_dtype(x.dtype))
    a = x - x.transpose(-1, -2)
    eye = torch.eye(x.shape[-1], dtype=x.dtype, device=x.device)
    return torch.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)


def fix_determinant(u: Tensor) -> Tensor:
    """Flip the sign of the first column of every matrix of ``u`` (..., d, d) with det < 0.

    The Cayley map only reaches det = +1; a PCA basis is defined up to column signs, so
    flipping one column keeps it a valid eigenbasis (brief Sec. 3.2).
    """
    det = torch.linalg.det(u.to(torch.float64))
    sign = torch.where(det < 0, -1.0, 1.0).to(u.dtype)
    u = u.clone()
    u[..., :, 0] = u[..., :, 0] * sign[..., None]
    return u


def inverse_cayley(
    q: Tensor,
    tol: float = 1e-6,
    perturbation: float = 1e-3,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Strictly lower-triangular X0 with ``cayley(X0) ~= q`` for orthogonal ``q`` (..., d, d).

    A0 = 2 (I + Q)^{-1} (Q - I) (skew-symmetric; (I+Q)^{-1} and Q - I commute), X0 = tril(A0, -1),
    so X0 - X0^T = A0 and cayley(X0) = Q up to float error (brief Sec. 3.3).

    ``q`` must have det +1 (use :func:`fix_determinant`); a det -1 matrix always has eigenvalue
    -1 and raises ``ValueError``. Fallback for a det +1 matrix with an eigenvalue at -1 (I + Q
    singular, e.g. a rotation by pi in some plane): if the smallest singular value of I + Q is
    below ``tol``, that matrix is replaced by Q R with R = cayley(perturbation * G) a tiny random
    rotation (G standard normal), retried with a 10x larger perturbation until I + Q R is well
    posed, and a warning is issued. The returned X0 then maps to a rotation within ~perturbation
    of q instead of q itself. Computed in float64; returned in float64 for float64 input, else
    float32.
    """
    out_dtype = _solve_dtype(q.dtype)
    q64 = q.to(torch.float64)
    d = q64.shape[-1]
    eye = torch.eye(d, dtype=torch.float64, device=q.device)
    if bool((torch.linalg.det(q64) < 0).any()):
        raise ValueError(
            "inverse_cayley needs det(Q) = +1 (Cayley maps reach only SO(d)); "
            "apply fix_determinant first"
        )
    batch_shape = q64.shape[:-2]
    flat = q64.reshape(-1, d, d).clone()
    smallest = torch.linalg.svdvals(eye + flat)[..., -1]
    bad = smallest < tol
    if bool(bad.any()):
        warnings.warn(
            f"inverse_cayley: {int(bad.sum())} matrix/matrices with an eigenvalue at -1; "
            "composing them with a tiny random rotation",
            stacklevel=2,
        )
        if generator is None:
            generator = torch.Generator(device="cpu").manual_seed(0)
        for i in torch.nonzero(bad).flatten().tolist():
            eps = perturbation
            while True:
                g = torch.randn(d, d, generator=generator, dtype=torch.float64).to(q.device)
                candidate = flat[i] @ cayley(eps * g)
                if torch.linalg.svdvals(eye + candidate)[-1] >= tol:
                    flat[i] = candidate
                    break
                eps *= 10.0
    a0 = 2.0 * torch.linalg.solve(eye + flat, flat - eye)
    x0 = torch.tril(a0, diagonal=-1)
    return x0.reshape(*batch_shape, d, d).to(out_dtype)


def pca_basis(mean: Tensor, second_moment: Tensor) -> tuple[Tensor, Tensor]:
    """PCA basis from running statistics (brief Sec. 3.2).

    ``mean`` (..., d) = E[x], ``second_moment`` (..., d, d) = E[x x^T]. Covariance
    C = E[x x^T] - mu mu^T; eigenvectors of C as columns sorted by DESCENDING eigenvalue, det
    fixed to +1. Returns (U (..., d, d), eigenvalues (..., d)), computed in float64.
    """
    mu = mean.to(torch.float64)
    cov = second_moment.to(torch.float64) - mu[..., :, None] * mu[..., None, :]
    cov = 0.5 * (cov + cov.transpose(-1, -2))
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    evals = torch.flip(evals, dims=[-1])
    evecs = torch.flip(evecs, dims=[-1])
    return fix_determinant(evecs), evals


# --------------------------------------------------------------------------- parameters


class KVProjections(nn.Module):
    """Trainable per-(layer, KV head) projections: Cayley parameters and means (brief Sec. 3.3).

    Parameters ``x_key``, ``x_value`` (L, H, d, d) and ``mu_key``, ``mu_value`` (L, H, d). The
    orthogonal bases are ``cayley(x)``; the default (all zeros) is the identity basis with zero
    means, i.e. plain truncation of the raw coordinates.
    """

    def __init__(self, n_layers: int, n_heads: int, head_dim: int, dtype=torch.float32):
        super().__init__()
        shape = (n_layers, n_heads, head_dim)
        self.x_key = nn.Parameter(torch.zeros(*shape, head_dim, dtype=dtype))
        self.x_value = nn.Parameter(torch.zeros(*shape, head_dim, dtype=dtype))
        self.mu_key = nn.Parameter(torch.zeros(*shape, dtype=dtype))
        self.mu_value = nn.Parameter(torch.zeros(*shape, dtype=dtype))

    @classmethod
    def from_bases(
        cls,
        u_key: Tensor,
        u_value: Tensor,
        mu_key: Tensor,
        mu_value: Tensor,
        dtype: torch.dtype = torch.float32,
    ) -> KVProjections:
        """Initialise from orthogonal bases (L, H, d, d) and means (L, H, d) via inverse Cayley.

        Bases with det -1 are sign-fixed first (flipping the first column, as for PCA).
        """
        if u_key.shape != u_value.shape or u_key.dim() != 4 or u_key.shape[-1] != u_key.shape[-2]:
            raise ValueError(f"bases must be (L, H, d, d), got {tuple(u_key.shape)}")
        if mu_key.shape != u_key.shape[:-1] or mu_value.shape != u_key.shape[:-1]:
            raise ValueError("means must be (L, H, d) matching the bases")
        n_layers, n_heads, head_dim = u_key.shape[:3]
        proj = cls(n_layers, n_heads, head_dim, dtype=dtype)
        with torch.no_grad():
            proj.x_key.copy_(inverse_cayley(fix_determinant(u_key.to(torch.float64))))
            proj.x_value.copy_(inverse_cayley(fix_determinant(u_value.to(torch.float64))))
            proj.mu_key.copy_(mu_key)
            proj.mu_value.copy_(mu_value)
        return proj

    @property
    def n_layers(self) -> int:
        return self.x_key.shape[0]

    @property
    def n_heads(self) -> int:
        return self.x_key.shape[1]

    @property
    def head_dim(self) -> int:
        return self.x_key.shape[-1]

    def bases(self, layer: int) -> tuple[Tensor, Tensor]:
        """(U_key (H, d, d), U_value (H, d, d)) of one layer, float32 (float64 if params are)."""
        return cayley(self.x_key[layer]), cayley(self.x_value[layer])

    def all_bases(self) -> tuple[Tensor, Tensor]:
        """(U_key, U_value), each (L, H, d, d)."""
        return cayley(self.x_key), cayley(self.x_value)


# --------------------------------------------------------------------------- compressed attention


def rank_mask(ranks: Tensor, width: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """(H, width) 0/1 mask, row h = [1]*ranks[h] + [0]*(width - ranks[h])."""
    cols = torch.arange(width, device=ranks.device)
    return (cols[None, :] < ranks[:, None]).to(dtype)


def compress(x: Tensor, u: Tensor, mu: Tensor, ranks: Tensor) -> Tensor:
    """Cached coordinates (x - mu) U[:, :r] per head, computed at r_max with a 0/1 column mask.

    x (B, H, T, d) post-RoPE keys or values, u (H, d, d), mu (H, d), ranks (H,) ints.
    Returns (B, H, T, r_max), r_max = max(ranks), columns >= ranks[h] of head h exactly 0.
    Differentiable in u and mu (the mask is constant), so per-head random ranks train in a batch.
    """
    r_max = int(ranks.max())
    mask = rank_mask(ranks, r_max, x.dtype)
    coords = torch.einsum("bhtd,hdr->bhtr", x - mu[None, :, None, :], u[..., :r_max])
    return coords * mask[None, :, None, :]


def compressed_logits(
    query: Tensor, key_coords: Tensor, u_key: Tensor, mu_key: Tensor, scaling: float
) -> Tensor:
    """Attention logits (q U_K[:, :r_K] . k~ + q . mu_K) * scaling, without mask.

    query (B, Hq, T, d) post-RoPE, Hq = H * groups (query head i reads KV head i // groups, as
    HF ``repeat_kv``); key_coords (B, H, S, r_K) from :func:`compress` (zero beyond each head's
    rank). Queries are rotated but never centred; the q . mu_K term (constant along S) keeps the
    logits equal to q . k * scaling when r_K = d. Returns (B, H, groups, T, S).
    """
    b, hq, t, d = query.shape
    h = key_coords.shape[1]
    q = query.reshape(b, h, hq // h, t, d)
    q_rot = torch.einsum("bhgtd,hdr->bhgtr", q, u_key[..., : key_coords.shape[-1]])
    logits = torch.einsum("bhgtr,bhsr->bhgts", q_rot, key_coords)
    logits = logits + torch.einsum("bhgtd,hd->bhgt", q, mu_key)[..., None]
    return logits * scaling


def compressed_attention(
    query: Tensor,
    key_coords: Tensor,
    value_coords: Tensor,
    u_key: Tensor,
    u_value: Tensor,
    mu_key: Tensor,
    mu_value: Tensor,
    attn_bias: Tensor | None,
    scaling: float,
) -> tuple[Tensor, Tensor]:
    """Attention from cached coordinates (brief Sec. 3.1), GQA-aware.

    query (B, Hq, T, d); key_coords (B, H, S, r_K) / value_coords (B, H, S, r_V) from
    :func:`compress`; u_key / u_value (H, d, d); mu_* (H, d); attn_bias additive,
    broadcastable to (B, Hq, T, S) (or None). logits from :func:`compressed_logits`;
    out = softmax(logits) v~ U_V[:, :r_V]^T + mu_V (the value mean is added after the mix:
    the softmax weights sum to 1). Returns (out (B, Hq, T, d), probs (B, Hq, T, S)); exact up
    to rounding when all ranks equal d.
    """
    b, hq, t, d = query.shape
    h = key_coords.shape[1]
    groups = hq // h
    logits = compressed_logits(query, key_coords, u_key, mu_key, scaling)
    if attn_bias is not None:
        bias = attn_bias
        if bias.dim() == 4:
            if bias.shape[1] == 1:
                bias = bias[:, :, None]  # (B, 1, 1, T, S)
            else:
                bias = bias.reshape(bias.shape[0], h, groups, *bias.shape[-2:])
        logits = logits + bias
    # softmax in at least float32 (bf16 / fp16 activations), float64 kept as is
    probs = torch.softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))
    probs = probs.to(query.dtype)
    mixed = torch.einsum("bhgts,bhsr->bhgtr", probs, value_coords)
    out = torch.einsum("bhgtr,hdr->bhgtd", mixed, u_value[..., : value_coords.shape[-1]])
    out = out + mu_value[None, :, None, None, :]
    return out.reshape(b, hq, t, d), probs.reshape(b, hq, t, -1)


# --------------------------------------------------------------------------- rank tables


def budget(rank_key: Tensor, rank_value: Tensor, head_dim: int) -> float:
    """Cached fraction of the full KV cache, sum(r_K + r_V) / (2 L H d); compression = 1 - it."""
    rk, rv = torch.as_tensor(rank_key), torch.as_tensor(rank_value)
    if rk.shape != rv.shape:
        raise ValueError(f"rank tables differ in shape: {tuple(rk.shape)} vs {tuple(rv.shape)}")
    return float((rk.sum() + rv.sum()).item()) / (2.0 * rk.numel() * head_dim)


def uniform_ranks(n_layers: int, n_heads: int, rank: int, head_dim: int | None = None):
    """(rank_key, rank_value): (L, H) int64 tables filled with ``rank`` (checked if head_dim)."""
    check_rank(rank, head_dim if head_dim is not None else max(int(rank), 1))
    table = torch.full((n_layers, n_heads), int(rank), dtype=torch.long)
    return table, table.clone()


def sample_ranks(
    schedule: Sequence[int], n_layers: int, n_heads: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """Matryoshka sampling (brief Sec. 3.4): r_K and r_V drawn uniformly from ``schedule``,
    independently for every (layer, head) and for keys and values. Returns (L, H) int64 tables."""
    sched = torch.as_tensor(list(schedule), dtype=torch.long)
    if sched.numel() == 0:
        raise ValueError("empty rank schedule")
    if int(sched.min()) < 1:
        raise ValueError(f"rank schedule entries must be >= 1, got {list(schedule)}")
    idx_k = torch.randint(len(sched), (n_layers, n_heads), generator=generator)
    idx_v = torch.randint(len(sched), (n_layers, n_heads), generator=generator)
    return sched[idx_k], sched[idx_v]


# --------------------------------------------------------------------------- loss


def distillation_loss(
    student_logits: Tensor,
    teacher_logits: Tensor,
    labels: Tensor | None,
    kl_weight: float = 0.25,
    ce_weight: float = 0.75,
    temperature: float = 1.0,
) -> tuple[Tensor, dict[str, float]]:
    """kl_weight * KL(teacher || student) + ce_weight * CE (brief Sec. 3.4).

    KL = sum_{positions, vocab} p_T (log p_T - log p_S) / (#positions), both at temperature T and
    multiplied by T^2 (as the official trainer; no effect at T = 1). CE = next-token
    cross-entropy of the student: logits[:, :-1] against labels[:, 1:] (ignore_index -100);
    ``labels`` may be None when ce_weight == 0. Returns (loss, {"kl", "ce", "loss"} floats).
    """
    vocab = student_logits.shape[-1]
    log_s = F.log_softmax(student_logits.float() / temperature, dim=-1).reshape(-1, vocab)
    log_t = F.log_softmax(teacher_logits.detach().float() / temperature, dim=-1).reshape(-1, vocab)
    kl = (log_t.exp() * (log_t - log_s)).sum() / log_s.shape[0] * temperature**2
    if labels is not None:
        ce = F.cross_entropy(
            student_logits[:, :-1].float().reshape(-1, vocab),
            labels[:, 1:].reshape(-1),
            ignore_index=-100,
        )
    elif ce_weight != 0:
        raise ValueError("labels are needed when ce_weight != 0")
    else:
        ce = torch.zeros((), device=student_logits.device)
    loss = kl_weight * kl + ce_weight * ce
    parts = {"kl": float(kl.detach()), "ce": float(ce.detach()), "loss": float(loss.detach())}
    return loss, parts


# --------------------------------------------------------------------------- greedy search


def greedy_rank_search(
    hidden_fn: Callable[[Tensor, Tensor], Tensor],
    n_layers: int,
    n_heads: int,
    head_dim: int,
    budget: float,
    step: int,
    updates_per_round: int,
) -> tuple[Tensor, Tensor]:
    """Greedy heterogeneous rank allocation for a target ``budget`` (brief Sec. 3.5).

    ``hidden_fn(rank_key, rank_value)`` returns the last-layer hidden states of the calibration
    input under that (L, H) rank table. Starting from r = d everywhere, each round:
    (a) ref = hidden_fn(current ranks); (b) for every (layer, head) and K / V separately, lower
    that one rank by ``step`` (entries already at <= ``step`` are skipped), err =
    ||ref - h||_F / ||ref||_F; (c) lower by ``step`` the ``updates_per_round`` entries with the
    smallest error (each at most once per round; ties keep the order layer, head, K before V).

    Stopping rule: updates are applied one at a time in ascending-error order and the search
    stops right after the update that brings the budget to <= target, so the final budget
    overshoots the target by less than one decrement (step / (2 L H d)). Raises ``ValueError``
    for a budget outside (0, 1], a step outside [1, d), or a target below the smallest reachable
    budget (every rank at its floor).
    """
    check_budget(budget)
    if not (1 <= step < head_dim):
        raise ValueError(f"step must satisfy 1 <= step < head_dim = {head_dim}, got {step}")
    if updates_per_round < 1:
        raise ValueError(f"updates_per_round must be >= 1, got {updates_per_round}")
    rank_key = torch.full((n_layers, n_heads), head_dim, dtype=torch.long)
    rank_value = rank_key.clone()
    # floor of an entry: the smallest rank reachable by repeated decrements that stay >= 1 and
    # the skip rule (entries at <= step are not lowered)
    floor = (head_dim - 1) % step + 1
    min_budget = floor / head_dim
    if budget < min_budget - 1e-12:
        raise ValueError(
            f"target budget {budget} is below the smallest reachable budget {min_budget:.4f} "
            f"(step {step}, head_dim {head_dim})"
        )
    tables = (rank_key, rank_value)

    def current() -> float:
        return _budget_of(rank_key, rank_value, head_dim)

    with torch.no_grad():
        while current() > budget + 1e-12:
            ref = hidden_fn(rank_key.clone(), rank_value.clone()).double()
            ref_norm = torch.linalg.vector_norm(ref)
            candidates: list[tuple[float, int, int, int, int]] = []
            order = 0
            for layer in range(n_layers):
                for head in range(n_heads):
                    for kv in (0, 1):
                        table = tables[kv]
                        if int(table[layer, head]) <= step:
                            order += 1
                            continue
                        table[layer, head] -= step
                        h = hidden_fn(rank_key.clone(), rank_value.clone()).double()
                        table[layer, head] += step
                        err = float(torch.linalg.vector_norm(ref - h) / ref_norm)
                        candidates.append((err, order, layer, head, kv))
                        order += 1
            if not candidates:
                break
            candidates.sort()
            for _err, _order, layer, head, kv in candidates[:updates_per_round]:
                tables[kv][layer, head] -= step
                if current() <= budget + 1e-12:
                    break
    return rank_key, rank_value


def _budget_of(rank_key: Tensor, rank_value: Tensor, head_dim: int) -> float:
    return budget(rank_key, rank_value, head_dim)
