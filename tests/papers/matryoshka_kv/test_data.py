"""The toy corpus and the paper-scale text readers (brief Sec. 5, 6)."""

from __future__ import annotations

import json
import random

import pytest

from papers.matryoshka_kv.config import CorpusConfig
from papers.matryoshka_kv.data import (
    ALPHABET,
    decode,
    load_texts,
    make_batch,
    make_lexicon,
    make_sequence,
)

CFG = CorpusConfig()


def test_lexicon_is_fixed_and_words_have_the_configured_lengths():
    lexicon = make_lexicon(CFG)
    assert lexicon == make_lexicon(CFG) and len(lexicon) == CFG.lexicon_size
    assert all(CFG.min_word <= len(w) <= CFG.max_word and w.isalpha() for w in lexicon)


def test_sequences_are_128_symbols_of_the_28_letter_alphabet_and_deterministic():
    lexicon = make_lexicon(CFG)
    batch = make_batch(lexicon, CFG, 8, random.Random("x"))
    assert batch.shape == (8, CFG.seq_len)
    assert int(batch.max()) < len(ALPHABET) == 28 and int(batch.min()) >= 0
    assert (batch == make_batch(lexicon, CFG, 8, random.Random("x"))).all()


def test_sequences_copy_earlier_words():
    lexicon = make_lexicon(CFG)
    rng = random.Random(0)
    repeats = 0
    for _ in range(50):
        words = decode(make_sequence(lexicon, CFG, rng)).replace(".", "").split()[:-1]
        repeats += len(words) - len(set(words))
    assert repeats > 50  # the 0.35 copy rule (plus Zipf repeats) makes repeats common


def test_load_texts_reads_alpaca_json_and_jsonl(tmp_path):
    alpaca = tmp_path / "alpaca.json"
    alpaca.write_text(json.dumps([{"instruction": "Say hi", "input": "", "output": "hi"}]))
    assert load_texts(alpaca) == ["Say hi\nhi"]
    redpajama = tmp_path / "sample.jsonl"
    redpajama.write_text('{"text": "a b"}\n{"text": "c"}\n')
    assert load_texts(redpajama) == ["a b", "c"]
    with pytest.raises(FileNotFoundError, match="never downloaded"):
        load_texts(tmp_path / "absent.json")
