"""MuJoCo backend: geometry-varied Adroit Relocate (brief Sec. 5.1-5.2), the second simulator
behind :class:`papers.resdex.env.GraspBackend`.

Needs ``gymnasium-robotics`` and ``mujoco`` (optional extra). The Relocate ball (geom
``sphere`` of body ``Object``) is swapped for spheres, boxes, cylinders and capsules of other
sizes through ``mujoco.MjSpec`` (edit the geom, ``spec.compile()``, replace the env's
model/data). The base policies read the 39-D env observation (already geometry-unaware: hand
qpos, palm-object, palm-target and object-target vectors); the hyper-policy also reads a
geometry descriptor (geom-type one-hot, size parameters). The reward is the brief's own: the
DAPG dense reward with the reach term's sign as intended (gymnasium-robotics >= 1.2.1 ships it
flipped). PPO from scratch does not solve Relocate in minutes on 2 cores, so this backend is an
end-to-end check (build the variants, two PPO iterations of a base policy and of the
hyper-policy on real physics) and a long optional run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch

GEOM_TYPES = ("sphere", "box", "cylinder", "capsule")
BASE_OBS_DIM = 39
ACTION_DIM = 30
DESCRIPTOR_DIM = len(GEOM_TYPES) + 3  # one-hot type + 3 size parameters


def object_variants(per_type: int, seed: int) -> list[tuple[str, np.ndarray]]:
    """``per_type`` random sizes of each geom type (Sec. 5.2 ranges, in metres)."""
    rng = np.random.default_rng([seed, 77])
    variants = []
    for kind in GEOM_TYPES:
        for _ in range(per_type):
            if kind == "sphere":
                size = np.array([rng.uniform(0.025, 0.045), 0.0, 0.0])
            elif kind == "box":
                size = rng.uniform(0.02, 0.05, size=3)
            else:  # cylinder, capsule: radius, half-length
                size = np.array([rng.uniform(0.02, 0.04), rng.uniform(0.02, 0.05), 0.0])
            variants.append((kind, size))
    return variants


def make_relocate(kind: str, size: np.ndarray, max_episode_steps: int):
    """An ``AdroitHandRelocate-v1`` env whose object geom is ``kind`` with ``size``."""
    import gymnasium_robotics
    import mujoco

    gymnasium.register_envs(gymnasium_robotics)
    env = gymnasium.make("AdroitHandRelocate-v1", max_episode_steps=max_episode_steps)
    inner = env.unwrapped
    spec = mujoco.MjSpec.from_file(inner.fullpath)
    geom = spec.geom("sphere")
    geom.type = getattr(mujoco.mjtGeom, f"mjGEOM_{kind.upper()}")
    geom.size = np.asarray(size, dtype=np.float64)
    model = spec.compile()
    inner.model, inner.data = model, mujoco.MjData(model)
    return env


def relocate_reward(
    palm: np.ndarray, obj: np.ndarray, target: np.ndarray, success_distance: float = 0.1
) -> tuple[float, bool]:
    """DAPG's dense Relocate reward with the reach term's intended sign (its bonuses at 0.1 and
    0.05 from the target); success: the object within ``success_distance`` of the target
    (``env.mujoco_success_distance``, DAPG's 0.1)."""
    goal_distance = float(np.linalg.norm(obj - target))
    reward = -0.1 * float(np.linalg.norm(palm - obj))  # take the hand to the object
    if obj[2] > 0.04:  # lifted
        reward += 1.0 - 0.5 * float(np.linalg.norm(palm - target)) - 0.5 * goal_distance
    if goal_distance < 0.1:
        reward += 10.0
    if goal_distance < 0.05:
        reward += 20.0
    return reward, goal_distance < success_distance


class AdroitRelocateBackend:
    """A batch of geometry-varied Relocate envs (env i plays variant i mod V), torch in/out,
    same-step autoreset, the :class:`~papers.resdex.env.GraspBackend` interface."""

    def __init__(
        self,
        variants: list[tuple[str, np.ndarray]],
        num_envs: int,
        episode_steps: int,
        success_distance: float = 0.1,
    ):
        self.variants = variants
        self.success_distance = success_distance
        self.num_envs = num_envs
        self.episode_steps = episode_steps
        self.envs = [
            make_relocate(*variants[i % len(variants)], episode_steps) for i in range(num_envs)
        ]
        self.base_obs_dim = BASE_OBS_DIM
        self.obs_dim = BASE_OBS_DIM + DESCRIPTOR_DIM
        self.action_dim = ACTION_DIM
        self.descriptor = torch.stack(
            [self._descriptor(*variants[i % len(variants)]) for i in range(num_envs)]
        )
        self.t = np.zeros(num_envs, dtype=np.int64)
        self._obs = torch.zeros(num_envs, self.obs_dim)
        self.last_actions: torch.Tensor | None = None

    @staticmethod
    def _descriptor(kind: str, size: np.ndarray) -> torch.Tensor:
        one_hot = np.eye(len(GEOM_TYPES))[GEOM_TYPES.index(kind)]
        return torch.as_tensor(np.concatenate([one_hot, 10.0 * size]), dtype=torch.float32)

    def _full(self, base: np.ndarray) -> torch.Tensor:
        return torch.cat([torch.as_tensor(base, dtype=torch.float32), self.descriptor], dim=1)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        base = np.stack(
            [
                env.reset(seed=None if seed is None else seed + i)[0]
                for i, env in enumerate(self.envs)
            ]
        )
        self.t[:] = 0
        self._obs = self._full(base)
        return self._obs, {}

    def observe(self) -> torch.Tensor:
        return self._obs

    def state_dict(self) -> dict[str, Any]:
        """Step counters only: a resumed MuJoCo run restarts its episodes (smoke path)."""
        return {"t": torch.as_tensor(self.t)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.reset()

    def step(self, actions: torch.Tensor):
        actions = torch.as_tensor(actions, dtype=torch.float32)
        if actions.shape != (self.num_envs, ACTION_DIM):
            raise ValueError(
                f"AdroitRelocateBackend.step: actions must have shape ({self.num_envs}, "
                f"{ACTION_DIM}), got {tuple(actions.shape)}"
            )
        if not bool(torch.isfinite(actions).all()):
            raise ValueError("AdroitRelocateBackend.step: actions contain NaN or inf")
        clipped = actions.clamp(-1.0, 1.0)  # clipping after the composition
        self.last_actions = clipped
        obs, rewards, successes = [], [], []
        truncated = np.zeros(self.num_envs, dtype=bool)
        final = []
        for i, env in enumerate(self.envs):
            o, _, _, _, _ = env.step(clipped[i].numpy().astype(np.float64))
            inner = env.unwrapped
            reward, success = relocate_reward(
                inner.data.site_xpos[inner.S_grasp_site_id],
                inner.data.xpos[inner.obj_body_id],
                inner.data.site_xpos[inner.target_obj_site_id],
                self.success_distance,
            )
            self.t[i] += 1
            final.append(o)
            if self.t[i] >= self.episode_steps:
                truncated[i] = True
                o, _ = env.reset()
                self.t[i] = 0
            obs.append(o)
            rewards.append(reward)
            successes.append(success)
        self._obs = self._full(np.stack(obs))
        info = {"success": torch.as_tensor(successes), "final_obs": self._full(np.stack(final))}
        truncated_t = torch.as_tensor(truncated)
        return (
            self._obs,
            torch.as_tensor(rewards, dtype=torch.float32),
            torch.zeros_like(truncated_t),
            truncated_t,
            info,
        )


def run_mujoco(cfg, out_dir: Path) -> dict[str, dict[str, list[float]]]:
    """End-to-end check on real physics: a base policy on one variant, then the hyper-policy
    over it on every variant, ``cfg.base.ppo.iterations`` / ``cfg.hyper.iterations`` each."""
    from papers.resdex.model import ActorCritic, HyperPolicy
    from papers.resdex.ppo import train_ppo

    results: dict[str, dict[str, list[float]]] = {"base": {}, "resdex": {}}
    for seed in cfg.seeds:
        torch.manual_seed(seed)
        variants = object_variants(cfg.env.mujoco_objects_per_type, seed)
        b, h = cfg.base.ppo, cfg.hyper
        base_env = AdroitRelocateBackend(
            variants[:1], b.num_envs, cfg.env.episode_steps, cfg.env.mujoco_success_distance
        )
        base = ActorCritic(BASE_OBS_DIM, ACTION_DIM, b.hidden, b.init_std, b.obs_clip)
        train_ppo(
            base, base_env, b, out_dir / "bases" / f"expert0-s{seed}", seed=seed, progress=False
        )
        env = AdroitRelocateBackend(
            variants, h.num_envs, cfg.env.episode_steps, cfg.env.mujoco_success_distance
        )
        hyper = HyperPolicy([base], env.obs_dim, ACTION_DIM, h.hidden, h.init_std, h.obs_clip)
        train_ppo(hyper, env, h, out_dir / "runs" / f"resdex-s{seed}", seed=seed, progress=False)
        for name, agent, e in (("base", base, base_env), ("resdex", hyper, env)):
            obs, _ = e.reset(seed=seed)
            total = 0.0
            with torch.no_grad():
                for _ in range(cfg.env.episode_steps):
                    obs, reward, *_ = e.step(agent.to_action(obs, agent.mean(obs)))
                    total += float(reward.mean())
            results[name].setdefault("episode_return", []).append(total)
    return results
