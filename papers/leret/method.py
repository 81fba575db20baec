"""LeReT: "Grounding by Trying: LLMs with Reinforcement Learning-Enhanced Retrieval"
(Hsu, Khattab, Finn, Sharma, ICLR 2025), arXiv 2410.23214.

The contribution, as pure functions (no I/O, no Hydra, no global state):

* rewards of a retrieved context against the gold documents: average precision (the reward)
  and recall (brief Sec. 3.2);
* the Plackett-Luce query distribution of the toy's pointer policy: the log-probability of an
  ordered query, sampling without replacement and greedy decoding (brief Sec. 5.4);
* the preference-pair builder: queries grouped by AP level, pairs between *adjacent* levels
  only, inputs where every query ties skipped, the SFT target from the top level (Sec. 3.3.3);
* the reward-proportional choice of the context carried to the next hop, AP = 1 dropped and a
  bonus on the top level (Sec. 3.3.4);
* the losses: SFT (context distillation, LeReT-CD) and IPO / DPO on the margin h (Sec. 3.4).

The data collection that strings these together for any query policy is in
``collection.py``. Deviation: the toy's multi-hop context is kept in hop order, not sorted by
raw retriever score as the official code does (brief Sec. 3.5, 5.3).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

LEVEL_DECIMALS = 9  # rewards equal to 9 decimals are one AP level (float noise is not a level)


# ------------------------------------------------------------------ rewards (Sec. 3.2)


def average_precision(ranking: Sequence[Hashable], gold: set) -> float:
    """AP = (1/|G|) * sum over ranks i with doc_i in G of (#gold in ranks 1..i) / i.

    Official ``custom_metrics.py``: normalised by the number of gold documents, so a ranking
    that misses a gold document is penalised. Duplicates count once (the context is deduped).
    """
    if not gold:
        raise ValueError("average precision needs a non-empty gold set")
    hits, total, seen = 0, 0.0, set()
    rank = 0
    for doc in ranking:
        if doc in seen:
            continue
        seen.add(doc)
        rank += 1
        if doc in gold:
            hits += 1
            total += hits / rank
    return total / len(gold)


def recall(ranking: Sequence[Hashable], gold: set) -> float:
    """|G ∩ context| / |G| (the paper's "RE")."""
    if not gold:
        raise ValueError("recall needs a non-empty gold set")
    return len(gold & set(ranking)) / len(gold)


def extend_context(context: Sequence[int], retrieved: Sequence[int]) -> tuple[int, ...]:
    """The cumulative context: previous hops' documents, then this hop's new ones in rank order
    (dedup, hop order; brief Sec. 5.3, a deviation from the official score-sorted merge)."""
    seen = set(context)
    return tuple(context) + tuple(d for d in dict.fromkeys(retrieved) if d not in seen)


# ------------------------------------------------------------------ Plackett-Luce (Sec. 5.4)


def plackett_luce_log_prob(
    scores: torch.Tensor, mask: torch.Tensor, chosen: torch.Tensor
) -> torch.Tensor:
    """log pi(query) = sum over steps j of [s(c_j) - logsumexp(s over not-yet-chosen)].

    Args:
        scores: (B, C) candidate scores (logits of the pointer policy).
        mask: (B, C) bool, True for real candidates (padding is False).
        chosen: (B, m) positions of the query's tokens, in the order they were written.

    Returns:
        (B,) summed log-probabilities: the causal policy's sequence log-likelihood.
    """
    available = mask.clone()
    total = scores.new_zeros(scores.shape[0])
    rows = torch.arange(scores.shape[0], device=scores.device)
    for step in range(chosen.shape[1]):
        masked = scores.masked_fill(~available, float("-inf"))
        total = total + scores[rows, chosen[:, step]] - torch.logsumexp(masked, dim=-1)
        available = available.clone()
        available[rows, chosen[:, step]] = False
    return total


def plackett_luce_sample(
    scores: torch.Tensor,
    mask: torch.Tensor,
    m: int,
    n: int,
    temperature: float,
    rng: np.random.Generator,
) -> torch.Tensor:
    """n queries of m distinct candidates per row, each drawn from softmax(s / T) over the
    not-yet-chosen candidates (Plackett-Luce at temperature T).

    Uses the Gumbel-top-m identity: the m largest of s/T + Gumbel noise, in decreasing order,
    are an exact Plackett-Luce draw without replacement (one vectorised sort instead of m
    sequential softmaxes).

    Returns:
        (B, n, m) candidate positions.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    gumbel = torch.from_numpy(rng.gumbel(size=(scores.shape[0], n, scores.shape[1]))).to(scores)
    perturbed = (scores / temperature).unsqueeze(1) + gumbel
    perturbed = perturbed.masked_fill(~mask.unsqueeze(1), float("-inf"))
    return perturbed.topk(m, dim=-1).indices


def plackett_luce_greedy(scores: torch.Tensor, mask: torch.Tensor, m: int) -> torch.Tensor:
    """Greedy decoding: argmax at each step = the top-m scores in decreasing order. (B, m)."""
    return scores.masked_fill(~mask, float("-inf")).topk(m, dim=-1).indices


# ------------------------------------------------------------------ pairs (Sec. 3.3.3)


@dataclass(frozen=True)
class InputPreferences:
    """What one hop input contributes: preference pairs and the SFT target (or none)."""

    pairs: list[tuple[Any, Any]]  # (preferred query, dispreferred query)
    sft_target: Any | None


def build_preference_pairs(
    queries: Sequence[Any],
    rewards: Sequence[float],
    key: Callable[[Any], Hashable] = lambda q: q,
    is_valid: Callable[[Any], bool] = lambda q: True,
) -> InputPreferences:
    """Official ``make_nth_dataset``: pairs between adjacent AP levels of one hop input.

    Duplicate queries (same ``key``: the toy compares queries as token sets, the LM path as
    strings) and malformed ones are dropped first, keeping the first occurrence. If the rest
    all have the same AP the input is skipped (no pairs, no SFT target). Otherwise every query
    of level l is preferred to every query of the next lower level l-1 (no pairs between
    non-adjacent levels), and the SFT target is the first query of the top level.
    """
    if len(queries) != len(rewards):
        raise ValueError(f"{len(queries)} queries but {len(rewards)} rewards")
    by_level: dict[float, list[Any]] = {}
    seen: set = set()
    for query, reward in zip(queries, rewards, strict=True):
        if not is_valid(query) or key(query) in seen:
            continue
        seen.add(key(query))
        by_level.setdefault(round(float(reward), LEVEL_DECIMALS), []).append(query)
    if len(by_level) < 2:
        return InputPreferences([], None)
    levels = sorted(by_level, reverse=True)
    pairs = [
        (better, worse)
        for high, low in zip(levels[:-1], levels[1:], strict=True)
        for better in by_level[high]
        for worse in by_level[low]
    ]
    return InputPreferences(pairs, by_level[levels[0]][0])


# ------------------------------------------------------------------ next hop (Sec. 3.3.4)


def next_hop_level_weights(levels: Sequence[float], top_bonus: float) -> np.ndarray:
    """Weight of each AP level: its value, plus ``top_bonus`` on the highest level (so a level
    with AP 0 has weight 0 unless it is the highest)."""
    values = np.asarray(levels, dtype=float)
    weights = values.copy()
    weights[np.argmax(values)] += top_bonus
    return weights


def choose_next_trajectory(
    rewards: Sequence[float], rng: np.random.Generator, top_bonus: float
) -> int | None:
    """Index of the trajectory whose context the next hop continues, or None to stop.

    Official ``create_preference_dataset.py``: trajectories already at AP = 1 are dropped; a
    level is drawn with probability proportional to :func:`next_hop_level_weights`; a
    trajectory is drawn uniformly within it (reward-proportional, not greedy: greedy carrying
    starves later hops of hard contexts, brief Sec. 3.5).
    """
    rounded = np.round(np.asarray(rewards, dtype=float), LEVEL_DECIMALS)
    open_ = np.flatnonzero(rounded < 1.0)
    if open_.size == 0:
        return None
    levels = np.unique(rounded[open_])
    weights = next_hop_level_weights(levels, top_bonus)
    level = levels[rng.choice(len(levels), p=weights / weights.sum())]
    members = open_[rounded[open_] == level]
    return int(members[rng.integers(len(members))])


# ------------------------------------------------------------------ losses (Sec. 3.4)


def sft_loss(log_probs: torch.Tensor) -> torch.Tensor:
    """LeReT-CD: -log pi(sft_target | zero-shot input), mean over the batch. (B,) -> ()."""
    return -log_probs.mean()


def preference_margin(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    reference_chosen: torch.Tensor,
    reference_rejected: torch.Tensor,
) -> torch.Tensor:
    """h = [log pi(q_w|s) - log pi_ref(q_w|s)] - [log pi(q_l|s) - log pi_ref(q_l|s)] (summed
    log-probs of each query; official ``trainers.preference_loss`` logits)."""
    return (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)


def ipo_loss(h: torch.Tensor, beta: float) -> torch.Tensor:
    """L_IPO = (h - 1/(2 beta))^2 per pair (the target margin is 1/(2 beta) nats: 10 at
    beta = 0.05). Official ``preference_loss(..., ipo=True)``."""
    return (h - 1.0 / (2.0 * beta)) ** 2


def dpo_loss(h: torch.Tensor, beta: float) -> torch.Tensor:
    """L_DPO = -log sigmoid(beta h) per pair (the same trainer's sigmoid branch)."""
    return -F.logsigmoid(beta * h)


# keyed by config.PREFERENCE_LOSS_NAMES (a test checks the keys)
PREFERENCE_LOSSES = {"ipo": ipo_loss, "dpo": dpo_loss}
