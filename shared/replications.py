"""Monte-Carlo replications with checkpoint and resume, for papers without a training loop.

Statistics papers (conformal prediction, causal inference) measure coverage and interval
size over many independent replications. :func:`run_replications` runs them in sequence
from one numpy generator, appends what each returns to per-key record lists, logs running
means to ``metrics.jsonl``, and checkpoints the records with the generator's state, so an
interrupted run resumes to the identical result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from shared import checkpoint
from shared.logger import MetricsLogger

CHECKPOINT_NAME = "checkpoint.pt"
Records = dict[str, list[float]]


def run_replications(
    one_replication: Callable[[int, np.random.Generator], Records],
    n_replications: int,
    seed: int,
    run_dir: Path,
    *,
    checkpoint_every: int,
    logger: MetricsLogger | None = None,
    tags: dict | None = None,
    log_keys: tuple[str, ...] = (),
    progress: bool = True,
    desc: str = "replications",
) -> Records:
    """Run replications ``0..n_replications-1``, resuming from ``run_dir/checkpoint.pt``.

    Args:
        one_replication: ``(index, rng) -> {key: values}``; the values are appended to the
            records. ``rng`` is one generator seeded with ``seed``, shared in sequence.
        checkpoint_every: replications between checkpoints (the last one always saves).
        log_keys: record keys whose running mean is logged after each replication.

    Returns:
        The records: key -> every value appended over all replications.
    """
    tags = tags or {}
    path = Path(run_dir) / CHECKPOINT_NAME
    rng = np.random.default_rng(seed)
    records: Records = {}
    start = 0
    if path.exists():
        state = checkpoint.load_checkpoint(path)
        start, records = state["step"], state["records"]
        rng.bit_generator.state = state["rng"]
    if logger is not None:  # forget records written after the checkpoint we resume from
        logger.drop_after(start, **tags)
    # Running sums of the logged keys, added in record order (a resumed run rebuilds them in
    # the same order, so it logs the same means): a mean over the whole growing list after
    # every replication cost O(n) each time, a quarter of a 20,000-replication setting's CPU.
    sums = {k: _sequential_sum(records.get(k, [])) for k in log_keys}

    for rep in tqdm(
        range(start, n_replications),
        initial=start,
        total=n_replications,
        desc=desc,
        leave=False,
        disable=not progress,
    ):
        for key, values in one_replication(rep, rng).items():
            added = [float(v) for v in values]
            records.setdefault(key, []).extend(added)
            if key in sums:
                sums[key] = _sequential_sum(added, sums[key])
        if logger is not None:
            running = {f"{k}_so_far": sums[k] / len(records[k]) for k in log_keys if records.get(k)}
            logger.log({**tags, "step": rep + 1, **running})
        if (rep + 1) % checkpoint_every == 0 or rep + 1 == n_replications:
            checkpoint.save_checkpoint(
                {"step": rep + 1, "records": records, "rng": rng.bit_generator.state}, path
            )
    return records


def _sequential_sum(values: list[float], start: float = 0.0) -> float:
    """``start + values[0] + values[1] + ...``, left to right (one rounding order, whether the
    values arrive one replication at a time or all at once on resume)."""
    total = start
    for value in values:
        total += value
    return total
