"""Tests of papers/nupa/tokenizer.py: brief `nupa.md` Sec. 3.9 and Sec. 7 item 8."""

from __future__ import annotations

import itertools
import random

import pytest
import torch

from papers.nupa.tokenizer import (
    BOS,
    EOS,
    EQUALS,
    IGNORE_INDEX,
    OPERATOR,
    PAD,
    PART_SEP,
    REVERSES,
    SPLITS,
    NumberTokenizer,
    max_answer_tokens,
)

EXAMPLES = [
    ("123", "Integer"),
    ("12.05", "Float"),
    ("3/47", "Fraction"),
    ("1.203e15", "ScientificNotation"),
    ("7", "int"),
]


def pieces(tok: NumberTokenizer, ids: list[int]) -> list[str]:
    """Token strings with the part separator shown as '|'."""
    return ["|" if t == PART_SEP else tok.token_string(t) for t in ids]


# ---------------------------------------------------------------- vocabulary


def test_token_ids_match_the_brief_formula():
    tok = NumberTokenizer(3)
    assert tok.token_id("7") == 13
    assert tok.token_id("07") == 23
    assert tok.token_id("345") == 461
    assert tok.token_id("0") == 6
    assert tok.token_id("999") == tok.vocab_size - 1


@pytest.mark.parametrize(("k", "size"), [(1, 16), (2, 116), (3, 1116)])
def test_vocab_sizes(k, size):
    assert NumberTokenizer(k).vocab_size == size
    # Hints add one block of max_index ids per possible part (3, for ScientificNotation).
    assert NumberTokenizer(k, index_hints=True, max_index=30).vocab_size == size + 90


@pytest.mark.parametrize("k", [1, 2, 3])
def test_token_string_inverts_token_id_over_the_whole_vocab(k):
    tok = NumberTokenizer(k, index_hints=True, max_index=4)
    digit_strings = [
        "".join(d) for n in range(1, k + 1) for d in itertools.product("0123456789", repeat=n)
    ]
    ids = [tok.token_id(s) for s in digit_strings]
    assert ids == list(range(6, 6 + len(digit_strings)))  # dense, ordered by length then value
    assert [tok.token_string(i) for i in ids] == digit_strings
    assert tok.token_string(BOS) == "<BOS>" and tok.token_string(EQUALS) == "="
    assert tok.token_string(tok.hint_id(2, 3)) == "<h2:3>"
    assert tok.hint_id(2, 3) == tok.vocab_size - 1
    with pytest.raises(ValueError):
        tok.token_string(tok.vocab_size)


def test_token_id_rejects_bad_strings():
    tok = NumberTokenizer(2)
    for bad in ["", "123", "1a", "-1", "١"]:
        with pytest.raises(ValueError):
            tok.token_id(bad)


# ---------------------------------------------------------------- chunking


def test_right_split_chunks_integers_from_the_right():
    tok = NumberTokenizer(3)
    assert pieces(tok, tok.encode_number("12345", "Integer")) == ["12", "345"]
    assert pieces(tok, tok.encode_number("123456", "Integer")) == ["123", "456"]
    left = NumberTokenizer(3, split="left")
    assert pieces(left, left.encode_number("12345", "Integer")) == ["123", "45"]


def test_float_int_part_right_decimals_left():
    tok = NumberTokenizer(2)
    assert pieces(tok, tok.encode_number("12.345", "Float")) == ["12", "|", "34", "5"]
    assert pieces(tok, tok.encode_number("123.45", "Float")) == ["1", "23", "|", "45"]
    sci = tok.encode_number("1.203e15", "ScientificNotation")
    assert pieces(tok, sci) == ["1", "|", "20", "3", "|", "15"]
    assert pieces(tok, tok.encode_number("345/12", "Fraction")) == ["3", "45", "|", "12"]


def test_random_split_is_seeded_and_bounded():
    tok = NumberTokenizer(3, split="random")
    text = "12345678901234567890"
    a = tok.encode_number(text, "Integer", rng=random.Random(5))
    b = tok.encode_number(text, "Integer", rng=random.Random(5))
    assert a == b
    draws = {tuple(tok.encode_number(text, "Integer", rng=random.Random(s))) for s in range(20)}
    assert len(draws) > 1  # the split does change with the seed
    for ids in draws:
        strs = pieces(tok, list(ids))
        assert "".join(strs) == text and all(1 <= len(s) <= 3 for s in strs)
    # Decimals stay left-chunked under split="random" (official default).
    ids = tok.encode_number("0.1234567", "Float", rng=random.Random(0))
    assert pieces(tok, ids) == ["0", "|", "123", "456", "7"]


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("reverse", REVERSES)
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("hints", [False, True])
def test_round_trip_all_types(k, reverse, split, hints):
    tok = NumberTokenizer(k, split=split, reverse=reverse, index_hints=hints)
    rng = random.Random(0)
    cases = [*EXAMPLES, ("1234567.0123456", "Float"), ("0.0", "Float"), ("0/1", "Fraction")]
    for text, type_name in cases:
        ids = tok.encode_number(text, type_name, rng=rng)
        assert all(0 <= t < tok.vocab_size for t in ids)
        assert tok.decode_number(ids, type_name) == text
        assert tok.decode_number([*ids, EOS, 9, 9], type_name) == text  # stops at EOS


def test_round_trip_random_numbers():
    gen = random.Random(1)
    for _ in range(300):
        k = gen.randint(1, 3)
        tok = NumberTokenizer(
            k,
            split=gen.choice(SPLITS),
            reverse=gen.choice(REVERSES),
            index_hints=gen.random() < 0.5,
        )
        ints = [str(gen.randint(0, 10 ** gen.randint(1, 12))) for _ in range(3)]
        dec = "".join(gen.choice("0123456789") for _ in range(gen.randint(1, 9)))
        for text, type_name in [
            (ints[0], "Integer"),
            (f"{ints[0]}.{dec}", "Float"),
            (f"{ints[0]}/{ints[1]}" if int(ints[1]) else f"{ints[0]}/1", "Fraction"),
            (f"{gen.randint(1, 9)}.{dec}e{gen.randint(0, 99)}", "ScientificNotation"),
        ]:
            ids = tok.encode_number(text, type_name, rng=gen)
            assert tok.decode_number(ids, type_name) == text, (tok, text)


# ---------------------------------------------------------------- reversal


def test_reverse_modes_on_a_float_k1():
    strings = {
        mode: "".join(pieces(NumberTokenizer(1, reverse=mode), _enc(mode, "12.345", "Float")))
        for mode in REVERSES
    }
    assert strings == {
        "none": "12|345",
        "int": "21|345",
        "dec": "12|543",
        "each": "21|543",
        "total": "543|21",
    }


def _enc(mode: str, text: str, type_name: str) -> list[int]:
    return NumberTokenizer(1, reverse=mode).encode_number(text, type_name)


def test_reverse_modes_on_other_types():
    tok = NumberTokenizer(1)

    def show(mode: str, text: str, type_name: str) -> str:
        return "".join(pieces(tok, _enc(mode, text, type_name)))

    assert show("int", "3/47", "Fraction") == "3|74"  # numerator and denominator are int-like
    assert show("dec", "3/47", "Fraction") == "3|47"
    assert show("dec", "120", "Integer") == "120"
    assert show("int", "1.203e15", "ScientificNotation") == "1|203|51"
    assert show("dec", "1.203e15", "ScientificNotation") == "1|302|15"
    # "total" writes the whole string back to front.
    assert show("total", "1.203e15", "ScientificNotation") == "51|302|1"
    assert show("total", "3/47", "Fraction") == "74|3"
    assert NumberTokenizer(1, reverse="no").reverse == "none"  # the official spelling


def test_reverse_then_split_follows_the_written_order():
    # Official order: reverse the digits, then chunk the written string in the split direction.
    tok = NumberTokenizer(3, reverse="int")
    assert pieces(tok, tok.encode_number("12345", "Integer")) == ["54", "321"]
    tok = NumberTokenizer(2, reverse="dec")
    assert pieces(tok, tok.encode_number("0.12345", "Float")) == ["0", "|", "54", "32", "1"]


# ---------------------------------------------------------------- index hints


def _hints(tok: NumberTokenizer, ids: list[int]) -> list[tuple[str, str]]:
    """(hint, digit) pairs; checks that every digit token is preceded by exactly one hint."""
    out = []
    it = iter(t for t in ids if t != PART_SEP)
    for hint, digit in zip(it, it, strict=True):
        assert tok.is_hint_token(hint) and tok.is_digit_token(digit)
        out.append((tok.token_string(hint), tok.token_string(digit)))
    return out


def test_index_hints_count_from_the_anchor_of_each_part():
    tok = NumberTokenizer(1, index_hints=True)
    # Integer-like parts: 0 = units; decimals: 0 = first decimal.
    assert _hints(tok, tok.encode_number("12.345", "Float")) == [
        ("<h0:1>", "1"),
        ("<h0:0>", "2"),
        ("<h1:0>", "3"),
        ("<h1:1>", "4"),
        ("<h1:2>", "5"),
    ]
    tok3 = NumberTokenizer(3, index_hints=True)
    # A hint names the position of the least significant digit of its token.
    assert _hints(tok3, tok3.encode_number("12345", "Integer")) == [
        ("<h0:3>", "12"),
        ("<h0:0>", "345"),
    ]
    tok2 = NumberTokenizer(2, index_hints=True)
    assert _hints(tok2, tok2.encode_number("1.345", "Float")) == [
        ("<h0:0>", "1"),
        ("<h1:1>", "34"),
        ("<h1:2>", "5"),
    ]


def test_index_hints_follow_the_digit_under_reversal():
    tok = NumberTokenizer(1, index_hints=True, reverse="total")
    # Parts are numbered in written order (official layout): the exponent is part 0 here.
    assert _hints(tok, tok.encode_number("1.23e45", "ScientificNotation")) == [
        ("<h0:0>", "5"),
        ("<h0:1>", "4"),
        ("<h1:1>", "3"),
        ("<h1:0>", "2"),
        ("<h2:0>", "1"),
    ]
    tok3 = NumberTokenizer(3, index_hints=True, reverse="int")
    assert _hints(tok3, tok3.encode_number("12345", "Integer")) == [
        ("<h0:0>", "54"),
        ("<h0:2>", "321"),
    ]


def test_index_hints_limits_and_decoding():
    tok = NumberTokenizer(1, index_hints=True, max_index=4)
    tok.encode_number("1234", "Integer")
    with pytest.raises(ValueError, match="max_index"):
        tok.encode_number("12345", "Integer")
    ids = tok.encode_number("12.34", "Float")
    digits_only = [t for t in ids if not tok.is_hint_token(t)]
    assert tok.decode_number(digits_only, "Float") == "12.34"  # hints are optional on decode
    # A tokenizer without hints treats hint ids as out of vocabulary.
    assert NumberTokenizer(1).decode_number(ids, "Float") == ""


# ---------------------------------------------------------------- samples and labels


def test_encode_sample_layout_and_answer_start():
    tok = NumberTokenizer(1)
    ids, start = tok.encode_sample("12", "5", "17", "Integer", "Integer", "Integer")
    d = tok.token_id
    assert ids == [BOS, d("1"), d("2"), OPERATOR, d("5"), EQUALS, d("1"), d("7"), EOS]
    assert start == 6 and ids[start - 1] == EQUALS
    prompt, pstart = tok.encode_sample("12", "5", None, "Integer", "Integer", "Integer")
    assert prompt == ids[:start] and pstart == len(prompt)
    # One-input task: no OPERATOR, no b.
    ids, start = tok.encode_sample("12.3", None, "3", "Float", "none", "int")
    assert ids == [BOS, d("1"), d("2"), PART_SEP, d("3"), EQUALS, d("3"), EOS]
    assert OPERATOR not in ids and start == 6
    assert tok.encode_sample("12.3", None, "3", "Float", None, "int") == (ids, start)
    tok3 = NumberTokenizer(3)
    ids, start = tok3.encode_sample("12345", "6", "12351", "Integer", "Integer", "Integer")
    assert pieces(tok3, ids[start:-1]) == ["12", "351"]


def test_labels_mask_the_prompt_only():
    tok = NumberTokenizer(2)
    ids, start = tok.encode_sample("1.5", "2.25", "3.75", "Float", "Float", "Float")
    labels = tok.labels_for(ids, start)
    assert len(labels) == len(ids)
    assert labels[:start] == [IGNORE_INDEX] * start
    assert labels[start:] == ids[start:] and labels[-1] == EOS
    with pytest.raises(ValueError):
        tok.labels_for(ids, len(ids) + 1)


def test_pad_zeros_pads_both_inputs_part_by_part():
    tok = NumberTokenizer(1, pad_zeros=True)
    ids, start = tok.encode_sample("12.5", "3.125", "15.625", "Float", "Float", "Float")
    op = ids.index(OPERATOR)
    a = tok.decode_number(ids[1:op], "Float")
    b = tok.decode_number(ids[op + 1 : start - 1], "Float")
    assert (a, b) == ("12.500", "03.125")
    assert tok.decode_number(ids[start:], "Float") == "15.625"  # the answer is never padded
    ids, start = tok.encode_sample("12345", "7", "12352", "Integer", "Integer", "Integer")
    assert "".join(pieces(tok, ids[1 : start - 1])) == "12345<OP>00007"
    # Padding comes before reversal and chunking: leading zeros end up at the back.
    tok = NumberTokenizer(2, pad_zeros=True, reverse="int")
    ids, start = tok.encode_sample("123", "4", "127", "Integer", "Integer", "Integer")
    assert pieces(tok, ids[1 : start - 1]) == ["3", "21", "<OP>", "4", "00"]
    # Without the option, nothing is padded.
    ids, _ = NumberTokenizer(1).encode_sample("12.5", "3.125", None, "Float", "Float", "Float")
    assert len(ids) == 1 + 4 + 1 + 5 + 1


# ---------------------------------------------------------------- decoding garbage


@pytest.mark.parametrize(
    ("ids", "type_name"),
    [
        ([], "Integer"),
        ([EOS], "Integer"),
        ([PAD, 7], "Integer"),
        ([7, PART_SEP, 8], "Integer"),  # a separator the type does not have
        ([7, 8], "Float"),  # a missing separator
        ([7, PART_SEP, PART_SEP, 8], "Float"),  # an empty part
        ([PART_SEP, 8], "Float"),
        ([7, PART_SEP, 8, PART_SEP], "ScientificNotation"),
        ([7, BOS, 8], "Integer"),  # specials in the middle
        ([7, OPERATOR, 8], "Integer"),
        ([7, EQUALS, 8], "Integer"),
        ([7, 10_000], "Integer"),  # out of vocabulary
        ([7, -3], "Integer"),
        ([7, 1.5], "Integer"),
        ([7, "8"], "Integer"),
        ([7, None], "Integer"),
        ([7, PART_SEP, 6], "Fraction"),  # zero denominator
        (torch.tensor([[7, 8]]), "Integer"),  # a 2-D tensor row by mistake
    ],
)
def test_decode_garbage_returns_empty(ids, type_name):
    for k in (1, 3):
        assert NumberTokenizer(k).decode_number(ids, type_name) == ""


def test_decode_accepts_tensors_and_stops_at_pad():
    tok = NumberTokenizer(1)
    ids = tok.encode_number("12.05", "Float")
    assert tok.decode_number(torch.tensor([*ids, PAD, PAD]), "Float") == "12.05"
    assert tok.decode_number([*ids, PAD, BOS], "Float") == "12.05"
    full, _ = tok.encode_sample("1", "2", "3", "Integer", "Integer", "Integer")
    assert tok.decode_answer(full, "Integer") == "3"
    assert tok.decode_answer(full[:1], "Integer") == ""
    # Digits are kept as written: no zero stripping, no reduction.
    zeros = [tok.token_id(c) for c in "007"]
    assert tok.decode_number(zeros, "Integer") == "007"


# ---------------------------------------------------------------- batches


def test_training_batch_is_right_padded_with_masked_labels():
    tok = NumberTokenizer(1)
    samples = [("1", "2", "3"), ("123", "456", "579")]
    batch = tok.batch_encode(samples, "Integer", "Integer", "Integer")
    short, long_ = (tok.encode_sample(*s, "Integer", "Integer", "Integer") for s in samples)
    width = len(long_[0])
    assert batch["input_ids"][0] == short[0] + [PAD] * (width - len(short[0]))
    assert batch["attention_mask"][0] == [1] * len(short[0]) + [0] * (width - len(short[0]))
    assert batch["labels"][0] == tok.labels_for(*short) + [IGNORE_INDEX] * (width - len(short[0]))
    assert batch["input_ids"][1] == long_[0]
    with pytest.raises(ValueError):
        tok.batch_encode([("1", "2", None)], "Integer", "Integer", "Integer")


def test_generation_batch_is_left_padded():
    tok = NumberTokenizer(3)
    samples = [("1", "2", "3"), ("123456", "7", None)]
    batch = tok.batch_encode(
        samples, "Integer", "Integer", "Integer", generation=True, return_tensors="pt"
    )
    assert set(batch) == {"input_ids", "attention_mask"}
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids.dtype == torch.long and ids.shape == mask.shape
    assert (ids[:, -1] == EQUALS).all()  # every prompt ends in the last column
    prompt0, _ = tok.encode_sample("1", "2", None, "Integer", "Integer", "Integer")
    n_pad = ids.shape[1] - len(prompt0)
    assert ids[0].tolist() == [PAD] * n_pad + prompt0
    assert mask[0].tolist() == [0] * n_pad + [1] * len(prompt0)
    assert mask[1].tolist() == [1] * ids.shape[1]


def test_pad_batch_options():
    enc = [([BOS, 7, EQUALS, 8, EOS], 3), ([BOS, EQUALS], 2)]
    out = NumberTokenizer.pad_batch(enc, side="left", labels=True)
    assert out["input_ids"][1] == [PAD, PAD, PAD, BOS, EQUALS]
    assert out["labels"][0] == [IGNORE_INDEX] * 3 + [8, EOS]
    assert out["labels"][1] == [IGNORE_INDEX] * 5
    with pytest.raises(ValueError):
        NumberTokenizer.pad_batch([])
    with pytest.raises(ValueError):
        NumberTokenizer.pad_batch(enc, side="middle")
    with pytest.raises(ValueError):
        NumberTokenizer.pad_batch(enc, return_tensors="np")


# ---------------------------------------------------------------- limits and validation


def test_max_answer_tokens_bounds_real_encodings():
    assert max_answer_tokens(6, 1) == 7  # 6 digits + EOS
    assert max_answer_tokens(6, 3) == 3
    assert max_answer_tokens(6, 3, random_split=True) == 7
    assert max_answer_tokens(5, 3, n_parts=2) == 5  # e.g. 1|2345 -> 1 | 2 345, EOS
    assert max_answer_tokens(6, 2, index_hints=True) == 7
    gen = random.Random(3)
    for _ in range(200):
        k = gen.randint(1, 3)
        tok = NumberTokenizer(k, split=gen.choice(SPLITS), index_hints=gen.random() < 0.5)
        text = f"{gen.randint(0, 10**6)}.{gen.randint(0, 10**6)}"
        n_digits = len(text) - 1
        ids = tok.encode_number(text, "Float", rng=gen)
        assert len(ids) + 1 <= tok.max_answer_tokens(n_digits, "Float")
    with pytest.raises(ValueError):
        max_answer_tokens(2, 1, n_parts=3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k": 0},
        {"k": -1},
        {"k": 1.0},
        {"k": "2"},
        {"k": True},
        {"k": 1, "split": "middle"},
        {"k": 1, "reverse": "backwards"},
        {"k": 1, "pad_zeros": "yes"},
        {"k": 1, "index_hints": 1},
        {"k": 1, "max_index": 0},
    ],
)
def test_constructor_validates_options(kwargs):
    with pytest.raises(ValueError):
        NumberTokenizer(**kwargs)


def test_encode_validates_inputs():
    tok = NumberTokenizer(2)
    for text, type_name in [("12.5", "Integer"), ("12", "Float"), ("-3", "Integer"), ("", "int")]:
        with pytest.raises(ValueError, match="well-formed"):
            tok.encode_number(text, type_name)
    with pytest.raises(ValueError, match="unknown number type"):
        tok.encode_number("1", "Complex")
    with pytest.raises(ValueError, match="rng"):
        NumberTokenizer(2, split="random").encode_number("123", "Integer")
    with pytest.raises(ValueError, match="pad_to"):
        tok.encode_number("1.5", "Float", pad_to=[3])
    assert pieces(tok, tok.encode_number("1.5", "Float", pad_to=[3, 2])) == [
        "0",
        "01",
        "|",
        "50",
    ]
    with pytest.raises(ValueError, match="type_b"):
        tok.encode_sample("1", None, "1", "Integer", "Integer", "Integer")
    with pytest.raises(ValueError, match="type_b"):
        tok.encode_sample("1", "2", "3", "Integer", "none", "Integer")
