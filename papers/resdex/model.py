"""Networks: the actor-critic MLP used for base policies, PPO from scratch and the hyper-policy
(official ``algorithms/rl/residual/module.py``, re-written), and the hyper-policy itself.

Orthogonal initialisation (gain sqrt 2 on hidden layers, 0.01 on the actor output, 1 on the
critic output), separate actor and critic MLPs with ELU, one state-independent log-std per
output dimension (Sec. 3.4).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.distributions import Normal

from papers.resdex.method import compose_action


def mlp(in_dim: int, hidden: list[int], out_dim: int, out_gain: float) -> nn.Sequential:
    """ELU MLP with orthogonal weights (gain sqrt 2; output layer ``out_gain``), zero biases."""
    layers: list[nn.Module] = []
    dims = [in_dim, *hidden]
    for d_in, d_out in zip(dims[:-1], dims[1:], strict=True):
        layers += [nn.Linear(d_in, d_out), nn.ELU()]
    layers.append(nn.Linear(dims[-1], out_dim))
    for layer in layers:
        if isinstance(layer, nn.Linear):
            gain = out_gain if layer is layers[-1] else math.sqrt(2)
            nn.init.orthogonal_(layer.weight, gain=gain)
            nn.init.zeros_(layer.bias)
    return nn.Sequential(*layers)


class ActorCritic(nn.Module):
    """Gaussian policy over ``out_dim`` raw outputs ``u`` and a value function.

    Args:
        obs_dim: observation entries read (``obs[:, :obs_dim]``).
        out_dim: dimensions of the Gaussian (actions, or logits + residual).
        hidden: MLP widths (both actor and critic).
        init_std: initial std of *every* output dimension (Sec. 3.5).
        obs_clip: observations are clipped to [-obs_clip, obs_clip] (official: 5).
    """

    def __init__(
        self, obs_dim: int, out_dim: int, hidden: list[int], init_std: float, obs_clip: float
    ):
        super().__init__()
        self.obs_dim, self.out_dim, self.obs_clip = obs_dim, out_dim, obs_clip
        self.actor = mlp(obs_dim, hidden, out_dim, out_gain=0.01)
        self.critic = mlp(obs_dim, hidden, 1, out_gain=1.0)
        self.log_std = nn.Parameter(torch.full((out_dim,), math.log(init_std)))

    def _input(self, obs: torch.Tensor) -> torch.Tensor:
        return obs[:, : self.obs_dim].clamp(-self.obs_clip, self.obs_clip)

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        """Deterministic action mean (N, out_dim)."""
        return self.actor(self._input(obs))

    def distribution(self, obs: torch.Tensor) -> Normal:
        mean = self.mean(obs)
        # No argument validation: the std is exp(log_std) > 0 by construction, and checking the
        # mean (and every sample in log_prob) for NaN costs a pass per call in every PPO step.
        return Normal(mean, self.log_std.exp().expand_as(mean), validate_args=False)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self._input(obs)).squeeze(-1)  # (N,)

    def to_action(self, obs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """A plain policy acts with its raw output (the env clips)."""
        return u


def _same_shape(bases: nn.ModuleList) -> bool:
    """Whether the experts read the same observation slice through the same layer shapes."""
    first = bases[0]
    return all(
        base.obs_dim == first.obs_dim
        and base.obs_clip == first.obs_clip
        and [p.shape for p in base.actor.parameters()]
        == [p.shape for p in first.actor.parameters()]
        for base in bases
    )


class HyperPolicy(nn.Module):
    """ResDex's hyper-policy (Sec. 3.3): a PPO Gaussian over ``u = (l_1..l_K, r)`` composed with
    the deterministic means of K frozen, geometry-blind base policies.

    ``a = sum_i softmax(l)_i mu_i(obs[:, :base_obs_dim]) + r`` (the env clips ``a``).
    Log-probabilities and PPO ratios are taken on ``u``, never on ``a``.
    """

    def __init__(
        self,
        bases: list[ActorCritic],
        obs_dim: int,
        action_dim: int,
        hidden: list[int],
        init_std: float,
        obs_clip: float,
    ):
        super().__init__()
        if not bases:
            raise ValueError("HyperPolicy needs at least one base policy")
        self.k = len(bases)
        self.action_dim = action_dim
        self.policy = ActorCritic(obs_dim, self.k + action_dim, hidden, init_std, obs_clip)
        self.bases = nn.ModuleList(bases)
        for p in self.bases.parameters():
            p.requires_grad_(False)  # frozen experts: no gradient, no optimizer state
        self.bases.eval()

    def train(self, mode: bool = True) -> HyperPolicy:
        super().train(mode)
        self.bases.eval()  # experts stay in eval mode
        return self

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy.mean(obs)

    def distribution(self, obs: torch.Tensor) -> Normal:
        return self.policy.distribution(obs)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy.value(obs)

    @torch.no_grad()
    def base_means(self, obs: torch.Tensor) -> torch.Tensor:
        """(N, K, A) deterministic means of the frozen experts; each reads only its own slice
        ``obs[:, :obs_dim_i]`` (the geometry-unaware part)."""
        if not _same_shape(self.bases):
            return torch.stack([base.mean(obs) for base in self.bases], dim=1)
        # The K experts share one architecture: run them as one batched MLP, layer by layer
        # (one baddbmm over the stacked weights instead of K matmuls). Same dot products, so the
        # same numbers as K separate passes (tests/papers/resdex checks it bit for bit); only the
        # per-call overhead of K small MLPs goes (the hyper-policy calls this every env step).
        first = self.bases[0]
        x = first._input(obs).expand(self.k, -1, -1)  # (K, N, obs_dim)
        for i, layer in enumerate(first.actor):
            if isinstance(layer, nn.Linear):
                weight = torch.stack([base.actor[i].weight for base in self.bases])  # (K, o, i)
                bias = torch.stack([base.actor[i].bias for base in self.bases])  # (K, o)
                x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
            else:
                x = layer(x)
        return x.transpose(0, 1)  # (N, K, A)

    def split(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``u`` (N, K + A) -> logits (N, K), residual (N, A)."""
        return u[:, : self.k], u[:, self.k :]

    def to_action(self, obs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        logits, residual = self.split(u)
        return compose_action(logits, residual, self.base_means(obs), clip=False)

    def mixture_weights(self, obs: torch.Tensor) -> torch.Tensor:
        """softmax of the mean logits (N, K), for reporting."""
        return torch.softmax(self.split(self.mean(obs))[0], dim=-1)
