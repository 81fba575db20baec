r"""The InfoAlign objective: context-graph random walks and the information-bottleneck loss.

Brief `infoalign.md` Sec. 3.4 (objective), 3.5 (algorithm), 3.8 (pitfalls), 4 (contrastive
baseline). Pure numpy / torch; no model code, no I/O, no global random state.

For a molecule x with Gaussian representation q(z|x) = N(mu, diag sigma^2) and a random walk
v_0 = x, v_1, ..., v_L on the context graph, InfoAlign minimises

    beta * I(X; Z) - I(Z; X_{v_0}, ..., X_{v_L})

* **Minimality** (upper bound on I(X; Z)): E_x KL(q(z|x) || N(0, I)), estimated as in the
  official code with *one* reparameterised sample per molecule:
  mean_b [log q(z_b|x_b) - log p(z_b)] (`prior_term`; may be negative for one sample).
* **Sufficiency** (decoder-based lower bound): sum_i w_i log p(x_{v_i} | z), implemented per
  modality m as a path-weighted BCE-with-logits between the decoder output from **mu** and the
  [0, 1] targets of the visited nodes of type m (`masked_weighted_bce`).
* **Walks** (`random_walks`): transitions are uniform over neighbours; edge weights are *not*
  transition probabilities, only loss weights: w_0 = 1, w_i = prod_{j <= i} weight(v_{j-1}, v_j).
  A walker at a node without neighbours stays put and that step has weight 0.

The contrastive baseline (CLIP / InfoNCE alignment of the molecule embedding with an encoder of
the cell profile) is `info_nce`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F

ArrayLike = np.ndarray | torch.Tensor


# ----------------------------------------------------------------------------------------------
# Context graph walks (Sec. 3.5 steps 3-4)
# ----------------------------------------------------------------------------------------------


def csr_adjacency(
    num_nodes: int,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    undirected: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge list -> CSR (indptr (N+1,), indices (E',), weights (E',)), rows sorted by source.

    With `undirected=True` each listed edge {u, v} is stored in both directions (list every
    undirected edge once). Within a row, neighbours keep their input order.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    weight = np.asarray(weight, dtype=np.float64).ravel()
    if not (src.shape == dst.shape == weight.shape):
        raise ValueError("src, dst and weight must have the same length")
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        weight = np.concatenate([weight, weight])
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise ValueError("edge endpoint out of range")
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, dst[order], weight[order]


def random_walks(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    starts: np.ndarray,
    length: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random walks over a CSR graph, vectorised over walkers.

    Returns `nodes` (B, L+1) int64 with nodes[:, 0] = starts, and `path_weights` (B, L+1)
    float32 with w_0 = 1 and w_i = w_{i-1} * weight(v_{i-1}, v_i). Each step picks one of the
    current node's CSR entries uniformly (edge weights are ignored for the choice; a multi-edge
    counts once per entry). A walker at a node with no neighbours stays there and the step's
    weight is 0, so every later path weight is 0 too (Sec. 3.8.4).
    """
    if length < 0:
        raise ValueError("length must be >= 0")
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    current = np.asarray(starts, dtype=np.int64).ravel().copy()
    num_nodes = indptr.size - 1
    if current.size and (current.min() < 0 or current.max() >= num_nodes):
        raise ValueError("start node out of range")
    nodes = np.empty((current.size, length + 1), dtype=np.int64)
    step_weights = np.ones((current.size, length + 1), dtype=np.float64)
    nodes[:, 0] = current
    degree = np.diff(indptr)
    for t in range(1, length + 1):
        deg = degree[current]
        moving = np.flatnonzero(deg > 0)
        # Walkers without neighbours keep `current` and get a 0 step weight.
        step = np.zeros(current.size, dtype=np.float64)
        if moving.size:
            offset = rng.integers(0, deg[moving])  # uniform in [0, degree)
            entry = indptr[current[moving]] + offset
            current = current.copy()
            current[moving] = indices[entry]
            step[moving] = weights[entry]
        nodes[:, t] = current
        step_weights[:, t] = step
    return nodes, np.cumprod(step_weights, axis=1).astype(np.float32)


def walk_targets(
    targets: Mapping[str, ArrayLike],
    nodes: np.ndarray,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    """Gather per-node target matrices along walks: {m: (N, D_m)} -> {m: (B, L+1, D_m)} float32.

    Targets are NaN on nodes that are not of modality m; the NaNs are kept (the loss masks them).
    """
    idx = torch.as_tensor(np.asarray(nodes, dtype=np.int64))
    out: dict[str, torch.Tensor] = {}
    for name, table in targets.items():
        table_t = torch.as_tensor(table)
        gathered = table_t[idx.to(table_t.device)].to(torch.float32)
        out[name] = gathered if device is None else gathered.to(device)
    return out


# ----------------------------------------------------------------------------------------------
# Loss terms (Sec. 3.4)
# ----------------------------------------------------------------------------------------------


def masked_weighted_bce(
    logits: torch.Tensor, targets: torch.Tensor, path_weights: ArrayLike
) -> torch.Tensor:
    """Path-weighted BCE-with-logits of one modality, averaged over its non-NaN target elements.

    logits (B, D) are broadcast over the L+1 walk positions of targets (B, L+1, D); element
    (b, i, k) contributes path_weights[b, i] * BCE(logits[b, k], targets[b, i, k]) if the target
    is not NaN. The sum is divided by the number of non-NaN elements, including those whose path
    weight is 0 (official). With no valid element the loss is exactly 0.0 and its gradient is 0
    (not NaN; Sec. 3.8.5).
    """
    if targets.dim() != 3 or logits.dim() != 2 or targets.shape[::2] != logits.shape:
        raise ValueError(
            f"shapes: logits {tuple(logits.shape)} must be (B, D), targets "
            f"{tuple(targets.shape)} (B, L+1, D)"
        )
    weights = torch.as_tensor(path_weights, dtype=logits.dtype, device=logits.device)
    if weights.shape != targets.shape[:2]:
        raise ValueError(f"path_weights {tuple(weights.shape)} must be {tuple(targets.shape[:2])}")
    targets = targets.to(device=logits.device, dtype=logits.dtype)
    valid = ~torch.isnan(targets)
    clean = torch.where(valid, targets, torch.zeros_like(targets))
    bce = F.binary_cross_entropy_with_logits(
        logits.unsqueeze(1).expand_as(clean), clean, reduction="none"
    )
    weighted = bce * weights.unsqueeze(-1) * valid
    return weighted.sum() / valid.sum().clamp(min=1)


def prior_term(mu: torch.Tensor, sigma: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Single-sample KL estimate mean_b [log N(z_b; mu_b, sigma_b^2) - log N(z_b; 0, I)].

    Written so that the 2*pi constants cancel analytically: with mu = 0, sigma = 1 it is exactly
    0 for any z. Summed over latent dimensions, averaged over the batch.
    """
    log_ratio = 0.5 * z.square() - 0.5 * ((z - mu) / sigma).square() - torch.log(sigma)
    return log_ratio.sum(dim=-1).mean()


def infoalign_loss(
    mu: torch.Tensor,
    sigma: torch.Tensor,
    decoded: Mapping[str, torch.Tensor],
    walk_targets: Mapping[str, torch.Tensor],
    path_weights: ArrayLike,
    beta: float,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Total pre-training loss beta * prior + sum_m masked_weighted_bce_m (unit weights).

    The prior term uses one reparameterised sample z = mu + sigma * eps (eps from `generator`);
    the decoders' outputs in `decoded` must come from mu (Sec. 3.8.1). Every modality of
    `walk_targets` needs a decoder. Returns the loss and floats for logging: "prior" (the raw
    estimate, before beta), one entry per modality, and "total".
    """
    missing = set(walk_targets) - set(decoded)
    if missing:
        raise KeyError(f"no decoder output for modalities {sorted(missing)}")
    eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype, device=mu.device)
    z = mu + sigma * eps
    prior = prior_term(mu, sigma, z)
    total = beta * prior
    parts: dict[str, float] = {"prior": float(prior.detach())}
    for name, target in walk_targets.items():
        term = masked_weighted_bce(decoded[name], target, path_weights)
        parts[name] = float(term.detach())
        total = total + term
    parts["total"] = float(total.detach())
    return total, parts


# ----------------------------------------------------------------------------------------------
# Contrastive baseline (Sec. 4)
# ----------------------------------------------------------------------------------------------


def info_nce(a: torch.Tensor, b: torch.Tensor, temperature: float) -> torch.Tensor:
    """Symmetric (CLIP) InfoNCE between paired rows of a (B, d) and b (B, d).

    Logits = cosine similarities of the L2-normalised rows / temperature; cross-entropy with the
    diagonal as positives, averaged over the a->b and b->a directions.
    """
    if a.shape != b.shape or a.dim() != 2:
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)} must both be (B, d)")
    logits = F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T / temperature
    labels = torch.arange(a.size(0), device=a.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))
