"""The PPO loop (CleanRL style, one file top to bottom) used for base policies, PPO from scratch
and the ResDex hyper-policy (Sec. 3.4).

An agent exposes ``distribution(obs)`` (the Gaussian over its raw output ``u``), ``value(obs)``
and ``to_action(obs, u)`` (identity for a plain policy, the residual-MoE composition for the
hyper-policy), so log-probabilities and ratios are always on ``u`` and never on the action the
env receives. The loop checkpoints (model, optimiser, learning rate, env state, generator,
history) every ``checkpoint_every`` iterations and resumes from there exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from papers.resdex.config import PPOConfig
from papers.resdex.method import (
    adaptive_lr,
    clipped_surrogate_loss,
    clipped_value_loss,
    gae,
    gaussian_kl,
)
from shared import checkpoint
from shared.logger import MetricsLogger
from shared.loop import param_fingerprints

CHECKPOINT_NAME = "checkpoint.pt"


def train_ppo(
    agent: torch.nn.Module,
    env,
    ppo: PPOConfig,
    run_dir: Path,
    *,
    seed: int,
    evaluate: Callable[[torch.nn.Module, int], dict[str, float]] | None = None,
    eval_iterations: set[int] = frozenset(),
    logger: MetricsLogger | None = None,
    tags: dict[str, Any] | None = None,
    progress: bool = True,
    desc: str = "ppo",
) -> list[dict[str, float]]:
    """Train ``agent`` on ``env`` for ``ppo.iterations`` iterations; resume if a checkpoint exists.

    Returns:
        The evaluation history: one dict per iteration in ``eval_iterations`` (with its
        ``step``), identical for a resumed and an uninterrupted run.
    """
    tags = tags or {}
    run_dir = Path(run_dir)
    path = run_dir / CHECKPOINT_NAME
    trainable = [p for p in agent.parameters() if p.requires_grad]
    # foreach: one fused call per Adam step over all tensors instead of a Python loop over them
    # (the same elementwise update, so the same numbers; PyTorch picks it by default on GPUs only)
    optimizer = torch.optim.Adam(trainable, lr=ppo.lr, foreach=True)
    generator = torch.Generator().manual_seed(seed)  # action noise and minibatch order
    lr = ppo.lr
    if path.exists():
        state = checkpoint.load_checkpoint(path)
        agent.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        env.load_state_dict(state["env"])
        start, lr, history = state["step"], state["lr"], state["history"]
        fingerprints = state["initial_fingerprints"]
        obs = env.observe()
        if logger is not None:
            logger.drop_after(start, **tags)
    else:
        start, history = 0, []
        fingerprints = param_fingerprints(agent)
        obs, _ = env.reset(seed=seed)
        if logger is not None:  # records of an attempt killed before its first checkpoint
            logger.drop_after(-1, **tags)

    def save(iteration: int) -> None:
        checkpoint.save_checkpoint(
            {
                "step": iteration,
                "model": agent.state_dict(),
                "optimizer": optimizer.state_dict(),
                "generator": generator.get_state(),
                "env": env.state_dict(),
                "lr": lr,
                "history": history,
                "initial_fingerprints": fingerprints,
            },
            path,
        )

    n, steps = env.num_envs, ppo.nsteps
    batch = n * steps
    minibatch = batch // ppo.minibatches
    if minibatch < 1:
        raise ValueError(f"{ppo.minibatches} minibatches for a batch of {batch} transitions")
    bar = tqdm(
        range(start + 1, ppo.iterations + 1),
        initial=start,
        total=ppo.iterations,
        desc=desc,
        leave=False,
        disable=not progress,
    )
    for iteration in bar:
        # ---------------------------------------------------------------- rollout
        buffers: dict[str, list[torch.Tensor]] = {
            k: [] for k in ("obs", "u", "log_prob", "value", "mean", "reward", "done")
        }
        successes, finished = 0.0, 0
        agent.eval()
        with torch.no_grad():
            for _ in range(steps):
                dist = agent.distribution(obs)
                noise = torch.randn(dist.mean.shape, generator=generator)
                u = dist.mean + dist.stddev * noise  # sample of the Gaussian over u
                next_obs, reward, terminated, truncated, info = env.step(agent.to_action(obs, u))
                done = terminated | truncated
                for k, v in (
                    ("obs", obs),
                    ("u", u),
                    ("log_prob", dist.log_prob(u).sum(-1)),  # log-prob on u, not on a
                    ("value", agent.value(obs)),
                    ("mean", dist.mean),
                    ("reward", reward),
                    ("done", done),
                ):
                    buffers[k].append(v)
                successes += float(info["success"][done].float().sum())
                finished += int(done.sum())
                obs = next_obs
            last_value = agent.value(obs)
        data = {k: torch.stack(v) for k, v in buffers.items()}  # (T, N, ...)
        advantages, returns = gae(
            data["reward"], data["value"], data["done"], last_value, ppo.gamma, ppo.lam
        )
        flat = {k: v.reshape(batch, *v.shape[2:]) for k, v in data.items()}
        flat["advantage"], flat["return"] = advantages.reshape(batch), returns.reshape(batch)
        if ppo.normalize_advantages:  # over the whole batch, as the official rollout storage
            adv = flat["advantage"]
            flat["advantage"] = (adv - adv.mean()) / (adv.std() + 1e-8)
        old_std = agent.distribution(flat["obs"][:1]).stddev.detach()[0]

        # ---------------------------------------------------------------- update
        agent.train()
        stats: dict[str, float] = {}
        for _ in range(ppo.epochs):
            order = torch.randperm(batch, generator=generator)
            for i in range(ppo.minibatches):
                idx = order[i * minibatch : (i + 1) * minibatch]
                obs_mb = flat["obs"][idx]
                dist = agent.distribution(obs_mb)
                log_prob = dist.log_prob(flat["u"][idx]).sum(-1)
                if ppo.schedule == "adaptive":
                    kl = gaussian_kl(flat["mean"][idx], old_std, dist.mean, dist.stddev)
                    lr = adaptive_lr(
                        lr, kl.item(), ppo.desired_kl, ppo.lr_factor, ppo.lr_min, ppo.lr_max
                    )
                    for group in optimizer.param_groups:
                        group["lr"] = lr
                policy_loss = clipped_surrogate_loss(
                    log_prob, flat["log_prob"][idx], flat["advantage"][idx], ppo.clip
                )
                value_loss = clipped_value_loss(
                    agent.value(obs_mb),
                    flat["value"][idx],
                    flat["return"][idx],
                    ppo.value_clip,
                )
                loss = policy_loss + ppo.value_coef * value_loss
                if ppo.entropy_coef:  # the toy's 0 adds exactly nothing, to loss or gradients
                    loss = loss - ppo.entropy_coef * dist.entropy().sum(-1).mean()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(trainable, ppo.max_grad_norm)
                optimizer.step()
                stats = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item()}
        if not all(torch.isfinite(p).all() for p in trainable):
            raise FloatingPointError(f"non-finite parameters after iteration {iteration}")

        record = {
            **tags,
            "step": iteration,
            "rollout_success": successes / max(finished, 1),
            "mean_reward": float(data["reward"].mean()),
            "lr": lr,
            **stats,
        }
        if logger is not None:
            logger.log(record)
        bar.set_postfix(success=f"{record['rollout_success']:.2f}")
        if evaluate is not None and iteration in eval_iterations:
            history.append({"step": iteration, **evaluate(agent, iteration)})
            if logger is not None:
                logger.log({**tags, **history[-1]}, console=True)
        if iteration % ppo.checkpoint_every == 0 or iteration == ppo.iterations:
            save(iteration)
    bar.close()
    return history
