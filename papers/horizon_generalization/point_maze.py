r"""The real rung: horizon generalization in gymnasium-robotics' PointMaze (MuJoCo point mass).

The maze map is read from the pinned ``maps.py`` of gymnasium-robotics 1.4.2 (asset
``point_maze``, :func:`papers.horizon_generalization.data.real_maze_map`) and handed to
``gymnasium.make("PointMaze_<Medium|Large|UMaze>-v3", maze_map=...)`` with no render mode (no
rendering is needed). The env's MuJoCo model (a 0.1 m ball with two slide joints, force
actuators of gear 100, 10 ms Euler steps, box walls of 1 m cells) is then stepped in batches by
``mujoco.rollout`` one env step at a time, with the env's own rule before every step: velocities
clipped to [-5, 5] m/s (``PointEnv._clip_velocity``). Success is the env's: the ball's centre
within 0.45 m of the goal at any env step. Start and goal positions are cell centres plus
uniform noise of +-0.25 m, the env's ``position_noise_range``.

How the critics of the grid toy meet the continuous maze (deviations, each for a reason):

- **Decisions.** The policy picks one of four directions (up, down, left, right) every
  ``action_repeat`` env steps; a fixed velocity controller turns it into the env's force
  action, ``ctrl = clip(gain (v_cmd - v), -1, 1)`` with ``v_cmd = speed * direction``.
  The brief's toy and the paper's greedy policy are ``argmax_a f(s, a, g)`` over a discrete set;
  the controller keeps the ball's momentum from dominating a critic that sees positions only.
- **Observations.** A fixed tile coding: the maze's 1 m cells are cut into
  ``tiles_per_cell``^2 square tiles and the critic sees the one-hot index of the ball's tile
  (and of the goal's tile), the role the one-hot grid state plays in the toy (brief Sec. 5:
  with raw coordinates every critic extrapolates, or none does behind walls, and the
  comparison is uninformative). Velocity is not observed (the controller makes it a function
  of the last decision).
- **Data.** Offline, as the paper's didactic set-up: exploratory trajectories of the uniform
  random policy over the four directions from uniform random positions in free cells, the
  ball at rest; hindsight goals a few decisions ahead (:func:`data.sample_hindsight`), so
  training pairs lie within a cell or two while evaluation goals lie up to the maze's
  diameter away. The real config moves the ball about one tile a decision (2 m/s for 17 env
  steps), as one grid step of the toy moves one state.
- **Distances.** Success bins use the BFS distance between the start and goal *cells* of the
  maze. The tile graph (4-neighbour moves between free tiles) gives the oracle critic
  ``-BFS(T(s, a), g)`` (:func:`papers.horizon_generalization.evaluate.oracle_q`), the far
  optimal-action rate and the learned-planner planning-invariance rate, through the toy's own
  code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from papers.horizon_generalization.config import CUSTOM_MAZE
from papers.horizon_generalization.env import DELTAS, Grid, bfs_distances, transition_table
from papers.horizon_generalization.evaluate import (
    Bins,
    Choose,
    QFn,
    check_bins,
    greedy_actions,
    greedy_choice,
    make_policy,
    planning_invariance,
    scores,
    success_by_bin,
)

# gymnasium-robotics env ids whose default map is the named one (the map itself is passed in).
ENV_IDS = {  # keyed by config.MAZES (a test checks the keys)
    "U_MAZE": "PointMaze_UMaze-v3",
    "MEDIUM_MAZE": "PointMaze_Medium-v3",
    "LARGE_MAZE": "PointMaze_Large-v3",
    "OPEN": "PointMaze_Open-v3",  # no interior wall: the paper's open-arena setting
    # the other maps of maps.py and a user's maze: the env's map is always passed in
    "EMPTY_MAZE": "PointMaze_UMaze-v3",
    "OPEN_DIVERSE_G": "PointMaze_Open_Diverse_G-v3",
    "OPEN_DIVERSE_GR": "PointMaze_Open_Diverse_GR-v3",
    "MEDIUM_MAZE_DIVERSE_G": "PointMaze_Medium_Diverse_G-v3",
    "MEDIUM_MAZE_DIVERSE_GR": "PointMaze_Medium_Diverse_GR-v3",
    "LARGE_MAZE_DIVERSE_G": "PointMaze_Large_Diverse_G-v3",
    "LARGE_MAZE_DIVERSE_GR": "PointMaze_Large_Diverse_GR-v3",
    CUSTOM_MAZE: "PointMaze_Medium-v3",
}
SUCCESS_RADIUS = 0.45  # PointMazeEnv: info["success"] = ||achieved - goal|| <= 0.45
POSITION_NOISE = 0.25  # MazeEnv.position_noise_range: reset / goal noise around a cell centre
MAX_SPEED = 5.0  # PointEnv._clip_velocity
# Data starts anywhere in a free cell: the ball (radius 0.1) stays clear of the 1 m cell's walls.
START_SPREAD = 0.35
# (x, y) velocity direction of each action; row - 1 ("up") is +y, the toy's DELTAS order.
DIRECTIONS = np.stack([DELTAS[:, 1], -DELTAS[:, 0]], axis=1).astype(np.float64)


@dataclass
class PointMaze:
    """A PointMaze map with its MuJoCo model, tile coding and controller settings.

    Attributes:
        name: the map's name in ``maps.py``.
        walls: (H, W) bool, True on wall cells.
        cells: the maze-cell graph (:class:`Grid`; BFS distances bin the evaluation pairs).
        tiles: the tile graph (:class:`Grid`): the critics' states and goals are its indices.
        tiles_per_cell, speed, action_repeat, gain: the decision model (module docstring).
        model: the env's ``mujoco.MjModel``.
    """

    name: str
    walls: np.ndarray
    cells: Grid
    tiles: Grid
    tiles_per_cell: int
    speed: float
    action_repeat: int
    gain: float
    model: object

    @property
    def height(self) -> int:
        return self.walls.shape[0]

    @property
    def width(self) -> int:
        return self.walls.shape[1]

    def _index(self, xy: np.ndarray, per_cell: int, grid: Grid) -> np.ndarray:
        xy = np.asarray(xy, dtype=np.float64)
        col = np.floor((xy[..., 0] + self.width / 2) * per_cell).astype(np.int64)
        row = np.floor((self.height / 2 - xy[..., 1]) * per_cell).astype(np.int64)
        col = col.clip(0, self.width * per_cell - 1)
        row = row.clip(0, self.height * per_cell - 1)
        index = grid.index[row, col]
        if (index < 0).any():
            raise ValueError(f"{self.name}: a position lies inside a wall")
        return index

    def tile_of(self, xy: np.ndarray) -> np.ndarray:
        """Tile index of each (x, y) position (..., 2) -> (...)."""
        return self._index(xy, self.tiles_per_cell, self.tiles)

    def cell_of(self, xy: np.ndarray) -> np.ndarray:
        """Maze-cell index of each (x, y) position (..., 2) -> (...)."""
        return self._index(xy, 1, self.cells)

    def cell_centre(self, cell: np.ndarray) -> np.ndarray:
        """World (x, y) of the centres of cell indices (...) -> (..., 2); scaling 1 m."""
        row, col = self.cells.cells[np.asarray(cell)].T
        return np.stack([col + 0.5 - self.width / 2, self.height / 2 - (row + 0.5)], axis=-1)


def graph(free: np.ndarray, name: str) -> Grid:
    """The 4-neighbour graph of a free mask as a :class:`Grid` (transitions, BFS distances)."""
    cells, index, next_state = transition_table(free)
    return Grid(name, free, cells, index, next_state, bfs_distances(next_state))


@functools.lru_cache(maxsize=4)
def make_point_maze(
    name: str,
    tiles_per_cell: int = 3,
    speed: float = 2.0,
    action_repeat: int = 17,
    gain: float = 1.0,
    rows: tuple[str, ...] | None = None,
) -> PointMaze:
    """Build the env for the map ``name`` of the pinned ``maps.py`` (or, for ``CUSTOM``, the
    user's ``rows``: ``#`` wall, ``.`` free) and its tile coding."""
    import gymnasium
    import gymnasium_robotics

    from papers.horizon_generalization.data import maze_from_rows, real_maze_map

    if name not in ENV_IDS:
        raise ValueError(f"unknown PointMaze map {name!r}; choose one of {sorted(ENV_IDS)}")
    if tiles_per_cell < 1 or action_repeat < 1 or speed <= 0 or gain <= 0:
        raise ValueError("tiles_per_cell, action_repeat, speed and gain must be positive")
    walls = (
        maze_from_rows(list(rows or ()), "maze_rows")
        if name == CUSTOM_MAZE
        else real_maze_map(name)
    )
    gymnasium.register_envs(gymnasium_robotics)
    env = gymnasium.make(ENV_IDS[name], maze_map=walls.astype(int).tolist())
    maze = env.unwrapped.maze
    if (maze.map_length, maze.map_width, maze.maze_size_scaling) != (*walls.shape, 1):
        raise ValueError(f"{name}: the env's maze does not match the map read from maps.py")
    free_tiles = np.kron(~walls, np.ones((tiles_per_cell, tiles_per_cell), dtype=bool))
    result = PointMaze(
        name=name,
        walls=walls,
        cells=graph(~walls, f"{name}-cells"),
        tiles=graph(free_tiles, f"{name}-tiles"),
        tiles_per_cell=tiles_per_cell,
        speed=speed,
        action_repeat=action_repeat,
        gain=gain,
        model=env.unwrapped.model,
    )
    env.close()
    return result


def simulate(
    maze: PointMaze,
    xy: np.ndarray,
    velocity: np.ndarray,
    actions: np.ndarray,
    goals: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One decision: ``action_repeat`` env steps of every ball under its commanded direction.

    Args:
        xy, velocity: (N, 2) positions and velocities; actions: (N,) direction indices;
        goals: (N, 2) goal positions, or None.

    Returns:
        ``(xy, velocity, reached)``: the state after the decision and, per ball, whether it came
        within :data:`SUCCESS_RADIUS` of its goal at any of the env steps (all False without
        goals).
    """
    import mujoco
    from mujoco import rollout

    model = maze.model
    data = mujoco.MjData(model)
    n = len(xy)
    state = np.zeros((n, 5))  # mjSTATE_FULLPHYSICS of this model: time, qpos (2), qvel (2)
    state[:, 1:3] = xy
    state[:, 3:5] = velocity
    command = maze.speed * DIRECTIONS[np.asarray(actions)]
    reached = np.zeros(n, dtype=bool)
    for _ in range(maze.action_repeat):
        state[:, 3:5] = state[:, 3:5].clip(-MAX_SPEED, MAX_SPEED)  # the env, before each step
        control = (maze.gain * (command - state[:, 3:5])).clip(-1.0, 1.0)
        out, _ = rollout.rollout(model, data, state, control[:, None, :], nstep=1)
        state = out[:, 0, :].copy()
        if goals is not None:
            reached |= np.linalg.norm(state[:, 1:3] - goals, axis=1) <= SUCCESS_RADIUS
    return state[:, 1:3], state[:, 3:5], reached


def random_positions(
    maze: PointMaze, cells: np.ndarray, spread: float, rng: np.random.Generator
) -> np.ndarray:
    """Cell centres plus uniform noise in [-spread, spread]^2."""
    return maze.cell_centre(cells) + rng.uniform(-spread, spread, size=(len(cells), 2))


def exploratory_trajectories(
    maze: PointMaze, n_trajectories: int, length: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Roll the uniform random policy over the four directions through the MuJoCo maze.

    Starts are uniform over free cells, uniform inside the cell (:data:`START_SPREAD`), at rest.

    Returns:
        ``states`` (N, length + 1) tile indices at the decision points, ``actions``
        (N, length), ``cells`` (N, length + 1) the maze cells of the same points.
    """
    if n_trajectories < 1 or length < 1:
        raise ValueError("need at least one trajectory of at least one step")
    start = rng.integers(maze.cells.n_states, size=n_trajectories)
    xy = random_positions(maze, start, START_SPREAD, rng)
    velocity = np.zeros_like(xy)
    actions = rng.integers(len(DIRECTIONS), size=(n_trajectories, length))
    states = np.empty((n_trajectories, length + 1), dtype=np.int64)
    cells = np.empty_like(states)
    states[:, 0], cells[:, 0] = maze.tile_of(xy), maze.cell_of(xy)
    for t in range(length):
        xy, velocity, _ = simulate(maze, xy, velocity, actions[:, t])
        states[:, t + 1], cells[:, t + 1] = maze.tile_of(xy), maze.cell_of(xy)
    return states, actions, cells


def maze_rollout(
    q_fn: QFn,
    maze: PointMaze,
    starts: np.ndarray,
    goals: np.ndarray,
    max_steps: int,
    choose: Choose = greedy_choice,
) -> tuple[np.ndarray, np.ndarray]:
    """Rollouts of the policy ``choose`` on ``q_fn(tile(x), tile(goal))`` (greedy by default,
    :func:`papers.horizon_generalization.evaluate.make_policy`) from (N, 2) starts to (N, 2)
    goals.

    Returns:
        ``success`` (N,) bool (goal reached within ``max_steps`` decisions) and ``paths``
        (N, max_steps + 1, 2), the positions at the decision points (the last one repeated
        after success).
    """
    xy = np.asarray(starts, dtype=np.float64).copy()
    goals = np.asarray(goals, dtype=np.float64)
    velocity = np.zeros_like(xy)
    goal_tiles = maze.tile_of(goals)
    done = np.linalg.norm(xy - goals, axis=1) <= SUCCESS_RADIUS
    paths = np.empty((len(xy), max_steps + 1, 2))
    paths[:, 0] = xy
    for t in range(1, max_steps + 1):
        active = np.flatnonzero(~done)
        if len(active):
            values = scores(q_fn, maze.tiles, maze.tile_of(xy[active]), goal_tiles[active])
            actions = choose(values)
            xy[active], velocity[active], reached = simulate(
                maze, xy[active], velocity[active], actions, goals[active]
            )
            done[active[reached]] = True
        paths[:, t] = xy
    return done, paths


def _rate(flags: np.ndarray) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def stuck_rollouts(
    maze: PointMaze, success: np.ndarray, paths: np.ndarray, window: int
) -> np.ndarray:
    """Failed rollouts whose last ``window`` decisions left the ball in one tile (N,) bool: the
    trap of a policy that keeps commanding into a wall (README "Real data")."""
    last = maze.tile_of(paths[:, -(window + 1) :])  # (N, window + 1)
    return ~success & (last == last[:, :1]).all(axis=1)


def evaluate_maze(
    q_fn: QFn,
    maze: PointMaze,
    n_pairs: int,
    seed: int,
    max_steps: int,
    planner_c: int,
    pi_pairs: int,
    *,
    bins: Bins,
    policy: str = "greedy",
    temperature: float = 1.0,
    stuck_window: int = 20,
    compare_greedy: bool = False,
) -> dict:
    """Success by start-goal cell distance, horizon generalization and planning invariance.

    ``n_pairs`` start and goal cells, uniform over ordered pairs of distinct free cells, each
    position noised by :data:`POSITION_NOISE` (``rng(seed)``). Returns the keys of the toy's
    :func:`papers.horizon_generalization.evaluate.evaluate`: ``<bin>_success``, ``n_<bin>``,
    ``success``, ``eta``, ``far_optimal_action_rate`` and ``pi_rate`` / ``pi_rate_strict``
    (on the tile graph, from the start and goal tiles of the far pairs; waypoints at
    ``planner_c`` tile steps), ``success_by_distance`` ({cell distance: rate}).
    """
    check_bins(bins)
    rng = np.random.default_rng(seed)
    n_cells = maze.cells.n_states
    start_cells = rng.integers(n_cells, size=n_pairs)
    goal_cells = rng.integers(n_cells - 1, size=n_pairs)
    goal_cells += goal_cells >= start_cells
    starts = random_positions(maze, start_cells, POSITION_NOISE, rng)
    goals = random_positions(maze, goal_cells, POSITION_NOISE, rng)
    distance = maze.cells.distances[start_cells, goal_cells]
    choose = make_policy(policy, temperature, np.random.default_rng([seed, 1]))
    success, paths = maze_rollout(q_fn, maze, starts, goals, max_steps, choose)

    metrics = success_by_bin(success, distance, bins)

    far = np.flatnonzero((distance >= bins["far"][0]) & (distance <= bins["far"][1]))
    metrics["far_stuck_fraction"] = _rate(stuck_rollouts(maze, success, paths, stuck_window)[far])
    if compare_greedy and policy != "greedy":
        greedy_success, greedy_paths = maze_rollout(q_fn, maze, starts, goals, max_steps)
        for name, value in success_by_bin(greedy_success, distance, bins).items():
            if name.endswith("_success") or name == "eta":
                metrics[f"greedy_{name}"] = value
        stuck = stuck_rollouts(maze, greedy_success, greedy_paths, stuck_window)
        metrics["greedy_far_stuck_fraction"] = _rate(stuck[far])
    tiles = maze.tiles
    if len(far):
        s, g = maze.tile_of(starts[far]), maze.tile_of(goals[far])
        first = greedy_actions(q_fn, tiles, s, g)
        after = tiles.distances[tiles.next_state[s, first], g]
        metrics["far_optimal_action_rate"] = _rate(after == tiles.distances[s, g] - 1)
        pi, pi_strict = planning_invariance(q_fn, tiles, s[:pi_pairs], g[:pi_pairs], c=planner_c)
    else:
        metrics["far_optimal_action_rate"] = pi = pi_strict = float("nan")
    metrics["pi_rate"], metrics["pi_rate_strict"] = pi, pi_strict
    metrics["success_by_distance"] = {
        int(d): float(success[distance == d].mean()) for d in np.unique(distance)
    }
    return metrics


def farthest_pair(maze: PointMaze) -> tuple[np.ndarray, np.ndarray]:
    """Centres of the two cells farthest apart (BFS), the drawn rollout's start and goal."""
    start, goal = np.unravel_index(np.argmax(maze.cells.distances), maze.cells.distances.shape)
    return maze.cell_centre(np.array([start])), maze.cell_centre(np.array([goal]))
