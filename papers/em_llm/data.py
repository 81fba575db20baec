"""Documents: the toy's synthetic record stream (brief Sec. 5) and, at paper scale, the
extended passkey and LongBench / InfiniteBench examples read from local jsonl files.

Record stream (vocabulary 101): PAD 0, BOS 1, QRY 2, SEP 3, PK 4 (pass-key marker), then 64
key tokens, 16 pass-key tokens, 16 filler tokens. A distractor record is ``SEP k f...f`` (one
filler repeated 4..10 times); the needle record is ``SEP p PK f...f``: its surprising content
comes first, so a surprise boundary opens its event. A document is BOS, R records with the
needle at a uniformly random index, then ``QRY PK``; the target is p.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from papers.em_llm.config import SPECIAL_TOKENS, StreamConfig

PAD, BOS, QRY, SEP, PK = range(SPECIAL_TOKENS)
FIRST_KEY = SPECIAL_TOKENS


@dataclass
class Document:
    """One record stream: ``ids`` ends with ``QRY PK``; ``target`` is the pass-key token;
    ``record_starts`` are the SEP positions (the true event starts)."""

    ids: list[int]
    target: int
    record_starts: list[int]


def make_document(cfg: StreamConfig, n_records: int, rng: random.Random) -> Document:
    """BOS + ``n_records`` records (needle at a uniform index) + QRY PK (brief Sec. 5)."""
    first_passkey = FIRST_KEY + cfg.n_keys
    first_filler = first_passkey + cfg.n_passkeys
    needle_at = rng.randrange(n_records)
    passkey = first_passkey + rng.randrange(cfg.n_passkeys)
    ids, starts = [BOS], []
    for r in range(n_records):
        starts.append(len(ids))
        head = (
            [SEP, passkey, PK] if r == needle_at else [SEP, FIRST_KEY + rng.randrange(cfg.n_keys)]
        )
        filler = first_filler + rng.randrange(cfg.n_fillers)
        ids += head + [filler] * rng.randint(cfg.min_repeat, cfg.max_repeat)
    return Document(ids + [QRY, PK], passkey, starts)


def training_batch(cfg: StreamConfig, batch_size: int, rng: random.Random) -> torch.Tensor:
    """(B, T) short documents with their answer appended (next-token loss on every position),
    right-padded with PAD (PAD targets are ignored by :func:`training_labels`)."""
    docs = [
        make_document(cfg, rng.randint(cfg.train_min_records, cfg.train_max_records), rng)
        for _ in range(batch_size)
    ]
    rows = [d.ids + [d.target] for d in docs]
    width = max(map(len, rows))
    return torch.tensor([row + [PAD] * (width - len(row)) for row in rows])


def training_labels(ids: torch.Tensor) -> torch.Tensor:
    """Labels for the causal-LM loss: the ids, PAD positions ignored (-100)."""
    return ids.masked_fill(ids == PAD, -100)


def test_documents(cfg: StreamConfig, n: int, seed: int) -> list[Document]:
    """``n`` long documents of ``test_records`` records from ``random.Random(777 + seed)``."""
    rng = random.Random(cfg.test_seed_offset + seed)
    return [make_document(cfg, cfg.test_records, rng) for _ in range(n)]


# --------------------------------------------------------------------------- paper scale

PASSKEY_FILLER = (
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
)


def passkey_prompt(n_filler: int, depth: float, passkey: int) -> tuple[str, str]:
    """The extended passkey document (InfLLM / EM-LLM ``benchmark``): ``n_filler`` filler
    sentences with the pass-key line at relative ``depth``; returns (prompt, answer)."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth must lie in [0, 1], got {depth}")
    before = round(n_filler * depth)
    needle = f"The pass key is {passkey}. Remember it. {passkey} is the pass key. "
    prompt = (
        "There is an important info hidden inside a lot of irrelevant text. Find it and "
        "memorize it. I will quiz you about the important information there. "
        + PASSKEY_FILLER * before
        + needle
        + PASSKEY_FILLER * (n_filler - before)
        + "What is the pass key? The pass key is"
    )
    return prompt, str(passkey)


def load_task(root: str | Path, task: str, max_examples: int = -1) -> list[dict]:
    """Examples of one LongBench / InfiniteBench task from ``<root>/<task>.jsonl`` (one json
    object per line; nothing is downloaded). Raises FileNotFoundError naming the file."""
    path = Path(root) / f"{task}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: put the task's jsonl there (LongBench data/<task>.jsonl or "
            "InfiniteBench <task>.jsonl); nothing is downloaded"
        )
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows if max_examples < 0 else rows[:max_examples]


def format_prompt(template: str, example: dict) -> str:
    """Fill an official prompt template (``{context}``, ``{input}``...) from an example.
    InfiniteBench names its fields differently: ``context``/``input`` are taken as they are
    and ``options`` (multiple choice) are joined as ``A. ..`` lines."""
    fields = dict(example)
    if isinstance(fields.get("options"), list):
        fields["options"] = "\n".join(
            f"{chr(65 + i)}. {o}" for i, o in enumerate(fields["options"])
        )
    try:
        return template.format(**fields)
    except KeyError as err:
        raise KeyError(f"prompt template needs field {err} that the example lacks") from err


def truncate_middle(ids: list[int], max_length: int) -> list[int]:
    """LongBench's truncation: keep the first and last ``max_length / 2`` tokens."""
    if len(ids) <= max_length:
        return ids
    half = max_length // 2
    return ids[:half] + ids[len(ids) - (max_length - half) :]
