"""EM-LLM: Human-inspired Episodic Memory for Infinite Context LLMs (Fountas et al., ICLR 2025,
arXiv 2407.09450). The contribution, as pure functions (no I/O, no model):

* surprise and surprise boundaries (paper Sec. 3.2, brief Sec. 3.2): s_t = -log p(x_t | x_<t),
  token t opens an event iff s_t > mu + gamma * sigma of *past* surprise;
* boundary refinement on the key-similarity graph by modularity or conductance (paper Sec. 3.3,
  Algorithm 1, brief Sec. 3.3);
* turning boundaries into stored events with the min / max block rules (brief Sec. 3.4);
* representative keys, similarity retrieval with the nearest-capacity rule and the contiguity
  buffer (paper Sec. 3.4, brief Sec. 3.5);
* the segmentation analysis of the toy (boundary F1, modularity of a segmentation).

The per-layer memory that uses these inside a chunked attention is :mod:`papers.em_llm.memory`.
Deviations are listed in the README ("Deviations"); the official code's own rules, behind the
``memory.official_*`` options, in its section "Official quirks".
"""

from __future__ import annotations

import torch
from torch import Tensor

# --------------------------------------------------------------------------- surprise (Sec. 3.2)


def token_surprise(logits: Tensor, ids: Tensor, dtype: torch.dtype = torch.float64) -> Tensor:
    """s_t = -log softmax(logits_{t-1})[x_t] for t = 1..T-1 (paper Eq. 1).

    Args:
        logits: (T, V) the model's next-token logits at positions 0..T-1.
        ids: (T,) the tokens.
        dtype: the log-softmax's precision (float32 on the fast path: a 49k vocabulary in
            float64 costs ~15 % of a small LM's forward).

    Returns:
        (T - 1,) surprise of tokens 1..T-1 (token 0 has none).
    """
    log_p = torch.log_softmax(logits[:-1].to(dtype), dim=-1)  # (T-1, V)
    return -log_p.gather(-1, ids[1:, None]).squeeze(-1).float()


def next_token_surprise(
    logits: Tensor, targets: Tensor, dtype: torch.dtype = torch.float64
) -> Tensor:
    """-log softmax(logits_i)[targets_i] for i < len(targets): the surprise of the tokens that
    follow the first len(targets) positions (the official ``em_labels`` form).

    Args:
        logits: (L, V) next-token logits, L >= len(targets).
        targets: (n,) the tokens that follow positions 0..n-1.
        dtype: the log-softmax's precision (see :func:`token_surprise`).
    """
    log_p = torch.log_softmax(logits[: targets.numel()].to(dtype), dim=-1)
    return -log_p.gather(-1, targets[:, None]).squeeze(-1).float()


def surprise_boundaries(
    surprise: Tensor,
    start: int,
    end: int,
    gamma: float,
    window: int,
    per_chunk: bool = False,
    official_shift: bool = False,
    span: tuple[int, int] | None = None,
) -> list[int]:
    """Event starts among tokens [start, end) of a chunk (paper Eq. 2, brief Sec. 3.2).

    Token t is a boundary iff s_t > T_t = mu + gamma * sigma, where mu and sigma are the mean
    and standard deviation of the ``window`` surprise values *preceding* t (``per_chunk``: one
    window preceding the chunk). With fewer than two past values (the very first tokens) the
    chunk's own statistics are used. ``span`` = [lo, hi) replaces all of this by one window of
    absolute positions shared by the chunk (the official rule, :func:`official_threshold_span`;
    fewer than two values there: no boundary, as the official NaN std gives).

    Args:
        surprise: (T,) surprise of every token so far, NaN where undefined (token 0).
        official_shift: the official alignment: position t holds the surprise of token t + 1
            (``em_labels = input_ids[st + 1: ed + 1]``), so the chunk's values, the windows
            and the reported positions are those of the surprise shifted by one (an event
            starts one token before its surprising token).

    Returns:
        Sorted absolute positions.
    """
    # only [base, end) is read: the chunk, its threshold windows (or the span)
    base = min(start, span[0]) if span is not None else max(0, start - window)
    shift = 1 if official_shift else 0
    local = surprise[base + shift : end + shift]
    if local.numel() < end - base:  # the official shift reads one past the last token
        local = torch.cat([local, local.new_full((end - base - local.numel(),), float("nan"))])
    if span is not None:
        span = (span[0] - base, span[1] - base)
    found = _surprise_boundaries(local, start - base, end - base, gamma, window, per_chunk, span)
    return [b + base for b in found]


def _surprise_boundaries(
    surprise: Tensor,
    start: int,
    end: int,
    gamma: float,
    window: int,
    per_chunk: bool,
    span: tuple[int, int] | None,
) -> list[int]:
    """:func:`surprise_boundaries` on a slice (no shift); positions relative to the slice."""
    values = surprise[start:end]
    if span is not None:
        past = surprise[span[0] : span[1]]
        past = past[~torch.isnan(past)]
        if past.numel() < 2:
            return []
        surprising = values > past.mean() + gamma * past.std()
        return (torch.nonzero(surprising).flatten() + start).tolist()
    # per chunk: one window preceding the chunk, its statistics shared by every token
    past_ends = torch.full((1,), start) if per_chunk else torch.arange(start, end)
    offsets = torch.arange(-window, 0)
    index = past_ends[:, None] + offsets[None, :]  # (c or 1, window): the past of each token
    past = torch.where(index >= 0, surprise[index.clamp(min=0)], float("nan"))
    count = (~torch.isnan(past)).sum(1)
    own = values[~torch.isnan(values)]
    mean, std = _nan_mean_std(past)
    if own.numel() >= 2:  # too little history: the chunk's own statistics (first chunk)
        few = count < 2
        mean = torch.where(few, own.mean(), mean)
        std = torch.where(few, own.std(), std)
    else:
        mean = torch.where(count < 2, float("nan"), mean)
    surprising = values > mean + gamma * std  # False wherever NaN is involved
    return (torch.nonzero(surprising).flatten() + start).tolist()


def official_threshold_span(
    start: int, end: int, n_local: int, n_init: int, rem_start: int, before_write: bool = False
) -> tuple[int, int]:
    """The official threshold window of chunk [start, end) in absolute positions (official
    ``context_manager.update_memory``: ``avg_st = max(E - n_local, 0)``, ``avg_ed =
    max(E - c', n_init)``, both relative to the remainder start ``rem_start`` and read *after*
    the chunk's values are written).

    So: [max(end - n_local, rem_start), max(start, rem_start + n_init)) clipped at ``end``.
    The first chunk (c > n_init) gets only its own first n_init values; a partial chunk of
    c' tokens gets the n_local - c' values before it. ``before_write``: the refinement path
    (official ``em_llm.py``), whose first chunk (empty remainder before it) uses all of its
    own values.
    """
    if before_write and start <= rem_start:
        return start, end
    return max(end - n_local, rem_start), min(end, max(start, rem_start + n_init))


def _nan_mean_std(x: Tensor) -> tuple[Tensor, Tensor]:
    """Row-wise mean and (unbiased, as torch.std) standard deviation ignoring NaN."""
    valid = ~torch.isnan(x)
    count = valid.sum(1)
    filled = torch.where(valid, x, 0.0)
    mean = filled.sum(1) / count.clamp(min=1)
    squares = torch.where(valid, (x - mean[:, None]) ** 2, 0.0).sum(1)
    std = (squares / (count - 1).clamp(min=1)).sqrt()
    return mean, std


# --------------------------------------------------------------------------- graph (Sec. 3.3)


def key_similarity(keys: Tensor) -> Tensor:
    """A_ij = sum_{l,h} <k_i^{l,h}, k_j^{l,h}> (brief Sec. 3.3): raw dot products of
    un-rotated keys summed over the given layers and heads; negative entries are kept.

    Args:
        keys: (L, H, T, d) keys of the layers l >= refine_from_layer.

    Returns:
        (T, T) symmetric similarity.
    """
    return torch.einsum("lhid,lhjd->ij", keys.double(), keys.double())


def modularity(adjacency: Tensor, starts: list[int]) -> float:
    """Q = 1/(4m) sum_c sum_{i,j in c} (A_ij - k_i k_j / 2m) of the partition of 0..T-1 into
    contiguous communities starting at ``starts`` (paper Eq. 3, official 1/(4m) scale;
    ``networkx`` uses 1/(2m), i.e. twice this for a symmetric non-negative graph)."""
    a = adjacency.double()
    n = a.shape[0]
    two_m = a.sum()
    degree = a.sum(1)
    edges = sorted({0, *[s for s in starts if 0 < s < n]}) + [n]
    q = torch.zeros((), dtype=torch.float64)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        q += a[lo:hi, lo:hi].sum() - degree[lo:hi].sum() ** 2 / two_m
    return float(q / (2 * two_m))


def event_conductances(adjacency: Tensor, starts: list[int]) -> Tensor:
    """phi(S) = cut(S) / min(vol(S), vol(S-bar)) of every contiguous community starting at
    ``starts``, with cut(S) = sum_{i in S, j not in S} A_ij, vol(S) = sum_{i,j in S} A_ij and
    vol(S-bar) = sum_ij A_ij - vol(S) (paper Eq. 4 with the official volumes,
    ``similarity.py`` L30-44 of em-llm/EM-LLM-model @ e911d1f; 1e-15 guard on a zero volume).

    Returns:
        (number of communities,) conductances, in order.
    """
    a = adjacency.double()
    n = a.shape[0]
    total = a.sum()
    degree = a.sum(1)
    edges = sorted({0, *[s for s in starts if 0 < s < n]}) + [n]
    phis = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inner = a[lo:hi, lo:hi].sum()
        denominator = torch.minimum(inner, total - inner)
        denominator = denominator if denominator != 0 else torch.tensor(1e-15, dtype=a.dtype)
        phis.append((degree[lo:hi].sum() - inner) / denominator)
    return torch.stack(phis)


def conductance(adjacency: Tensor, starts: list[int]) -> float:
    """The conductance of a segmentation: the **minimum** over its communities of phi(S)
    (:func:`event_conductances`), paper Eq. 4 (f_C = min over the events S of the induced
    graph), as the official code reads it (``similarity.py`` L53 returns the min first and the
    refinement scores splits by it, ``segmentation.py`` L14). Lower is better.

    Not the mean over events (this repo's first real protocol): with vol(S) the intra-event
    volume, phi(S) ~ (T - n) / n for an event of n tokens on any graph, so a mean over events
    grows with mean(1/n) and penalises variable sizes regardless of where the boundaries are
    (README, "Real data: diagnosis")."""
    return float(event_conductances(adjacency, starts).min())


def split_scores(adjacency: Tensor, metric: str) -> Tensor:
    """Metric of every two-community split {[0, t), [t, n)} of a window, t = 0..n (vectorised
    with prefix sums; brief Sec. 3.3). ``modularity``: Q (maximise); ``conductance``: the
    smaller of the two sides' phi = cut / min(vol(S), vol(S-bar)) with vol the intra-community
    sum and a 1e-15 guard on zero volume (official form; minimise)."""
    a = adjacency.double()
    total = a.sum()
    inner = a.cumsum(0).cumsum(1).diagonal()  # P(t) = sum_{i,j<=t-1}
    inner = torch.cat([inner.new_zeros(1), inner])  # (n + 1,)
    left_degree = torch.cat([a.new_zeros(1), a.sum(1).cumsum(0)])  # K(t) = sum_{i<t} k_i
    right_inner = total - 2 * left_degree + inner  # sum_{i,j >= t} (A symmetric)
    if metric == "modularity":
        q = inner - left_degree**2 / total + right_inner - (total - left_degree) ** 2 / total
        return q / (2 * total)
    if metric == "conductance":
        cut = left_degree - inner

        def phi(volume: Tensor) -> Tensor:
            denominator = torch.minimum(volume, total - volume)
            return cut / torch.where(
                denominator == 0, torch.full_like(denominator, 1e-15), denominator
            )

        return torch.minimum(phi(inner), phi(right_inner))
    raise ValueError(f"unknown refinement metric {metric!r}; choose modularity or conductance")


def refine_boundaries(
    adjacency: Tensor,
    boundaries: list[int],
    min_block: int,
    metric: str = "modularity",
    offset: int | None = None,
) -> list[int]:
    """Boundary refinement, paper Algorithm 1 (brief Sec. 3.3); keeps the number of boundaries.

    Boundaries closer than ``min_block`` to the previous one are dropped first. Then for each
    boundary beta (in order, prev = 0 initially): if beta - prev > min_block, the window
    [max(0, prev - h), min(T, beta + h)) with h = (beta - prev) // 2 is split at every t in
    [prev + min_block, beta - 1]; beta moves to the split with the best metric of the
    two-community partition of the window's sub-graph. prev becomes the (new) beta.

    ``offset`` (not None): the official rules (``segmentation.events_with_similarity_
    adjustment``), where the graph starts ``offset`` tokens before the chunk (the previous
    chunk's tail, 0 without one): the pre-filter compares each boundary with its *original*
    predecessor; a first boundary below ``min_block`` is kept (unrefined) only when
    ``offset == 0``; a boundary within ``min_block`` of the chunk start is not moved; splits
    are scanned from max(offset, prev) + min_block, never inside the previous chunk's tail.
    """
    n = adjacency.shape[0]
    if offset is None:
        kept, last = [], 0
        for b in sorted(boundaries):
            if b - last >= min_block:
                kept.append(b)
                last = b
    else:
        base = sorted(boundaries)
        kept = [base[0]] if base and (base[0] >= min_block or offset == 0) else []
        kept += [base[i] for i in range(1, len(base)) if base[i] - base[i - 1] >= min_block]
    floor = 0 if offset is None else offset
    refined, prev = [], 0
    for beta in kept:
        if beta - prev > min_block and beta - floor > min_block:
            h = (beta - prev) // 2
            w0, w1 = max(0, prev - h), min(n, beta + h)
            scores = split_scores(adjacency[w0:w1, w0:w1], metric)
            # split index in the window
            candidates = torch.arange(max(prev, floor) + min_block, beta) - w0
            values = scores[candidates]
            best = values.argmax() if metric == "modularity" else values.argmin()
            beta = int(candidates[best]) + w0
        refined.append(beta)
        prev = beta
    return refined


# --------------------------------------------------------------------------- events (Sec. 3.4)


def form_events(
    start: int,
    frontier: int,
    boundaries: list[int],
    min_block: int,
    max_block: int,
    uniform: bool = False,
    strict_frontier: bool = False,
) -> tuple[list[tuple[int, int]], int]:
    """Cut the evicted remainder [start, frontier) into stored events (brief Sec. 3.4).

    Segments run between consecutive boundaries inside the remainder; one shorter than
    ``min_block`` is merged into the following one; one longer than ``max_block`` is split into
    ``max_block`` pieces (a leftover shorter than ``min_block`` joins the next segment); the
    last, open segment stays in the remainder, except that ``max_block`` pieces are cut from it
    once that many tokens wait without a boundary. ``uniform`` (InfLLM) ignores the boundaries:
    consecutive ``max_block`` pieces. ``strict_frontier`` (official): only boundaries strictly
    before the frontier cut (the official block formation reads ``divide[st: st + ed]``), so a
    boundary exactly at the frontier closes its event one update later.

    Returns:
        The new events as [begin, end) pairs and the new start of the remainder.
    """
    if min_block < 1 or max_block < min_block:
        raise ValueError(f"need 1 <= min_block <= max_block, got {min_block}, {max_block}")
    last = frontier - 1 if strict_frontier else frontier
    cuts = [] if uniform else [b for b in sorted(set(boundaries)) if start < b <= last]
    events: list[tuple[int, int]] = []
    carry = start
    for b in cuts:
        if b - carry < min_block:
            continue  # too short: merged into the following segment
        while b - carry > max_block:
            events.append((carry, carry + max_block))
            carry += max_block
        if b - carry >= min_block:
            events.append((carry, b))
            carry = b
    while frontier - carry >= max_block:  # the open tail holds no boundary
        events.append((carry, carry + max_block))
        carry += max_block
    return events, carry


def representative_key(keys: Tensor, scores: Tensor, topk: int) -> Tensor:
    """An event's representative key (brief Sec. 3.4): per head, the mean key of the ``topk``
    tokens that received the most local attention (Sec. 3.1.5); heads concatenated.

    Args:
        keys: (H, n, d) the event's un-rotated keys (KV heads expanded to query heads).
        scores: (H, n) accumulated representative scores.

    Returns:
        (H * d,)
    """
    k = min(topk, keys.shape[1])
    top = scores.topk(k, dim=-1).indices  # (H, k)
    chosen = keys.gather(1, top[..., None].expand(-1, -1, keys.shape[-1]))  # (H, k, d)
    return chosen.mean(1).reshape(-1)


# --------------------------------------------------------------------------- retrieval (Sec. 3.5)


def nearest_capacity(order: list[int], sizes: list[int], capacity: int) -> list[int]:
    """Walk ``order`` adding sizes; at the event whose size crosses ``capacity`` keep it only
    if that leaves the total strictly closer to the capacity, then stop (brief Sec. 3.5.3)."""
    chosen, total = [], 0
    for e in order:
        if total >= capacity:
            break
        if total + sizes[e] <= capacity:
            chosen.append(e)
            total += sizes[e]
        else:
            if abs(total + sizes[e] - capacity) < abs(total - capacity):
                chosen.append(e)
            break
    return chosen


def similarity_retrieval(
    query: Tensor,
    representatives: Tensor,
    sizes: list[int],
    capacity: int,
    total: int | None = None,
    min_size: int | None = None,
) -> list[int]:
    """k-NN retrieval of events (paper Sec. 3.4, brief Sec. 3.5.2-3): every event if all fit;
    else events in descending <query, representative key> under the nearest-capacity rule.

    Args:
        query: (H * d,) mean of the chunk's queries (rotated at the one angle), heads
            concatenated.
        representatives: (E, H * d).
        total, min_size: sum(sizes) and min(sizes) when the caller keeps them (a memory
            of many events: then only the top capacity // min_size + 1 events are ranked,
            all the nearest-capacity walk can read, in the same order as a full stable sort).

    Returns:
        Selected event indices in descending score order.
    """
    if (sum(sizes) if total is None else total) <= capacity:
        return list(range(len(sizes)))
    scores = representatives @ query
    n = scores.numel()
    k = n if min_size is None or min_size < 1 else min(n, capacity // min_size + 1)
    return nearest_capacity(top_order(scores, k), sizes, capacity)


def top_order(scores: Tensor, k: int) -> list[int]:
    """A prefix (of at least ``k`` entries) of ``scores.argsort(descending=True,
    stable=True)``: the entries scoring at least the k-th largest value, stably sorted."""
    if k >= scores.numel():
        return scores.argsort(descending=True, stable=True).tolist()
    kth = scores.topk(k).values[-1]
    candidates = torch.nonzero(scores >= kth).flatten()  # ascending index: ties stay stable
    return candidates[scores[candidates].argsort(descending=True, stable=True)].tolist()


def contiguity_split(capacity: int, share: float) -> tuple[int, int]:
    """(similarity part, contiguity part) of a capacity: cap_c = int(share * cap + 1)."""
    contiguity = int(share * capacity + 1)
    return capacity - contiguity, contiguity


def update_contiguity_buffer(
    buffer: list[int],
    selected: list[int],
    sizes: list[int],
    capacity: int,
    official: bool = False,
) -> list[int]:
    """The contiguity buffer (paper Sec. 3.4, brief Sec. 3.5.4), a queue kept across chunks.

    For each selected event e (in score order) enqueue e + 1 then e - 1 (skipping ones already
    selected, already enqueued or out of range) up to ``capacity`` tokens with the
    nearest-capacity rule. If the new neighbours plus the old buffer fit, they are appended;
    otherwise the new neighbours replace the buffer and old entries are re-added, most recent
    first, while room remains.

    ``official`` (``context_manager._update_contiguity_buffer``): the new neighbours are
    reversed; no new neighbour leaves the buffer as it is; an empty buffer, or new neighbours
    that reached the capacity, are replaced by them alone; otherwise they are appended when
    old + new < capacity (strict), the old entries kept as they are (also ones now selected);
    else old entries are re-added in front, most recent first, skipping new or selected ones,
    until the running total crosses the capacity (nearest-capacity rule at the crossing).
    """
    taken = set(selected)
    candidates: list[int] = []
    for e in selected:
        for n in (e + 1, e - 1):
            if 0 <= n < len(sizes) and n not in taken and n not in candidates:
                candidates.append(n)
    if official:
        return _official_contiguity(buffer, candidates, taken, sizes, capacity)
    new = nearest_capacity(list(range(len(candidates))), [sizes[c] for c in candidates], capacity)
    new = [candidates[i] for i in new]
    old = [e for e in buffer if e not in taken and e not in new]
    if sum(sizes[e] for e in new + old) <= capacity:
        return old + new
    result, room = list(new), capacity - sum(sizes[e] for e in new)
    for e in reversed(old):
        if sizes[e] <= room:
            result.insert(0, e)
            room -= sizes[e]
    return result


def _official_contiguity(
    buffer: list[int], candidates: list[int], taken: set[int], sizes: list[int], capacity: int
) -> list[int]:
    """The official buffer update (see :func:`update_contiguity_buffer`, ``official``)."""
    new, total, filled = [], 0, False
    for c in candidates:  # the official walk: add, then undo at the crossing if farther
        new.append(c)
        total, before = total + sizes[c], total
        if total >= capacity:
            if abs(capacity - before) <= abs(total - capacity):
                new.pop()
                total = before
            filled = True
            break
    new.reverse()
    if not new:
        return list(buffer)
    if not buffer or filled:
        return new
    if sum(sizes[e] for e in buffer) + total < capacity:
        return list(buffer) + new
    result = list(new)
    for e in reversed(buffer):
        if e in result or e in taken or not 0 <= e < len(sizes):
            continue
        result.insert(0, e)
        total, before = total + sizes[e], total
        if total >= capacity:
            if abs(capacity - before) <= abs(total - capacity):
                result.pop(0)
            break
    return result


# --------------------------------------------------------------------------- analysis (Sec. 5)


def boundary_f1(predicted: list[int], true: list[int], tolerance: int = 1) -> float:
    """F1 of predicted event starts against true ones; a prediction within ``tolerance``
    tokens of a true start is correct, a true start within ``tolerance`` of a prediction is
    recalled (toy's segmentation analysis, brief Sec. 5)."""
    if not predicted or not true:
        return 0.0
    p = torch.tensor(predicted)[:, None]
    t = torch.tensor(true)[None, :]
    close = (p - t).abs() <= tolerance  # (P, T)
    precision = close.any(1).float().mean().item()
    recall = close.any(0).float().mean().item()
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def evenly_spaced(start: int, end: int, n_boundaries: int) -> list[int]:
    """``n_boundaries`` boundaries splitting [start, end) into equal parts (the fixed control)."""
    step = (end - start) / (n_boundaries + 1)
    return [start + round(step * (i + 1)) for i in range(n_boundaries)]
