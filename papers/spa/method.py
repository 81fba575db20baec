"""SPA: Spread Preference Annotation, Direct Preference Judgment for Efficient LLM Alignment.

Kim, Lee, Shin, Kim, ICLR 2025, arXiv 2406.04412; official code ``kingdy2002/SPA``.

Starting from a small human-labelled seed (DPO, Sec. 3.1 of the brief), every iteration i
samples two responses per fresh prompt from pi_{i-1}, labels them with the model's own
implicit reward against the initial SFT model (paper Eq. 7-8),

    r_i(x, y) = beta * [log pi_{i-1}(y|x) - log pi_init(y|x)],

and trains pi_i from pi_{i-1} (reference pi_{i-1}) on those self-labels with the
self-refinement loss: the pairs whose margin under an extrapolated, "more aligned" model
(logits (1 + lambda) z_theta - lambda z_ref, paper Eq. 12) is among the lowest K% get
label-smoothed DPO with strength alpha (the official trainer's ``loss_type="distill"``).

Everything here is pure tensor math: no I/O, no configs, no models. Response log-probs are
**summed** over response tokens (never length-normalised), as in the official code.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import torch
import torch.nn.functional as F

# ------------------------------------------------------------------ sequence log-probs


def token_log_probs(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    allowed_tokens: torch.Tensor | None = None,
) -> torch.Tensor:
    """log pi(y_t | y_<t) of every next token (position t-1 predicts token t).

    Args:
        logits: (B, T, V) pre-softmax logits of a causal LM on ``input_ids``.
        input_ids: (B, T) token ids.
        allowed_tokens: optional (V,) bool mask of the tokens a response may contain; the
            others get logit -inf before the softmax (the toy's prompt tokens are never
            responses, brief Sec. 3.5 "Masking").

    Returns:
        (B, T-1) log-probability of token t+1 given tokens <= t.
    """
    logits = logits[:, :-1].float()  # (B, T-1, V); fp32 softmax even under bf16
    if allowed_tokens is not None:
        logits = logits.masked_fill(~allowed_tokens.to(logits.device), float("-inf"))
    log_p = torch.log_softmax(logits, dim=-1)
    return log_p.gather(-1, input_ids[:, 1:, None]).squeeze(-1)


def sequence_log_probs(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    response_mask: torch.Tensor,
    allowed_tokens: torch.Tensor | None = None,
) -> torch.Tensor:
    """log pi(y|x) = sum over response tokens of log pi(y_t | x, y_<t) (brief Sec. 3, summed).

    Args:
        logits: (B, T, V) logits on the concatenated prompt + response ``input_ids`` (B, T).
        response_mask: (B, T) bool, True at response-token positions (prompt and padding
            positions are excluded).

    Returns:
        (B,) summed response log-probabilities.
    """
    per_token = token_log_probs(logits, input_ids, allowed_tokens)  # (B, T-1)
    mask = response_mask[:, 1:].to(per_token.device)
    # where() rather than multiply: a masked-out -inf (a prompt token) must not become NaN
    return torch.where(mask, per_token, torch.zeros_like(per_token)).sum(-1)


def extrapolated_logits(
    z_theta: torch.Tensor, z_ref: torch.Tensor, decouple_lambda: float
) -> torch.Tensor:
    """De-coupled noise detection, paper Eq. (12): z_g = (1 + lambda) z_theta - lambda z_ref.

    The mix is on pre-softmax logits at every position (not on sequence log-probs); pi_g
    approximates the policy aligned with a (1 + lambda)-times weaker KL penalty. Callers
    pass detached tensors: pi_g only decides which pairs are flagged.
    """
    return (1.0 + decouple_lambda) * z_theta - decouple_lambda * z_ref


# ------------------------------------------------------------------ DPO (brief Sec. 3.1)


def dpo_margin(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    reference_chosen: torch.Tensor,
    reference_rejected: torch.Tensor,
) -> torch.Tensor:
    """h = [log pi(y_w) - log pi_ref(y_w)] - [log pi(y_l) - log pi_ref(y_l)], per pair (B,)."""
    return (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)


def dpo_loss(margin: torch.Tensor, beta: float) -> torch.Tensor:
    """Per-pair DPO loss -log sigmoid(beta * h) (brief Sec. 3.1), shape (B,)."""
    return -F.logsigmoid(beta * margin)


# ------------------------------------------------------- self-refinement (brief Sec. 3.3)


def flag_lowest_margins(
    confidence: torch.Tensor, fraction: float, in_warmup: bool = False
) -> torch.Tensor:
    """Per-minibatch flagging: the round(K * B) (at least 1) pairs with the smallest beta*h_g.

    The paper's wording ("the K% lowest-confidence samples in the batch"). During the
    warm-up nothing is flagged: there policy = reference, so every margin is 0.

    Args:
        confidence: (B,) margins beta * h_g (detached).
        fraction: K, e.g. 0.1.

    Returns:
        (B,) bool, True for flagged (low-confidence) pairs.
    """
    flagged = torch.zeros_like(confidence, dtype=torch.bool)
    if in_warmup or confidence.numel() == 0:
        return flagged
    count = min(confidence.numel(), max(1, round(fraction * confidence.numel())))
    flagged[torch.argsort(confidence, stable=True)[:count]] = True
    return flagged


class RollingThreshold:
    """The official rolling percentile of recent margins (``confidence_update``).

    A window of the last ``window`` per-sample margins; threshold tau = the mean of the
    sorted window's entries k and k + 1 (0-based), k = floor(K * window) (K = 0.1,
    window 50: the 6th and 7th smallest). tau = 0 until the window is full, and the
    threshold used for a sample is the one from before it entered the window.
    """

    def __init__(self, fraction: float, window: int):
        if window < 2:
            raise ValueError(f"threshold window must hold >= 2 margins, got {window}")
        self.fraction, self.window = fraction, window
        self.values: deque[float] = deque(maxlen=window)

    def threshold(self) -> float:
        if len(self.values) < self.window:
            return 0.0
        k = min(int(self.fraction * self.window), self.window - 2)
        ordered = sorted(self.values)
        return 0.5 * (ordered[k] + ordered[k + 1])

    def flag(self, confidence: torch.Tensor, in_warmup: bool = False) -> torch.Tensor:
        """Flag each margin against the threshold of the samples before it, then add it."""
        flagged = torch.zeros_like(confidence, dtype=torch.bool)
        for index, value in enumerate(confidence.tolist()):
            flagged[index] = (not in_warmup) and value <= self.threshold()
            self.values.append(float(value))
        return flagged

    def state_dict(self) -> dict[str, Any]:
        return {"values": list(self.values)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.values = deque(state["values"], maxlen=self.window)


def self_refinement_loss(
    margin: torch.Tensor, flagged: torch.Tensor, beta: float, alpha: float
) -> torch.Tensor:
    """Label-smoothed DPO on flagged pairs (brief Sec. 3.3 step 3), per pair (B,).

    L = -(1 - alpha (1 - c)) log sigmoid(beta h) - alpha (1 - c) log sigmoid(-beta h),
    c = 1 for confident pairs (plain DPO), 0 for flagged ones (conservative DPO with
    epsilon = alpha). With alpha = 0 this is exactly :func:`dpo_loss`.
    """
    smoothing = alpha * flagged.to(margin.dtype)
    return -(1.0 - smoothing) * F.logsigmoid(beta * margin) - smoothing * F.logsigmoid(
        -beta * margin
    )


def in_warmup(step: int, total_steps: int, warmup_fraction: float) -> bool:
    """alpha is forced to 0 in the first ``warmup_fraction`` of the iteration's optimizer
    steps (1-based ``step``); at the start policy = reference and all margins are 0."""
    return step <= math.floor(warmup_fraction * total_steps)


# --------------------------------------------- direct preference judgment (paper Eq. 7-8)


def implicit_reward(
    policy_log_probs: torch.Tensor, init_log_probs: torch.Tensor, beta: float
) -> torch.Tensor:
    """r_i(x, y) = beta [log pi_{i-1}(y|x) - log pi_init(y|x)] (paper Eq. 7), summed log-probs.

    The reference is pi_init (the SFT model), not pi_{i-1} (brief Sec. 3.5, Table 7).
    """
    return beta * (policy_log_probs - init_log_probs)


def judge_pairs(
    policy_log_probs: torch.Tensor, init_log_probs: torch.Tensor, beta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Direct preference judgment of K sampled responses per prompt (paper Eq. 7-8).

    Args:
        policy_log_probs: (N, K) log pi_{i-1}(y_k | x) of each response.
        init_log_probs: (N, K) log pi_init(y_k | x).

    Returns:
        chosen (N,) index of argmax r_i, rejected (N,) index of argmin r_i; with K = 2,
        p(y_1 > y_2) = sigmoid(r_1 - r_2) and chosen = 0 iff r_1 >= r_2.
    """
    reward = implicit_reward(policy_log_probs, init_log_probs, beta)  # (N, K)
    return reward.argmax(-1), reward.argmin(-1)


def preference_probability(
    policy_log_probs: torch.Tensor, init_log_probs: torch.Tensor, beta: float
) -> torch.Tensor:
    """p(y_1 > y_2 | x) = sigmoid(r_i(x, y_1) - r_i(x, y_2)) for K = 2 (paper Eq. 8), (N,)."""
    reward = implicit_reward(policy_log_probs, init_log_probs, beta)
    return torch.sigmoid(reward[:, 0] - reward[:, 1])


def distinct_pairs(responses: torch.Tensor) -> torch.Tensor:
    """(N,) bool: True where the two responses differ (identical pairs carry no preference and
    sit at margin 0; brief Sec. 3.5).

    Args:
        responses: (N, 2, L) token ids (padding included in the comparison).
    """
    return (responses[:, 0] != responses[:, 1]).any(-1)


def label_accuracy(
    chosen_reward: torch.Tensor, rejected_reward: torch.Tensor, decimals: int = 6
) -> tuple[float, int]:
    """Tie-aware label accuracy: the fraction of pairs with r*(y_w) > r*(y_l) among pairs
    whose true rewards differ (rounded to ``decimals``), and the number of exact ties."""
    chosen = torch.round(chosen_reward.double(), decimals=decimals)
    rejected = torch.round(rejected_reward.double(), decimals=decimals)
    decided = chosen != rejected
    ties = int((~decided).sum())
    if not bool(decided.any()):
        return float("nan"), ties
    return float((chosen[decided] > rejected[decided]).double().mean()), ties
