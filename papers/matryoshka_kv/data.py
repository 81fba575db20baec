"""Text for the toy teacher and the projections: a synthetic character corpus (brief Sec. 5),
or local files at paper scale (Alpaca json for PCA, a RedPajama-sample json for training).

The toy corpus: 28 symbols (space 0, a-z 1..26, '.' 27; vocabulary 32), a fixed lexicon of
Zipf-weighted words, and sequences in which, once 4 words exist, the next word copies an
earlier word of the same sequence with probability 0.35, so attention far back pays off.
"""

from __future__ import annotations

import json
import random
import string
from functools import lru_cache
from itertools import accumulate
from pathlib import Path

import torch

from papers.matryoshka_kv.config import CorpusConfig

ALPHABET = " " + string.ascii_lowercase + "."  # id = index: space 0, a-z 1..26, '.' 27
CHAR_ID = {ch: i for i, ch in enumerate(ALPHABET)}


def make_lexicon(cfg: CorpusConfig) -> list[str]:
    """``lexicon_size`` words of ``min_word..max_word`` letters from their own fixed seed."""
    rng = random.Random(cfg.lexicon_seed)
    return [
        "".join(
            rng.choice(string.ascii_lowercase)
            for _ in range(rng.randint(cfg.min_word, cfg.max_word))
        )
        for _ in range(cfg.lexicon_size)
    ]


@lru_cache(maxsize=4)
def zipf_cumulative_weights(n_words: int) -> tuple[float, ...]:
    """Running sums of the Zipf weights 1 / (rank + 1), as ``random.choices`` would compute
    them on every call; computed once, the draws are the same (``cum_weights=``)."""
    return tuple(accumulate(1.0 / (rank + 1) for rank in range(n_words)))


def make_sequence(lexicon: list[str], cfg: CorpusConfig, rng: random.Random) -> list[int]:
    """One sequence of exactly ``seq_len`` character ids (brief Sec. 5)."""
    cum_weights = zipf_cumulative_weights(len(lexicon))  # Zipf over the lexicon's ranks
    words: list[str] = []
    text = ""
    while len(text) < cfg.seq_len:
        if len(words) >= cfg.copy_after and rng.random() < cfg.copy_prob:
            word = rng.choice(words)  # long-range copy of an earlier word
        else:
            word = rng.choices(lexicon, cum_weights=cum_weights)[0]
        words.append(word)
        if rng.random() < cfg.period_prob:
            word += "."
        text += (" " if text else "") + word
    return [CHAR_ID[ch] for ch in text[: cfg.seq_len]]


def make_batch(
    lexicon: list[str], cfg: CorpusConfig, batch_size: int, rng: random.Random
) -> torch.Tensor:
    """(batch_size, seq_len) long tensor of fresh sequences."""
    return torch.tensor([make_sequence(lexicon, cfg, rng) for _ in range(batch_size)])


def decode(ids) -> str:
    return "".join(ALPHABET[int(i)] for i in ids)


def load_texts(path: str | Path, field: str | None = None) -> list[str]:
    """Texts of a local json / jsonl file (paper scale; nothing is downloaded).

    Alpaca json: a list of {"instruction", "input", "output"} (joined); RedPajama sample jsonl:
    one {"text": ...} per line. ``field`` picks one key instead.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; place the data set there (never downloaded)")
    raw = path.read_text()
    try:
        records = json.loads(raw)
        records = records if isinstance(records, list) else [records]
    except json.JSONDecodeError:
        records = [json.loads(line) for line in raw.splitlines() if line.strip()]
    texts = []
    for r in records:
        if field is not None:
            texts.append(str(r[field]))
        elif "text" in r:
            texts.append(str(r["text"]))
        else:
            texts.append(
                "\n".join(str(r[k]) for k in ("instruction", "input", "output") if r.get(k))
            )
    return [t for t in texts if t]
