"""Data of the from-scratch tokenizer study (brief Sec. 5b) and the paper-scale reader.

Training pairs are drawn on the fly with the benchmark's own number generator (Sec. 3.2):
``len(a) ~ U{lo..hi}``, ``len(b) ~ U{1..len(a)}``, operands swapped with probability 1/2,
then the task's preprocessing and ground truth (``tasks.py``). The batch of step ``t`` comes
from its own ``random.Random`` seeded by (seed, t), so a resumed run sees the same batches
without checkpointing a generator. The test set uses the benchmark's shorter-operand rule,
``len(b) ~ U{max(1, L // 2)..L}``, from a separate stream.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from papers.nupa.numbers import NUMBER_TYPES
from papers.nupa.tasks import VARIANTS, ground_truth, preprocess


@dataclass(frozen=True)
class Problem:
    """One question of the study: operand strings and the exact answer string."""

    a: str
    b: str | None
    answer: str
    length: int  # len(a) before preprocessing: the test bucket


def check_task(task: str):
    """The benchmark variant the study trains on; a clear error for an unknown name."""
    try:
        return VARIANTS[task]
    except KeyError:
        raise ValueError(
            f"unknown study task {task!r}; choose a benchmark task name such as "
            f"'add_Integer_Integer_Integer' (see papers/nupa/tasks.py VARIANTS)"
        ) from None


def make_problem(task: str, length_a: int, length_b: int, rng: random.Random) -> Problem:
    """Draw a, b of the given lengths (Sec. 3.2), swap with prob 1/2, preprocess, answer."""
    variant = check_task(task)
    number_a = NUMBER_TYPES[variant.type_a]
    number_b = NUMBER_TYPES.get(variant.type_b, number_a)
    a, b = number_a.random(length_a, rng), number_b.random(length_b, rng)
    if rng.random() < 0.5 and variant.type_a == variant.type_b:
        a, b = b, a
    a, b = preprocess(variant, a, b)
    return Problem(str(a), None if b is None else str(b), ground_truth(variant, a, b), length_a)


def training_batch(
    task: str, lengths: list[int], batch_size: int, seed: int, step: int
) -> list[Problem]:
    """The problems of training step ``step`` (a pure function of seed and step)."""
    lo, hi = lengths
    rng = random.Random(f"nupa-train-{seed}-{step}")
    problems = []
    for _ in range(batch_size):
        length_a = rng.randint(lo, hi)
        problems.append(make_problem(task, length_a, rng.randint(1, length_a), rng))
    return problems


def make_test_set(task: str, lengths: list[int], n_per_length: int, seed: int) -> list[Problem]:
    """``n_per_length`` problems per length L, ``len(b) ~ U{max(1, L // 2)..L}``."""
    rng = random.Random(seed)
    return [
        make_problem(task, length, rng.randint(max(1, length // 2), length), rng)
        for length in lengths
        for _ in range(n_per_length)
    ]


def load_benchmark_split(folder: str | Path, task: str, split: str) -> list[dict]:
    """Records of one task and split from a benchmark folder written by ``generate.py``."""
    path = Path(folder) / f"{task}.jsonl"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found; write the benchmark first: "
            f"python -m papers.nupa.generate --scale paper --out {folder}"
        )
    with path.open() as f:
        return [r for r in map(json.loads, f) if r["split"] == split]
