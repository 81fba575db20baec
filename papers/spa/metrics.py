"""The toy's exact metrics (brief Sec. 5.3): no sampling noise, every response enumerated.

For each evaluation prompt the policy's and pi_init's probabilities of all V^L responses
(``model.enumerate_log_probs``) and the true rewards r*(x, y) give

    WR = mean_x sum_y pi(y|x) [P_init(r* < r*(y)) + 0.5 P_init(r* = r*(y))],

the probability that a response of the policy beats one of pi_init under r*, ties counting
half, and the expected reward E_{y ~ pi}[r*(x, y)].
"""

from __future__ import annotations

import torch


def exact_win_rate(
    policy_log_probs: torch.Tensor,
    init_log_probs: torch.Tensor,
    rewards: torch.Tensor,
    decimals: int = 6,
) -> float:
    """Exact win rate against pi_init with ties counted half (brief Sec. 5.3).

    Args:
        policy_log_probs: (P, N) log pi(y|x) of all N responses of each of P prompts.
        init_log_probs: (P, N) log pi_init(y|x).
        rewards: (P, N) r*(x, y); rounded to ``decimals`` so that responses with the same
            token multiset (same reward up to float error) tie exactly.
    """
    return win_rate_from_weights(policy_log_probs, win_weights(init_log_probs, rewards, decimals))


def win_weights(init_log_probs: torch.Tensor, rewards: torch.Tensor, decimals: int = 6):
    """P_init(r* < r*(y)) + 0.5 P_init(r* = r*(y)) of every response y, (P, N) float64.

    It depends on pi_init and r* only, so a run computes it once per seed and every
    evaluation is then one weighted sum (:func:`win_rate_from_weights`).
    """
    init = init_log_probs.double().exp()
    r = torch.round(rewards.double(), decimals=decimals)
    order = torch.argsort(r, dim=-1)
    r_sorted = r.gather(-1, order)
    init_sorted = init.gather(-1, order)
    cumulative = torch.cumsum(init_sorted, dim=-1)  # (P, N)
    # P_init(r* < r) and P_init(r* <= r) from the sorted cumulative mass of pi_init
    below_index = torch.searchsorted(r_sorted, r, right=False)  # first index with r_sorted >= r
    upto_index = torch.searchsorted(r_sorted, r, right=True)  # first index with r_sorted > r
    padded = torch.cat([torch.zeros_like(cumulative[:, :1]), cumulative], dim=-1)
    p_below = padded.gather(-1, below_index)
    p_equal = padded.gather(-1, upto_index) - p_below
    return p_below + 0.5 * p_equal


def win_rate_from_weights(policy_log_probs: torch.Tensor, weights: torch.Tensor) -> float:
    """WR = mean_x sum_y pi(y|x) weights(x, y), the weights of :func:`win_weights`."""
    per_prompt = (policy_log_probs.double().exp() * weights).sum(-1)  # (P,)
    return float(per_prompt.mean())


def expected_reward(policy_log_probs: torch.Tensor, rewards: torch.Tensor) -> float:
    """E_x E_{y ~ pi(.|x)} r*(x, y), exactly over all enumerated responses."""
    return float((policy_log_probs.double().exp() * rewards.double()).sum(-1).mean())
