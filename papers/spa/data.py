"""Data: the toy world with a known preference (brief Sec. 5.1) and the paper-scale
UltraFeedback split read from local disk (brief Sec. 6).

Toy token ids: responses use 0..V-1, then the topic, style-1 and style-2 prompt tokens in
disjoint ranges, so the policy's response softmax is the first V logits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from papers.spa.config import DataConfig, WorldConfig
from shared.seeding import numpy_rng

PROMPT_LENGTH = 3  # (topic, style1, style2)


@dataclass
class ToyWorld:
    """Reward weights w (topics, V) and SFT behaviour logits b (topics, styles, V)."""

    w: torch.Tensor  # r*(x, y) = sum_t w[c, y_t]
    b: torch.Tensor  # pi_behaviour(y_t | x) = softmax(b[c, s1]), iid over t
    cfg: WorldConfig

    @property
    def vocab_size(self) -> int:
        return self.cfg.n_tokens + self.cfg.n_topics + 2 * self.cfg.n_styles

    @property
    def response_tokens(self) -> torch.Tensor:
        """(vocab,) bool: True for the tokens a response may contain."""
        allowed = torch.zeros(self.vocab_size, dtype=torch.bool)
        allowed[: self.cfg.n_tokens] = True
        return allowed

    def prompt_ids(self, prompts: torch.Tensor) -> torch.Tensor:
        """(N, 3) (topic, style1, style2) -> (N, 3) token ids in disjoint ranges."""
        offsets = torch.tensor(
            [
                self.cfg.n_tokens,
                self.cfg.n_tokens + self.cfg.n_topics,
                self.cfg.n_tokens + self.cfg.n_topics + self.cfg.n_styles,
            ]
        )
        return prompts + offsets

    def reward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """r*(x, y) = sum_t w[c, y_t] for prompts (N, 3) and responses (N, L) -> (N,)."""
        return self.w[prompts[:, :1], responses].sum(-1)


def make_toy_world(cfg: WorldConfig, seed: int) -> ToyWorld:
    """u ~ N(0,1)^V, S ~ N(0,1)^(topics x V), w = u + 0.7 S; b ~ 0.8 N(0,1) (brief Sec. 5.1)."""
    rng = numpy_rng(seed, 0)
    u = rng.standard_normal(cfg.n_tokens)
    style = rng.standard_normal((cfg.n_topics, cfg.n_tokens))
    w = u[None, :] + cfg.style_weight * style
    b = cfg.behaviour_scale * rng.standard_normal((cfg.n_topics, cfg.n_styles, cfg.n_tokens))
    return ToyWorld(torch.tensor(w), torch.tensor(b, dtype=torch.float32), cfg)


def sample_prompts(cfg: WorldConfig, n: int, rng: np.random.Generator) -> torch.Tensor:
    """n prompts (topic, style1, style2), uniform, (n, 3) int64."""
    topics = rng.integers(0, cfg.n_topics, n)
    styles = rng.integers(0, cfg.n_styles, (n, 2))
    return torch.tensor(np.column_stack([topics, styles]), dtype=torch.long)


def eval_prompts(cfg: WorldConfig, seed: int) -> torch.Tensor:
    """The evaluation prompts, from their own RNG stream (seed + eval_stream)."""
    return sample_prompts(cfg, cfg.eval_prompts, numpy_rng(seed + cfg.eval_stream))


def behaviour_batch(
    world: ToyWorld, n: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """SFT data: prompts and responses with iid tokens ~ softmax(b[c, s1]) (unrelated to r*)."""
    prompts = sample_prompts(world.cfg, n, rng)
    probs = torch.softmax(world.b[prompts[:, 0], prompts[:, 1]].double(), -1).numpy()  # (n, V)
    cumulative = probs.cumsum(-1)
    draws = rng.random((n, world.cfg.response_length, 1))
    responses = (draws > cumulative[:, None, :]).sum(-1).clip(max=world.cfg.n_tokens - 1)
    return prompts, torch.tensor(responses, dtype=torch.long)


def all_responses(n_tokens: int, length: int) -> torch.Tensor:
    """Every response, (V^L, L), first token most significant (the enumeration's order)."""
    index = torch.arange(n_tokens**length)
    powers = n_tokens ** torch.arange(length - 1, -1, -1)
    return (index[:, None] // powers) % n_tokens


# ------------------------------------------------------------------ paper scale (local only)


@dataclass
class PreferenceRow:
    prompt: str
    chosen: str
    rejected: str


def _response_text(value: Any) -> str | None:
    """A response given as text or as a chat (list of messages): the assistant's last turn."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        content = value[-1].get("content")
        return content if isinstance(content, str) else None
    return None


def parse_preference_row(record: Any, where: str) -> PreferenceRow:
    """One UltraFeedback row -> (prompt, chosen, rejected); fails naming ``where`` (the file
    and line) for a missing field or an empty prompt or response."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    values = {}
    for name in ("prompt", "chosen", "rejected"):
        if name not in record:
            raise ValueError(f"{where}: missing field {name!r}")
        text = record[name] if name == "prompt" else _response_text(record[name])
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{where}: field {name!r} is empty or not text")
        values[name] = text
    return PreferenceRow(**values)


def load_preference_rows(path: str | Path) -> list[PreferenceRow]:
    """UltraFeedback (``argilla/ultrafeedback-binarized-preferences-cleaned``) from a local
    jsonl file or a ``datasets.save_to_disk`` folder; nothing is downloaded."""
    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist (a local jsonl file or save_to_disk dir)")
    if path.is_dir():
        from datasets import load_from_disk

        dataset = load_from_disk(str(path))
        if hasattr(dataset, "keys"):  # a DatasetDict: the training split
            dataset = dataset["train"]
        return [parse_preference_row(r, f"{path} row {i}") for i, r in enumerate(dataset)]
    rows = []
    with path.open() as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path} line {number}: not valid JSON ({err.msg})") from err
            rows.append(parse_preference_row(record, f"{path} line {number}"))
    return rows


@dataclass
class PaperSplit:
    """make_data_split.py: seed rows (labelled), prompt-only pools per iteration, held-out."""

    seed: list[PreferenceRow]
    pools: list[list[str]]
    heldout: list[str]


def split_rows(rows: list[PreferenceRow], cfg: DataConfig) -> PaperSplit:
    """Shuffle with ``split_seed`` (42) and cut: seed, one pool per iteration, rest held out."""
    order = np.random.default_rng(cfg.split_seed).permutation(len(rows))
    shuffled = [rows[i] for i in order]
    cuts = np.cumsum([cfg.seed_size, *cfg.iteration_sizes])
    if cuts[-1] > len(shuffled):
        raise ValueError(
            f"data.path holds {len(shuffled)} rows; the split needs {int(cuts[-1])} "
            f"(seed {cfg.seed_size} + iterations {list(cfg.iteration_sizes)})"
        )
    bounds = zip(cuts[:-1], cuts[1:], strict=True)
    pools = [[r.prompt for r in shuffled[start:stop]] for start, stop in bounds]
    heldout = [r.prompt for r in shuffled[int(cuts[-1]) :]][: cfg.eval_prompts]
    return PaperSplit(shuffled[: cfg.seed_size], pools, heldout)


def alpaca_eval_records(prompts: list[str], outputs: list[str], generator: str) -> list[dict]:
    """Generations in AlpacaEval's model-outputs format (instruction, output, generator)."""
    return [
        {"instruction": p, "output": o, "generator": generator, "dataset": "ultrafeedback_heldout"}
        for p, o in zip(prompts, outputs, strict=True)
    ]
