r"""Evaluation of greedy goal-conditioned policies on the grid (brief Sec. 3.3, Sec. 5).

Everything here takes a score function ``q_fn(s, g) -> (N, n_actions)`` over integer state and
goal indices (higher = better), so learned critics ``f(s, a, g)`` and the oracle
``-BFS(T(s, a), g)`` (:func:`oracle_q`) go through the same code. The rollout policy
(:func:`make_policy`) is greedy, ``argmax_a q_fn(s, g)[a]`` with ties to the lowest action
index (brief Sec. 5), or sampled, ``a ~ softmax_a(q_fn(s, g)[a] / T)``: the official evaluator
samples its actor (``deterministic_eval=False``), and for a fixed entropy weight alpha the
minimiser over a discrete action set of its actor loss ``E_pi[alpha log pi - f]`` is
``softmax(f / alpha)``. The far optimal-action rate and the planning-invariance rate always
read the greedy action: they are properties of the critic, not of the sampling.

:func:`evaluate` draws start-goal pairs (s != g) uniformly with its own seed, rolls all of
them out in one batch (:func:`rollout`; success = the goal cell is visited within
``max_steps``) and reports success per BFS-distance bin (``bins``, the config's
``eval.bins``), the horizon generalization ratio ``eta = far / near``, the far
optimal-action rate and the learned-planner planning-invariance rate.

Planning invariance (``pi_rate``): with the critic's own distance
$d_f(s, g) = -\max_a q(s, a, g)$ and its own planner
$w^* = \arg\min_{w \ne g:\ \mathrm{BFS}(s, w) = c} d_f(s, w) + d_f(w, g)$, a far pair counts as
invariant when the greedy action towards $w^*$ is also a greedy action towards $g$,
$q(s, a_{w^*}, g) = \max_a q(s, a, g)$. For a critic without tied values this is exactly the
brief's $\arg\max_a q(s, \cdot, g) = \arg\max_a q(s, \cdot, w^*)$ (also reported, as
``pi_rate_strict``). The tie-tolerant form is needed for the oracle, whose values tie
whenever several moves are optimal: e.g. from a corner towards the opposite corner both "down"
and "right" are optimal, the lowest-index rule picks "down", while the planner's waypoint may
lie straight to the right. The oracle satisfies it always, which is the paper's argument: an
action optimal towards a waypoint on a shortest path is optimal towards the goal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from papers.horizon_generalization.config import EVAL_POLICIES, HORIZON_BINS
from papers.horizon_generalization.env import Grid

QFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
# A rollout policy: (N, n_actions) scores -> (N,) action indices.
Choose = Callable[[np.ndarray], np.ndarray]

Bins = Mapping[str, Sequence[float]]  # bin name -> inclusive (low, high) BFS distance


def check_bins(bins: Bins) -> None:
    """Bins are named, include ``near`` and ``far`` (the horizon measures read them), and each
    is an inclusive ``(low, high)`` range with ``1 <= low <= high``."""
    missing = set(HORIZON_BINS) - set(bins)
    if missing:
        raise ValueError(f"eval.bins needs the bins {sorted(missing)}; got {sorted(bins)}")
    for name, edges in bins.items():
        if len(edges) != 2 or not 1 <= edges[0] <= edges[1]:
            raise ValueError(f"eval.bins.{name} must be [low, high], 1 <= low <= high: {edges}")


def oracle_q(grid: Grid) -> QFn:
    """The hand-built quasimetric critic ``q(s, a, g) = -BFS(next_state(s, a), g)``."""

    def q_fn(states: np.ndarray, goals: np.ndarray) -> np.ndarray:
        states, goals = np.asarray(states), np.asarray(goals)
        return -grid.distances[grid.next_state[states], goals[:, None]].astype(np.float64)

    return q_fn


def scores(q_fn: QFn, grid: Grid, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """``q_fn(states, goals)`` as a float array, checked to be (N, n_actions)."""
    values = np.asarray(q_fn(np.asarray(states), np.asarray(goals)), dtype=np.float64)
    if values.shape != (len(states), grid.n_actions):
        raise ValueError(
            f"q_fn must return shape {(len(states), grid.n_actions)}, got {values.shape}"
        )
    return values


def greedy_actions(q_fn: QFn, grid: Grid, states: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """``argmax_a q_fn(s, g)[a]`` per pair, ties to the lowest action index."""
    return scores(q_fn, grid, states, goals).argmax(axis=1)


def greedy_choice(values: np.ndarray) -> np.ndarray:
    """The greedy policy: ``argmax`` of each row, ties to the lowest action index."""
    return np.asarray(values).argmax(axis=1)


def action_probabilities(values: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over each row (N, n_actions): the maximum-entropy
    policy of the official actor loss ``alpha log pi - f`` with ``alpha = temperature``."""
    if not temperature > 0:
        raise ValueError(f"eval.temperature must be > 0, got {temperature}")
    logits = np.asarray(values, dtype=np.float64) / temperature
    logits = logits - logits.max(axis=1, keepdims=True)  # exp without overflow
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def make_policy(kind: str, temperature: float, rng: np.random.Generator) -> Choose:
    """The rollout policy ``kind`` (``eval.policy``): ``greedy`` (:func:`greedy_choice`) or
    ``sampled`` (one action per row from :func:`action_probabilities` by the inverse CDF of one
    uniform draw of ``rng``, so a run is a pure function of the generator's seed)."""
    if kind == "greedy":
        return greedy_choice
    if kind != "sampled":
        raise ValueError(f"eval.policy must be one of {EVAL_POLICIES}, got {kind!r}")

    def choose(values: np.ndarray) -> np.ndarray:
        cumulative = action_probabilities(values, temperature).cumsum(axis=1)
        draws = rng.random(len(cumulative))
        # The first action whose cumulative probability exceeds the draw; the clip guards
        # against a last cumulative value rounded below 1.
        actions = (cumulative <= draws[:, None]).sum(axis=1)
        return np.minimum(actions, cumulative.shape[1] - 1)

    return choose


def sample_pairs(
    grid: Grid, n_pairs: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` start-goal pairs, uniform over ordered pairs of distinct states."""
    starts = rng.integers(grid.n_states, size=n_pairs)
    goals = rng.integers(grid.n_states - 1, size=n_pairs)
    goals += goals >= starts
    return starts, goals


def rollout(
    q_fn: QFn,
    grid: Grid,
    starts: np.ndarray,
    goals: np.ndarray,
    max_steps: int = 100,
    choose: Choose = greedy_choice,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run the policy ``choose`` (greedy by default) from every start towards its goal, all
    pairs in one batch.

    One ``q_fn`` call per time step on the pairs that have not reached their goal yet.

    Returns:
        ``success`` (N,) bool, the goal was visited within ``max_steps`` steps;
        ``steps`` (N,) int, the step at which it was first visited (``max_steps`` on
        failure); ``paths`` (N, max_steps + 1) int, the visited states, ``paths[:, 0] =
        starts``, repeating the goal after it is reached.
    """
    starts = np.asarray(starts, dtype=np.int64)
    goals = np.asarray(goals, dtype=np.int64)
    states = starts.copy()
    paths = np.empty((len(starts), max_steps + 1), dtype=np.int64)
    paths[:, 0] = states
    done = states == goals
    steps = np.full(len(starts), max_steps, dtype=np.int64)
    steps[done] = 0
    for t in range(1, max_steps + 1):
        active = np.flatnonzero(~done)
        if len(active):
            actions = choose(scores(q_fn, grid, states[active], goals[active]))
            states[active] = grid.next_state[states[active], actions]
            arrived = active[states[active] == goals[active]]
            steps[arrived] = t
            done[arrived] = True
        paths[:, t] = states
    return done, steps, paths


def planning_invariance(
    q_fn: QFn, grid: Grid, starts: np.ndarray, goals: np.ndarray, c: int = 3
) -> tuple[float, float]:
    """Learned-planner planning-invariance rates over the given pairs (module docstring).

    Candidate waypoints are the cells at exactly ``c`` BFS steps from s (other than g); the
    pairs' candidate lists are padded into one (P, M) array so the critic is queried twice
    in total. Pairs without a candidate are skipped.

    Returns:
        ``(pi_rate, pi_rate_strict)``; NaN when no pair has a candidate.
    """
    starts = np.asarray(starts, dtype=np.int64)
    goals = np.asarray(goals, dtype=np.int64)
    candidate = grid.distances[starts] == c  # (P, S)
    candidate[np.arange(len(starts)), goals] = False
    keep = candidate.any(axis=1)
    starts, goals, candidate = starts[keep], goals[keep], candidate[keep]
    if len(starts) == 0:
        return float("nan"), float("nan")
    width = int(candidate.sum(axis=1).max())
    # Candidates in increasing state order, padded with the first one; argmin ties -> lowest.
    order = np.argsort(~candidate, axis=1, kind="stable")[:, :width]
    valid = np.take_along_axis(candidate, order, axis=1)
    waypoints = np.where(valid, order, order[:, :1])
    pair_starts = np.broadcast_to(starts[:, None], waypoints.shape).ravel()
    pair_goals = np.broadcast_to(goals[:, None], waypoints.shape).ravel()
    d_start_way = -scores(q_fn, grid, pair_starts, waypoints.ravel()).max(axis=1)
    d_way_goal = -scores(q_fn, grid, waypoints.ravel(), pair_goals).max(axis=1)
    planned = (d_start_way + d_way_goal).reshape(waypoints.shape)
    planned[~valid] = np.inf
    best = waypoints[np.arange(len(starts)), planned.argmin(axis=1)]

    q_goal = scores(q_fn, grid, starts, goals)
    action_way = greedy_actions(q_fn, grid, starts, best)
    tolerant = q_goal[np.arange(len(starts)), action_way] >= q_goal.max(axis=1)
    strict = action_way == q_goal.argmax(axis=1)
    return float(tolerant.mean()), float(strict.mean())


def _rate(flags: np.ndarray) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def success_by_bin(success: np.ndarray, distance: np.ndarray, bins: Bins) -> dict:
    """``<bin>_success`` and ``n_<bin>`` per distance bin, overall ``success``, and the horizon
    generalization ratio ``eta`` = far success / near success (NaN when near success is 0)."""
    metrics: dict = {}
    for name, (low, high) in bins.items():
        in_bin = (distance >= low) & (distance <= high)
        metrics[f"{name}_success"] = _rate(success[in_bin])
        metrics[f"n_{name}"] = int(in_bin.sum())
    metrics["success"] = _rate(success)
    near = metrics["near_success"]
    metrics["eta"] = metrics["far_success"] / near if near > 0 else float("nan")
    return metrics


def evaluate(
    q_fn: QFn,
    grid: Grid,
    n_pairs: int = 1000,
    seed: int = 12345,
    max_steps: int = 100,
    planner_c: int = 3,
    pi_pairs: int = 200,
    *,
    bins: Bins,
    policy: str = "greedy",
    temperature: float = 1.0,
) -> dict:
    """Success by distance, horizon generalization and planning invariance of a critic.

    Args:
        q_fn: the score function (module docstring).
        grid: the layout.
        n_pairs: start-goal pairs, uniform over distinct states, drawn from ``seed``.
        max_steps: the step limit of each rollout.
        planner_c: waypoint distance c of the learned planner.
        pi_pairs: the planning-invariance rate uses the first ``pi_pairs`` far pairs.
        bins: inclusive BFS-distance ranges by name (``eval.bins``; the brief's 11 x 11 room:
            near 1-5, mid 6-10, far 11+); ``near`` and ``far`` are required.
        policy, temperature: the rollout policy (:func:`make_policy`; sampled actions draw
            from ``rng([seed, 1])``, the pairs from ``rng(seed)``).

    Returns:
        ``<bin>_success`` per bin (NaN for an empty bin), ``n_<bin>`` (int),
        ``success`` (all pairs), ``eta = far_success / near_success`` (NaN if near is 0 or
        empty), ``far_optimal_action_rate`` (fraction of far pairs whose greedy first action
        lowers the true BFS distance by exactly one), ``pi_rate`` and ``pi_rate_strict``
        (:func:`planning_invariance` on the first ``pi_pairs`` far pairs), and
        ``success_by_distance`` ({BFS distance: success rate}, for plots).
    """
    rng = np.random.default_rng(seed)
    starts, goals = sample_pairs(grid, n_pairs, rng)
    distance = grid.distances[starts, goals]
    choose = make_policy(policy, temperature, np.random.default_rng([seed, 1]))
    success, _, _ = rollout(q_fn, grid, starts, goals, max_steps=max_steps, choose=choose)

    check_bins(bins)
    metrics = success_by_bin(success, distance, bins)

    far = np.flatnonzero((distance >= bins["far"][0]) & (distance <= bins["far"][1]))
    far_starts, far_goals = starts[far], goals[far]
    if len(far):
        first = greedy_actions(q_fn, grid, far_starts, far_goals)
        after = grid.distances[grid.next_state[far_starts, first], far_goals]
        metrics["far_optimal_action_rate"] = _rate(after == distance[far] - 1)
        pi, pi_strict = planning_invariance(
            q_fn, grid, far_starts[:pi_pairs], far_goals[:pi_pairs], c=planner_c
        )
    else:
        metrics["far_optimal_action_rate"] = pi = pi_strict = float("nan")
    metrics["pi_rate"], metrics["pi_rate_strict"] = pi, pi_strict
    metrics["success_by_distance"] = {
        int(d): float(success[distance == d].mean()) for d in np.unique(distance)
    }
    return metrics
