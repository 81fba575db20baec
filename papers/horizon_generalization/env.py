r"""The didactic grid world of the horizon-generalization toy (brief Sec. 5, "Environment").

A deterministic 4-action grid. :func:`make_grid` builds the layout once as a :class:`Grid`:
the free cells, their state indices (row-major), the transition table ``next_state[s, a]``
(bumping a wall or the border leaves the agent where it is) and the all-pairs shortest-path
distances used only for evaluation. :class:`GridWorldEnv` wraps a grid as a goal-conditioned
``gymnasium.Env`` with one-hot observations and goals; training in this toy works offline from
:func:`papers.horizon_generalization.data.random_trajectories` and evaluation uses the
vectorised table directly, so the env is the interface for interactive use and checks.

Layouts: ``"open"``, an ``size`` x ``size`` room (121 states for 11); ``"wall"``, the same room
with a wall of ``wall_length`` cells hanging from the top edge at the middle column (113
states), so goals on the other side of the wall need a detour.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium
import numpy as np
from gymnasium import spaces

from papers.horizon_generalization.config import GRID_LAYOUTS

ACTIONS = ("up", "down", "left", "right")
# (row, column) change of each action, in the order of ACTIONS.
DELTAS = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)], dtype=np.int64)


@dataclass
class Grid:
    """A grid layout with its transition table and shortest-path distances.

    Attributes:
        layout: the layout name.
        free: (H, W) bool, True on free cells.
        cells: (S, 2) int, the (row, col) of each state index; states are the free cells in
            row-major order.
        index: (H, W) int, the state index of each cell, -1 on walls.
        next_state: (S, 4) int, the deterministic successor of each (state, action).
        distances: (S, S) int, ``distances[s, g]`` = fewest steps from s to g (BFS); for
            evaluation only, never for training.
    """

    layout: str
    free: np.ndarray
    cells: np.ndarray
    index: np.ndarray
    next_state: np.ndarray
    distances: np.ndarray

    @property
    def n_states(self) -> int:
        return len(self.cells)

    @property
    def n_actions(self) -> int:
        return len(ACTIONS)


def transition_table(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cells, index, next_state)`` of a free-cell mask; blocked moves stay in place."""
    height, width = free.shape
    cells = np.argwhere(free)  # row-major order
    index = np.full(free.shape, -1, dtype=np.int64)
    index[cells[:, 0], cells[:, 1]] = np.arange(len(cells))
    target = cells[:, None, :] + DELTAS[None, :, :]  # (S, 4, 2)
    rows, cols = target[..., 0], target[..., 1]
    inside = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
    moved = np.where(inside, index[rows.clip(0, height - 1), cols.clip(0, width - 1)], -1)
    stay = np.broadcast_to(np.arange(len(cells))[:, None], moved.shape)
    next_state = np.where(moved >= 0, moved, stay)
    return cells, index, next_state


def bfs_distances(next_state: np.ndarray) -> np.ndarray:
    """All-pairs shortest-path step counts of a deterministic transition table.

    Breadth-first search from every source at once: the frontier of all sources is a boolean
    (S, S) matrix advanced by one boolean matrix product per step (about 20 products of
    121 x 121 for the toy).

    Args:
        next_state: (S, A) successor indices.

    Returns:
        (S, S) int, ``D[s, g]`` = fewest steps from s to g; -1 where g is unreachable from s
        (never for the built-in layouts).
    """
    n_states = next_state.shape[0]
    adjacency = np.zeros((n_states, n_states), dtype=np.float32)
    adjacency[np.repeat(np.arange(n_states), next_state.shape[1]), next_state.ravel()] = 1.0
    distances = np.full((n_states, n_states), -1, dtype=np.int64)
    reached = np.eye(n_states, dtype=bool)
    distances[reached] = 0
    frontier = reached.copy()
    step = 0
    while frontier.any():
        step += 1
        frontier = ((frontier.astype(np.float32) @ adjacency) > 0) & ~reached
        distances[frontier] = step
        reached |= frontier
    return distances


def make_grid(layout: str, size: int = 11, wall_length: int = 8) -> Grid:
    """Build the ``"open"`` or ``"wall"`` layout of a ``size`` x ``size`` room.

    The wall occupies rows ``0 .. wall_length - 1`` of column ``size // 2``.
    """
    if layout not in GRID_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {GRID_LAYOUTS}")
    if size < 2:
        raise ValueError(f"size must be at least 2, got {size}")
    free = np.ones((size, size), dtype=bool)
    if layout == "wall":
        if not 0 < wall_length < size:
            raise ValueError(f"wall_length must be in 1..{size - 1}, got {wall_length}")
        free[:wall_length, size // 2] = False
    cells, index, next_state = transition_table(free)
    return Grid(
        layout=layout,
        free=free,
        cells=cells,
        index=index,
        next_state=next_state,
        distances=bfs_distances(next_state),
    )


class GridWorldEnv(gymnasium.Env):
    """Goal-conditioned grid world with one-hot states and goals.

    ``reset`` draws a start and a different goal uniformly (``options={"start": i,
    "goal": j}`` fixes either); ``step`` gives reward 0 and terminates on reaching the goal,
    reward -1 otherwise. ``info`` holds the state and goal indices and their BFS distance.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        layout: str = "open",
        size: int = 11,
        wall_length: int = 8,
        render_mode: str | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.grid = make_grid(layout, size=size, wall_length=wall_length)
        self.render_mode = render_mode
        n_states = self.grid.n_states
        one_hot = spaces.Box(0.0, 1.0, shape=(n_states,), dtype=np.float32)
        self.observation_space = spaces.Dict(
            {"observation": one_hot, "achieved_goal": one_hot, "desired_goal": one_hot}
        )
        self.action_space = spaces.Discrete(self.grid.n_actions)
        self.state = 0
        self.goal = 1

    def _one_hot(self, state: int) -> np.ndarray:
        vector = np.zeros(self.grid.n_states, dtype=np.float32)
        vector[state] = 1.0
        return vector

    def _obs(self) -> dict[str, np.ndarray]:
        state = self._one_hot(self.state)
        return {
            "observation": state,
            "achieved_goal": state.copy(),
            "desired_goal": self._one_hot(self.goal),
        }

    def _info(self) -> dict[str, int]:
        return {
            "state": int(self.state),
            "goal": int(self.goal),
            "distance": int(self.grid.distances[self.state, self.goal]),
        }

    def _check_index(self, name: str, value) -> int:
        value = int(value)
        if not 0 <= value < self.grid.n_states:
            raise ValueError(f"{name} must be a state index in 0..{self.grid.n_states - 1}")
        return value

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        n_states = self.grid.n_states
        start = options.get("start")
        goal = options.get("goal")
        if start is not None:
            start = self._check_index("start", start)
        if goal is not None:
            goal = self._check_index("goal", goal)
        if start is None:
            # Uniform over the cells other than a fixed goal (any cell if the goal is free).
            start = int(self.np_random.integers(n_states - (goal is not None)))
            if goal is not None and start >= goal:
                start += 1
        if goal is None:
            goal = int(self.np_random.integers(n_states - 1))
            goal += goal >= start
        if start == goal:
            raise ValueError("start and goal must differ")
        self.state, self.goal = start, goal
        return self._obs(), self._info()

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"invalid action {action!r}")
        self.state = int(self.grid.next_state[self.state, int(action)])
        reached = self.state == self.goal
        return self._obs(), 0.0 if reached else -1.0, reached, False, self._info()

    def compute_reward(self, achieved_goal, desired_goal, info=None) -> np.ndarray:
        """Vectorised reward of (batches of) one-hot achieved and desired goals."""
        same = np.all(np.asarray(achieved_goal) == np.asarray(desired_goal), axis=-1)
        return np.where(same, 0.0, -1.0)

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        scale = 8
        image = np.where(self.grid.free[..., None], 255, 40).astype(np.uint8)
        image = np.repeat(image, 3, axis=-1)
        for state, color in ((self.goal, (40, 170, 60)), (self.state, (40, 80, 220))):
            row, col = self.grid.cells[state]
            image[row, col] = color
        return np.kron(image, np.ones((scale, scale, 1), dtype=np.uint8))


for _name, _layout in (("HorizonGrid-Open-v0", "open"), ("HorizonGrid-Wall-v0", "wall")):
    if _name not in gymnasium.registry:
        gymnasium.register(
            id=_name,
            entry_point="papers.horizon_generalization.env:GridWorldEnv",
            kwargs={"layout": _layout},
            max_episode_steps=100,
        )
