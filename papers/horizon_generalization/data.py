r"""Offline data of the toy: random-policy trajectories and hindsight goal relabelling
(brief Sec. 5 "Data", Sec. 3.4).

:func:`random_trajectories` rolls a uniform random policy from uniform random start cells
through the grid's transition table (3,000 trajectories of 50 steps in the toy).
:func:`sample_hindsight` draws CRL training tuples $(s_t, a_t, g = s_{t+k})$: a trajectory and
a time $t$ uniformly among the times that have a later state, then a strictly positive offset
with $P(k) \propto \gamma^{k-1}$, i.e. $k \sim \mathrm{Geom}(1 - \gamma)$, truncated to
$k \le$ ``max_offset`` and to the end of the trajectory ($k \le T - t$) and renormalised.

Relation to the official relabelling (``flatten_crl_fn`` in ``src/train.py``): there every
time step $i$ of a sampled trajectory window is used (not a uniform draw of $t$; the two agree
in distribution over $t$), and the goal index $j$ is drawn from a categorical with weights
$\gamma^{j - i}$ over the later steps $j > i$ of the same episode, i.e. the same truncated
geometric without an upper cap (``max_offset=None`` here). The official weights also put
$10^{-5}$ on $j = i$, which only matters for a step with no later step in its episode (its
goal becomes the state itself) and is otherwise negligible; here such steps are never drawn,
so $k \ge 1$ always. The ``max_offset`` cap (10 in the toy) is the brief's way of keeping
training goals near; the official Ant code limits the horizon through the commanded goal
radius and the discount instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from papers.horizon_generalization.env import Grid


def random_trajectories(
    grid: Grid, n_trajectories: int, length: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Roll out the uniform random policy from uniform random start cells.

    Returns:
        ``states`` (N, length + 1) int state indices and ``actions`` (N, length) int, with
        ``states[:, t + 1] == grid.next_state[states[:, t], actions[:, t]]``.
    """
    if n_trajectories < 1 or length < 1:
        raise ValueError("need at least one trajectory of at least one step")
    states = np.empty((n_trajectories, length + 1), dtype=np.int64)
    states[:, 0] = rng.integers(grid.n_states, size=n_trajectories)
    actions = rng.integers(grid.n_actions, size=(n_trajectories, length))
    for t in range(length):
        states[:, t + 1] = grid.next_state[states[:, t], actions[:, t]]
    return states, actions


def offset_probabilities(gamma: float, limit: int) -> np.ndarray:
    """``p[k - 1] = P(k)`` for k = 1..limit under the truncated geometric, ``∝ gamma^(k-1)``."""
    weights = float(gamma) ** np.arange(limit)
    return weights / weights.sum()


def sample_hindsight(
    states: np.ndarray,
    actions: np.ndarray,
    batch_size: int,
    rng: np.random.Generator,
    gamma: float = 0.9,
    max_offset: int | None = 10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Draw a batch of hindsight-relabelled tuples from the same trajectories.

    Args:
        states: (N, T + 1) state indices; actions: (N, T) with ``actions[:, t]`` taken in
            ``states[:, t]``.
        batch_size: B.
        rng: the random stream.
        gamma: the geometric weight, ``P(k) ∝ gamma^(k - 1)`` for ``k >= 1``
            (``0 <= gamma <= 1``; 1 gives uniform offsets).
        max_offset: the largest offset, or None to truncate only at the trajectory end.

    Returns:
        ``(s, a, g, k)``, each (B,) int: ``s = states[n, t]``, ``a = actions[n, t]``,
        ``g = states[n, t + k]`` with ``1 <= k <= min(max_offset, T - t)``.
    """
    n_trajectories, horizon = states.shape[0], states.shape[1] - 1
    if actions.shape != (n_trajectories, horizon):
        raise ValueError(
            f"actions must have shape {(n_trajectories, horizon)}, got {actions.shape}"
        )
    if horizon < 1:
        raise ValueError("trajectories need at least two states")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if max_offset is not None and max_offset < 1:
        raise ValueError(f"max_offset must be at least 1, got {max_offset}")
    cap = horizon if max_offset is None else min(max_offset, horizon)

    trajectory = rng.integers(n_trajectories, size=batch_size)
    time = rng.integers(horizon, size=batch_size)  # every t < T has a later state
    limit = np.minimum(cap, horizon - time)  # per-sample largest allowed offset
    # Inverse-CDF draw from the geometric truncated at each sample's own limit: scale a
    # uniform by the unnormalised mass up to the limit and look it up in the cumulative sums.
    cumulative = np.cumsum(float(gamma) ** np.arange(cap))
    target = rng.random(batch_size) * cumulative[limit - 1]
    offset = np.searchsorted(cumulative, target, side="right") + 1
    offset = np.minimum(offset, limit)  # guards the float edge target == cumulative[limit - 1]
    return (
        states[trajectory, time],
        actions[trajectory, time],
        states[trajectory, time + offset],
        offset,
    )


# --------------------------------------------------------------------------------------------
# The real rung: PointMaze's maze maps (gymnasium-robotics 1.4.2, asset "point_maze")
# --------------------------------------------------------------------------------------------
POINT_MAZE_ASSET = "point_maze"
MAPS_FILE = "maps.py"
# Cell marks of maps.py besides 0 (free) and 1 (wall): reset / goal / combined cells are free.
_FREE_MARKS = {"R", "G", "C", "RESET", "GOAL", "COMBINED"}


class MazeFileError(ValueError):
    """The maze maps file is unreadable, truncated or lacks the requested map; the message
    names the file."""


def _cell(node: ast.expr, path: Path, name: str) -> int:
    """1 for a wall, 0 for a free cell (0 or a reset / goal mark)."""
    if isinstance(node, ast.Constant) and node.value in (0, 1) and type(node.value) is int:
        return int(node.value)
    if isinstance(node, ast.Name) and node.id in _FREE_MARKS:
        return 0
    raise MazeFileError(f"{path}: map {name} has a cell that is not 0, 1 or a reset/goal mark")


def load_maze_map(path: str | Path, name: str) -> np.ndarray:
    """Read the maze ``name`` (e.g. ``MEDIUM_MAZE``) out of gymnasium-robotics' ``maps.py``.

    The file is parsed, never imported or executed: the assignment ``name = [[...], ...]`` is
    read from its syntax tree; reset / goal / combined marks (``R``, ``G``, ``C``) count as free
    cells.

    Returns:
        ``walls`` (H, W) bool, True on wall cells (row 0 is the map's first row, the maze's
        top, +y).

    Raises:
        MazeFileError: naming ``path``, when the file is missing, not valid Python (e.g.
            truncated), has no such map, or the map is not a rectangular 0/1 grid closed by
            walls with at least two free cells.
    """
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        raise MazeFileError(f"{path}: cannot read the maze maps ({error})") from None
    node = None
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in statement.targets
        ):
            node = statement.value
    if node is None:
        raise MazeFileError(f"{path}: no maze map named {name!r}")
    if not isinstance(node, ast.List) or not all(isinstance(r, ast.List) for r in node.elts):
        raise MazeFileError(f"{path}: map {name} is not a list of rows")
    rows = [[_cell(c, path, name) for c in row.elts] for row in node.elts]
    problem = grid_problem(rows)
    if problem:
        raise MazeFileError(f"{path}: map {name} {problem}")
    return np.array(rows, dtype=np.int64) == 1


def grid_problem(rows: list[list[int]]) -> str:
    """Why 0/1 rows (1 a wall) are no maze ('' when they are): a rectangular grid of at least
    3 x 3, closed by walls on its border, with at least two free cells."""
    if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) < 3 or len(rows) < 3:
        return "is not a rectangular grid of at least 3 x 3"
    walls = np.array(rows, dtype=np.int64) == 1
    border = np.concatenate([walls[0], walls[-1], walls[:, 0], walls[:, -1]])
    if not border.all():
        return "is not closed by walls on its border"
    if (~walls).sum() < 2:
        return "has fewer than two free cells"
    return ""


WALL, FREE = "#", "."  # a user's maze rows (LayoutConfig.maze_rows)


def maze_from_rows(rows: list[str], key: str) -> np.ndarray:
    """A user's maze (``maze=CUSTOM``): rows of ``#`` (wall) and ``.`` (free), row 0 the top.

    Returns:
        ``walls`` (H, W) bool, as :func:`load_maze_map`.

    Raises:
        MazeFileError: naming ``key``, for another character, a grid that is not rectangular
            or not closed by walls, fewer than two free cells, or free cells that are not all
            reachable from one another (evaluation pairs would have no path).
    """
    bad = sorted({c for row in rows for c in row} - {WALL, FREE})
    if bad:
        raise MazeFileError(f"{key}: characters {bad}; use '{WALL}' (wall) and '{FREE}' (free)")
    grid = [[int(c == WALL) for c in row] for row in rows]
    problem = grid_problem(grid)
    if problem:
        raise MazeFileError(f"{key}: the maze {problem}")
    walls = np.array(grid, dtype=np.int64) == 1
    free = list(zip(*np.nonzero(~walls), strict=True))
    seen, frontier = {free[0]}, [free[0]]
    while frontier:  # flood fill from one free cell through its four neighbours
        r, c = frontier.pop()
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if not walls[nr, nc] and (nr, nc) not in seen:
                seen.add((nr, nc))
                frontier.append((nr, nc))
    if len(seen) < len(free):
        raise MazeFileError(
            f"{key}: {len(free) - len(seen)} free cell(s) cannot be reached from the others"
        )
    return walls


def real_maze_map(name: str) -> np.ndarray:
    """The maze ``name`` from the verified asset file (``shared.assets.require``; never
    downloads: a missing or corrupt file raises one line naming the fetch command)."""
    from shared.assets import require

    return load_maze_map(require(POINT_MAZE_ASSET)[MAPS_FILE], name)
