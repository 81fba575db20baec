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


# ------------------------------------------------- real rung: LLaMA-Factory's demo sets (issue 54)
# The two files of the ``llamafactory_demo`` asset (shared/assets.py), or a folder of yours
# with the same names and layouts (data.source=llamafactory data.path=DIR).
DEMO_PAIRS_FILE = "dpo_en_demo.json"  # [{conversations: [{from, value}], chosen, rejected}]
DEMO_PROMPTS_FILE = "alpaca_en_demo.json"  # [{instruction, input, output}]
DEMO_ROLES = {"system": "system", "human": "user", "gpt": "assistant"}


@dataclass
class ChatPair:
    """A human preference pair: the conversation before the response (chat messages, role and
    content) and the preferred and dispreferred assistant responses."""

    messages: list[dict[str, str]]
    chosen: str
    rejected: str

    @property
    def single_turn(self) -> bool:
        """One user turn, with or without a system message before it."""
        return [m["role"] for m in self.messages] in (["user"], ["system", "user"])


def _json_records(path: Path) -> list:
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a JSON file ({err}); truncated or changed?") from err
    if not isinstance(records, list) or not records:
        raise ValueError(f"{path}: expected a non-empty JSON list of records")
    return records


def _demo_text(value: Any, where: str, role: str | None = None) -> str:
    """A {from, value} message's text, checked (non-empty text, a known role, ``role`` if set)."""
    if not isinstance(value, dict) or value.get("from") not in DEMO_ROLES:
        raise ValueError(f"{where}: expected {{'from': {'/'.join(DEMO_ROLES)}, 'value': text}}")
    if role is not None and value["from"] != role:
        raise ValueError(f"{where}: expected a {role!r} message, got {value['from']!r}")
    text = value.get("value")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where}: 'value' is empty or not text")
    return text


def load_demo_pairs(path: str | Path, expected: int | None = None) -> list[ChatPair]:
    """LLaMA-Factory's ``dpo_en_demo.json`` layout -> pairs; one-line ``ValueError`` naming the
    file and the record for a missing key, an unknown role or empty text, and for a record
    count other than ``expected`` (the pinned file's)."""
    path = Path(path)
    records = _json_records(path)
    if expected is not None and len(records) != expected:
        raise ValueError(f"{path}: {len(records)} records, the pinned file has {expected}")
    pairs = []
    for index, record in enumerate(records):
        where = f"{path} record {index}"
        if not isinstance(record, dict) or not {"conversations", "chosen", "rejected"} <= set(
            record
        ):
            raise ValueError(f"{where}: expected keys conversations, chosen, rejected")
        turns = record["conversations"]
        if not isinstance(turns, list) or not turns:
            raise ValueError(f"{where}: 'conversations' is not a non-empty list")
        messages = [
            {"role": DEMO_ROLES[turn.get("from")], "content": _demo_text(turn, where)}
            for turn in turns
        ]
        chosen = _demo_text(record["chosen"], f"{where} chosen", "gpt")
        rejected = _demo_text(record["rejected"], f"{where} rejected", "gpt")
        pairs.append(ChatPair(messages, chosen, rejected))
    return pairs


def load_instructions(path: str | Path, expected: int | None = None) -> list[str]:
    """LLaMA-Factory's ``alpaca_en_demo.json`` layout -> the instructions of the records with
    an empty ``input`` (an instruction that refers to its input is no prompt alone); one-line
    ``ValueError`` naming the file and record as :func:`load_demo_pairs`."""
    path = Path(path)
    records = _json_records(path)
    if expected is not None and len(records) != expected:
        raise ValueError(f"{path}: {len(records)} records, the pinned file has {expected}")
    instructions = []
    for index, record in enumerate(records):
        where = f"{path} record {index}"
        if not isinstance(record, dict) or not {"instruction", "input"} <= set(record):
            raise ValueError(f"{where}: expected keys instruction, input, output")
        text, extra = record["instruction"], record["input"]
        if not isinstance(text, str) or not text.strip() or not isinstance(extra, str):
            raise ValueError(f"{where}: 'instruction' is empty or not text")
        if not extra.strip():
            instructions.append(text)
    return instructions


@dataclass
class DemoSplit:
    """The real rung's split: labelled seed pairs, prompt-only pools, held-out human pairs."""

    seed: list[ChatPair]
    pools: list[list[str]]
    heldout: list[ChatPair]


def split_demo(pairs: list[ChatPair], instructions: list[str], cfg: DataConfig) -> DemoSplit:
    """The single-turn pairs shuffled with ``split_seed``: the first ``seed_size`` are the seed
    D_0, the rest held out for evaluation; the instructions shuffled with it too, cut into one
    fresh pool per iteration (``iteration_sizes``). ``ValueError`` naming what is short."""
    singles = [p for p in pairs if p.single_turn]
    if len(singles) <= cfg.seed_size:
        raise ValueError(
            f"data.seed_size={cfg.seed_size}: the pairs hold {len(singles)} single-turn pairs; "
            "at least one must stay held out for evaluation"
        )
    rng = np.random.default_rng(cfg.split_seed)
    shuffled = [singles[i] for i in rng.permutation(len(singles))]
    needed = sum(cfg.iteration_sizes)
    if needed > len(instructions):
        raise ValueError(
            f"data.iteration_sizes={list(cfg.iteration_sizes)}: {needed} prompts needed, the "
            f"instructions hold {len(instructions)} (those without an input)"
        )
    prompts = [instructions[i] for i in rng.permutation(len(instructions))]
    cuts = np.cumsum([0, *cfg.iteration_sizes])
    pools = [prompts[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    heldout = shuffled[cfg.seed_size :][: cfg.heldout_pairs]  # None: all of them
    return DemoSplit(shuffled[: cfg.seed_size], pools, heldout)
