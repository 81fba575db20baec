"""ResDex: Efficient Residual Learning with Mixture-of-Experts for Universal Dexterous Grasping.

Huang, Yuan, Fu, Lu, ICLR 2025, arXiv 2410.02475. Official code PKU-RL/ResDex (no licence:
read, nothing copied).

The contribution is the hyper-policy: K geometry-unaware base policies, each trained by PPO on
one representative object, are frozen; a hyper-policy that also sees object geometry outputs
mixture logits over them plus a residual action, trained by multi-task PPO. This file holds the
math (section numbers are the brief's, which follows the paper's Sec. 3-4 and the official
``residual.py`` / ``ppo.py``):

* :func:`compose_action`: ``a = sum_i softmax(l)_i mu_i(o_base) + r``, clipped after adding r
  (Sec. 3.3);
* :func:`gae`, :func:`clipped_surrogate_loss`, :func:`clipped_value_loss`,
  :func:`gaussian_kl`, :func:`adaptive_lr` (Sec. 3.4, PPO as in the official configs);
* the Shadow-Hand rewards of the paper scale: :func:`grasp_reward` with its two stages
  (Sec. 3.2-3.3).

The networks are in :mod:`papers.resdex.model`, the PPO loop in :mod:`papers.resdex.ppo`.
"""

from __future__ import annotations

import torch


# ------------------------------------------------------------------ composition (Sec. 3.3)
def compose_action(
    logits: torch.Tensor, residual: torch.Tensor, base_means: torch.Tensor, clip: bool = True
) -> torch.Tensor:
    """Residual mixture of experts, Sec. 3.3: ``a = sum_i softmax(l)_i mu_i + r``.

    Args:
        logits: (N, K) mixture logits ``l`` (the softmax happens here, inside the composition).
        residual: (N, A) residual action ``r``, added without scaling.
        base_means: (N, K, A) deterministic means ``mu_i`` of the frozen base policies.
        clip: clip to [-1, 1] *after* adding ``r`` (what the env wrapper does).
    """
    weights = torch.softmax(logits, dim=-1)  # (N, K)
    action = (weights.unsqueeze(-1) * base_means).sum(dim=1) + residual  # (N, A)
    return action.clamp(-1.0, 1.0) if clip else action


# ------------------------------------------------------------------ PPO (Sec. 3.4)
def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over a rollout of T steps.

    ``dones[t]`` marks that the episode ended *at* step t (no bootstrap from ``values[t+1]``;
    timeouts are treated as ends, as the official Isaac Gym code does).
    ``delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t``,
    ``A_t = delta_t + gamma lam (1 - d_t) A_{t+1}``; returns ``A`` and ``A + V``.

    Shapes: rewards, values, dones (T, N); last_value (N,).
    """
    steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    next_advantage = torch.zeros_like(last_value)
    next_value = last_value
    for t in reversed(range(steps)):
        not_done = 1.0 - dones[t].float()
        delta = rewards[t] + gamma * not_done * next_value - values[t]
        next_advantage = delta + gamma * lam * not_done * next_advantage
        advantages[t] = next_advantage
        next_value = values[t]
    return advantages, advantages + values


def clipped_surrogate_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped surrogate (to minimise): ``-mean min(rho A, clip(rho, 1 +- eps) A)``."""
    ratio = torch.exp(log_prob - old_log_prob)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * advantages
    return -torch.min(unclipped, clipped).mean()


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float
) -> torch.Tensor:
    """Clipped value loss (official ``use_clipped_value_loss``):
    ``mean max((V - R)^2, (V_old + clip(V - V_old, +- eps) - R)^2)``."""
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    return torch.max((values - returns) ** 2, (clipped - returns) ** 2).mean()


def gaussian_kl(
    mean_old: torch.Tensor, std_old: torch.Tensor, mean_new: torch.Tensor, std_new: torch.Tensor
) -> torch.Tensor:
    """Analytic KL(old || new) of diagonal Gaussians, summed over dims, averaged over the batch
    (the quantity the adaptive schedule reads)."""
    kl = (
        torch.log(std_new / std_old)
        + (std_old**2 + (mean_old - mean_new) ** 2) / (2.0 * std_new**2)
        - 0.5
    )
    return kl.sum(dim=-1).mean()


def adaptive_lr(
    lr: float,
    kl: float,
    desired_kl: float,
    factor: float = 1.5,
    lr_min: float = 1e-5,
    lr_max: float = 1e-2,
) -> float:
    """The adaptive-KL learning-rate rule (Sec. 3.4): divide by ``factor`` when
    ``KL > 2 desired``, multiply when ``KL < desired / 2``, within ``[lr_min, lr_max]``."""
    if kl > 2.0 * desired_kl:
        return max(lr_min, lr / factor)
    if kl < desired_kl / 2.0:
        return min(lr_max, lr * factor)
    return lr


# ------------------------------------------------------------------ paper-scale rewards
def grasp_reward(
    *,
    stage: str,
    d_fingers: torch.Tensor,
    d_palm: torch.Tensor,
    pose_dpos_l1: torch.Tensor,
    pose_dangle: torch.Tensor,
    pose_dq_l1: torch.Tensor,
    obj_height: torch.Tensor,
    obj_init_height: torch.Tensor,
    goal_distance: torch.Tensor,
    action_z: torch.Tensor,
) -> torch.Tensor:
    """Per-step grasp-and-lift reward of the Shadow-Hand tasks (Sec. 3.2 and 3.3).

    ``stage``: ``"base"`` (base policies, ``goal_cond``), ``"residual1"`` (hyper-policy stage
    1: the grasp-pose prior kept, approach shaping dropped) or ``"residual2"`` (stage 2: no
    prior, gating on the two contact conditions only, absolute lift threshold 0.630).
    Distances are metres; ``d_fingers`` is already ``min(sum ||tip - obj||, 3)`` and ``d_palm``
    ``min(||palm - obj||, 0.5)`` as in the official task.
    """
    if stage not in ("base", "residual1", "residual2"):
        raise ValueError(f"stage must be base, residual1 or residual2, got {stage!r}")
    contact = (d_fingers <= 0.6) & (d_palm <= 0.12)
    pose_ok = (pose_dpos_l1 <= 0.4) & (pose_dangle <= 1.0) & (pose_dq_l1 <= 6.0)
    gate = contact if stage == "residual2" else contact & pose_ok
    r_goal = torch.where(gate, 0.9 - 2.0 * goal_distance, torch.zeros_like(goal_distance))
    lift_threshold = 0.630 if stage == "residual2" else None
    above = obj_height > (lift_threshold if lift_threshold is not None else obj_init_height + 0.603)
    r_up = torch.where(contact & above, 0.1 + 0.1 * action_z, torch.zeros_like(action_z))
    r_up = torch.where(contact & (obj_height > 0.80), torch.full_like(r_up, 0.2), r_up)
    r_bonus = torch.where(
        goal_distance <= 0.05, 1.0 / (1.0 + 10.0 * goal_distance), torch.zeros_like(goal_distance)
    )
    d_pose = 0.6 * pose_dpos_l1 + 0.04 * pose_dangle + 0.1 * pose_dq_l1
    reward = r_goal + r_up + r_bonus
    if stage == "base":
        return reward - 0.5 * d_fingers - 1.0 * d_palm - 0.5 * d_pose
    if stage == "residual1":
        return reward - 0.5 * d_pose
    return reward
