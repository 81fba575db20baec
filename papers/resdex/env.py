r"""``KinematicDexGrasp``: the acceptance environment of the ResDex toy (brief Sec. 5.3).

A kinematic caricature of dexterous grasping that keeps ResDex's structure: every object has a
hidden, geometry-dependent grasp configuration (finger synergies ``q*`` and a palm offset
``d*``) that a *geometry-blind* policy can only learn for one object at a time.

* State per env: palm position ``p`` (3), finger synergies ``q`` in [0, 1]^4, object position
  ``o`` (3), the ``held`` flag, the step counter and whether the lift bonus was paid.
* Object: grasp style ``k`` (0 pinch, 1 power, 2 wide, 3 hook) and size ``s``;
  ``q*(k, s) = clip(Q[k] (1.25 - 0.25 s), 0, 1)``, ``d*(k, s) = s D[k]``.
* Action in [-1, 1]^7 (clipped by the env, as Isaac Gym's wrapper does): ``p += 0.03 a[0:3]``
  (z >= 0), ``q = clip(q + 0.1 a[3:7], 0, 1)``.
* Grasp physics, on the pre-step state: latch ``held`` when ``||p - (o + d*)|| < 0.06`` and
  ``max|q - q*| < 0.2``; release when ``max|q - q*| >= 0.3``; while held ``o = p - d*`` after
  the move; a released object stays where it was dropped.
* Exactly 40 steps, no early termination (terminating at success makes "hold but never lift"
  the better return under gamma = 0.96); success = held and ``o_z >= 0.15`` at the last step.

:class:`KinematicDexGrasp` is the torch-vectorised environment (gymnasium's vector API with
same-step autoreset: the last observation of an episode is in ``info["final_obs"]``).
:class:`KinematicDexGraspEnv` is its single-env view (numpy, passes gymnasium's env checker),
registered as ``KinematicDexGrasp-v0`` with the vector env as its ``vector_entry_point``.
Both implement :class:`GraspBackend`, the interface the trainer needs from any simulator
(the MuJoCo Adroit backend in :mod:`papers.resdex.mujoco_env` is the second one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from papers.resdex.data import ObjectPool, make_objects

# Brief Sec. 5.3: synergy targets and palm offsets of the four grasp styles (size 1.0).
Q_STYLE = torch.tensor(
    [[0.9, 0.9, 0.1, 0.1], [0.7, 0.7, 0.7, 0.7], [0.3, 0.5, 0.5, 0.5], [0.8, 0.4, 0.4, 0.8]]
)
D_STYLE = torch.tensor([[0.0, 0.0, 0.02], [0.0, 0.0, 0.05], [0.0, 0.0, 0.08], [0.06, 0.0, 0.04]])
ACTION_DIM = 7
BASE_OBS_DIM = 12  # (p, q, o - p, 0.2 - o_z, held): geometry-unaware


@dataclass(frozen=True)
class DynamicsParams:
    """Every constant of the toy's kinematics, reward and success rule (brief Sec. 5.3)."""

    episode_steps: int = 40
    palm_start: tuple[float, float, float] = (0.0, 0.0, 0.3)
    palm_start_noise: float = 0.05  # p0 = palm_start + U(-noise, noise)^3
    object_xy_range: float = 0.3  # o_xy ~ U(-range, range), o_z = 0
    palm_step: float = 0.03  # p += palm_step * a[0:3]
    finger_step: float = 0.1  # q += finger_step * a[3:7]
    latch_distance: float = 0.06
    latch_synergy: float = 0.2
    release_synergy: float = 0.3
    success_height: float = 0.15
    reward_distance_cap: float = 0.5
    reward_synergy_weight: float = 0.5
    reward_hold: float = 0.5
    reward_height_weight: float = 2.0
    reward_height_cap: float = 0.2
    reward_lift_bonus: float = 5.0
    height_target: float = 0.2  # the base observation's "0.2 - o_z" (goal-minus-object)


def grasp_targets(style: torch.Tensor, size: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``q*(k, s) = clip(Q[k] (1.25 - 0.25 s), 0, 1)`` and ``d*(k, s) = s D[k]`` (Sec. 5.3)."""
    q_star = (Q_STYLE[style] * (1.25 - 0.25 * size)[:, None]).clamp(0.0, 1.0)  # (N, 4)
    d_star = size[:, None] * D_STYLE[style]  # (N, 3)
    return q_star, d_star


class GraspBackend(Protocol):
    """What the ResDex trainer needs from a simulator (Kinematic toy, MuJoCo, Isaac Gym).

    A batch of ``num_envs`` episodes with torch observations: ``obs[:, :base_obs_dim]`` is the
    geometry-unaware part the base policies read, the rest (object pose, geometry feature) is
    for the hyper-policy; ``step`` clips actions to [-1, 1] and autoresets on the same step.
    """

    num_envs: int
    obs_dim: int
    base_obs_dim: int
    action_dim: int

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple: ...

    def step(self, actions: torch.Tensor) -> tuple: ...


class KinematicDexGrasp(VectorEnv):
    """Torch-vectorised ``KinematicDexGrasp`` (brief Sec. 5.3), gymnasium's vector API.

    Args:
        pool: the objects; each episode draws one uniformly (``object_mode="random"``) or env
            ``i`` takes object ``i mod M`` (``"cycle"``, for evaluation).
        num_envs: parallel episodes.
        params: the kinematics and reward constants.
        object_mode: ``random`` | ``cycle``.
        seed: seed of the env's own torch generator (reset may reseed it).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        pool: ObjectPool,
        num_envs: int,
        params: DynamicsParams | None = None,
        object_mode: str = "random",
        seed: int = 0,
    ):
        if object_mode not in ("random", "cycle"):
            raise ValueError(f"object_mode must be random or cycle, got {object_mode!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.pool = pool
        self.num_envs = num_envs
        self.params = params or DynamicsParams()
        self.object_mode = object_mode
        self.feature_dim = pool.feature.shape[1]
        self.base_obs_dim = BASE_OBS_DIM
        self.obs_dim = BASE_OBS_DIM + self.feature_dim
        self.action_dim = ACTION_DIM
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (self.obs_dim,), np.float32)
        self.single_action_space = spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
        self.observation_space = spaces.Box(-np.inf, np.inf, (num_envs, self.obs_dim), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (num_envs, ACTION_DIM), np.float32)
        self.generator = torch.Generator().manual_seed(seed)
        n = num_envs
        self.p = torch.zeros(n, 3)
        self.q = torch.zeros(n, 4)
        self.o = torch.zeros(n, 3)
        self.held = torch.zeros(n, dtype=torch.bool)
        self.bonus_paid = torch.zeros(n, dtype=torch.bool)
        self.t = torch.zeros(n, dtype=torch.long)
        self.object_index = torch.zeros(n, dtype=torch.long)
        self.q_star = torch.zeros(n, 4)
        self.d_star = torch.zeros(n, 3)
        self._episodes_started = torch.zeros(n, dtype=torch.long)

    # ------------------------------------------------------------------ state
    STATE_KEYS = ("p", "q", "o", "held", "bonus_paid", "t", "object_index", "_episodes_started")

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where the env stands (for checkpoints)."""
        state = {k: getattr(self, k).clone() for k in self.STATE_KEYS}
        state["generator"] = self.generator.get_state()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k in self.STATE_KEYS:
            setattr(self, k, state[k].clone())
        self.generator.set_state(state["generator"])
        self._refresh_targets()

    def _refresh_targets(self) -> None:
        self.q_star, self.d_star = grasp_targets(
            self.pool.style[self.object_index], self.pool.size[self.object_index]
        )

    # ------------------------------------------------------------------ API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.generator.manual_seed(int(seed))
        self._episodes_started.zero_()
        self._reset_envs(torch.ones(self.num_envs, dtype=torch.bool))
        return self.observe(), {}

    def _uniform(self, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(shape, generator=self.generator)

    def _reset_envs(self, mask: torch.Tensor) -> None:
        n = int(mask.sum())
        if n == 0:
            return
        pr = self.params
        idx = mask.nonzero().squeeze(1)
        noise = self._uniform((n, 3), -pr.palm_start_noise, pr.palm_start_noise)
        self.p[idx] = torch.tensor(pr.palm_start) + noise
        self.q[idx] = 0.0
        r = pr.object_xy_range
        self.o[idx] = torch.cat([self._uniform((n, 2), -r, r), torch.zeros(n, 1)], dim=1)
        self.held[idx] = False
        self.bonus_paid[idx] = False
        self.t[idx] = 0
        if self.object_mode == "random":
            self.object_index[idx] = torch.randint(len(self.pool), (n,), generator=self.generator)
        else:  # env i, episode e -> object (i + e * num_envs) mod M: every object in turn
            episode = self._episodes_started[idx]
            self.object_index[idx] = (idx + episode * self.num_envs) % len(self.pool)
        self._episodes_started[idx] += 1
        self._refresh_targets()

    def observe(self) -> torch.Tensor:
        """Full observation (N, 12 + F): the base part, then ``0.1 * feature`` of the object.

        The pool's features already carry the brief's ``0.1`` factor (see
        :func:`papers.resdex.data.make_objects`).
        """
        return torch.cat([self.base_observation(), self.pool.feature[self.object_index]], dim=1)

    def base_observation(self) -> torch.Tensor:
        """Geometry-unaware observation (N, 12) = ``(p, q, o - p, 0.2 - o_z, held)``."""
        height_to_go = self.params.height_target - self.o[:, 2:3]
        return torch.cat(
            [self.p, self.q, self.o - self.p, height_to_go, self.held.float()[:, None]], dim=1
        )

    def validate_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Reject an action batch of the wrong shape or with NaN before touching the state."""
        actions = torch.as_tensor(actions, dtype=torch.float32)
        if actions.shape != (self.num_envs, ACTION_DIM):
            raise ValueError(
                f"KinematicDexGrasp.step: actions must have shape ({self.num_envs}, "
                f"{ACTION_DIM}), got {tuple(actions.shape)}"
            )
        if not bool(torch.isfinite(actions).all()):
            raise ValueError("KinematicDexGrasp.step: actions contain NaN or inf")
        return actions

    def step(self, actions: torch.Tensor):
        """One step of every env; returns ``obs, reward, terminated, truncated, info``.

        ``terminated`` is always False (no early termination); ``truncated`` marks the 40th
        step, where the env resets on the same step and ``info`` carries ``final_obs``,
        ``success`` (per env, meaningful where truncated) and ``object_index`` of the
        finished episode.
        """
        a = self.validate_actions(actions).clamp(-1.0, 1.0)  # the env clips, as Isaac's wrapper
        pr = self.params
        # Grasp physics on the pre-step state.
        distance = (self.p - (self.o + self.d_star)).norm(dim=1)
        synergy_error = (self.q - self.q_star).abs().amax(dim=1)
        latch = (distance < pr.latch_distance) & (synergy_error < pr.latch_synergy)
        held = (self.held | latch) & (synergy_error < pr.release_synergy)
        # Move.
        p = self.p + pr.palm_step * a[:, :3]
        p[:, 2] = p[:, 2].clamp(min=0.0)
        q = (self.q + pr.finger_step * a[:, 3:]).clamp(0.0, 1.0)
        o = torch.where(held[:, None], p - self.d_star, self.o)  # carried, or left where dropped
        self.p, self.q, self.o, self.held = p, q, o, held
        self.t += 1
        # Reward on the post-step state.
        distance = (self.p - (self.o + self.d_star)).norm(dim=1)
        synergy_error = (self.q - self.q_star).abs().amax(dim=1)
        height = self.o[:, 2]
        lifted = held & (height >= pr.success_height)
        first_lift = lifted & ~self.bonus_paid
        self.bonus_paid |= lifted
        reward = (
            -distance.clamp(max=pr.reward_distance_cap)
            - pr.reward_synergy_weight * synergy_error
            + held.float()
            * (pr.reward_hold + pr.reward_height_weight * height.clamp(max=pr.reward_height_cap))
            + pr.reward_lift_bonus * first_lift.float()
        )
        truncated = self.t >= pr.episode_steps
        terminated = torch.zeros_like(truncated)
        info: dict[str, Any] = {
            "success": lifted.clone(),
            "object_index": self.object_index.clone(),
        }
        if bool(truncated.any()):
            info["final_obs"] = self.observe()
            self._reset_envs(truncated)
        return self.observe(), reward, terminated, truncated, info

    def scripted_actions(self) -> torch.Tensor:
        """The brief's scripted controller (a unit test of the env): move the palm to
        ``o + d*`` while shaping ``q = q*``, then lift once held."""
        pr = self.params
        target = self.o + self.d_star
        lift = self.held[:, None]
        palm_goal = torch.where(lift, target + torch.tensor([0.0, 0.0, 0.3]), target)
        palm = ((palm_goal - self.p) / pr.palm_step).clamp(-1.0, 1.0)
        fingers = ((self.q_star - self.q) / pr.finger_step).clamp(-1.0, 1.0)
        return torch.cat([palm, fingers], dim=1)


class KinematicDexGraspEnv(gymnasium.Env):
    """Single-env view of :class:`KinematicDexGrasp` (numpy float32, gymnasium's Env API).

    Registered as ``KinematicDexGrasp-v0``; ``gymnasium.make_vec("KinematicDexGrasp-v0",
    num_envs=N, vectorization_mode="vector_entry_point")`` builds the torch-vectorised env.
    """

    metadata = {"render_modes": []}

    def __init__(self, pool: ObjectPool | None = None, params: DynamicsParams | None = None):
        if pool is None:
            from papers.resdex.data import make_objects

            pool = make_objects(seed=0).train
        self.vec = KinematicDexGrasp(pool, num_envs=1, params=params)
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        env_seed = int(self.np_random.integers(2**62))
        obs, _ = self.vec.reset(seed=env_seed)
        return obs[0].numpy(), {}

    def step(self, action):
        action = np.asarray(action, dtype=np.float32)
        if action.shape != (ACTION_DIM,):
            raise ValueError(
                f"KinematicDexGraspEnv.step: action must have shape ({ACTION_DIM},), "
                f"got {action.shape}"
            )
        obs, reward, terminated, truncated, info = self.vec.step(torch.from_numpy(action)[None])
        if bool(truncated[0]):
            obs = info["final_obs"]  # the single-env view does not autoreset
        return (
            obs[0].numpy(),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            {"success": bool(info["success"][0])},
        )


def _make_vector(num_envs: int = 1, pool: ObjectPool | None = None, **kwargs) -> KinematicDexGrasp:
    if pool is None:
        pool = make_objects(seed=0).train
    return KinematicDexGrasp(pool, num_envs, **kwargs)


ENV_ID = "KinematicDexGrasp-v0"
if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="papers.resdex.env:KinematicDexGraspEnv",
        vector_entry_point="papers.resdex.env:_make_vector",
    )
