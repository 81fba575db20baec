"""NUPA benchmark: pair datasets, decontamination, test subsampling, the oracle over the toy run."""

from __future__ import annotations

import copy
import json
from collections import Counter, defaultdict

import pytest

from papers.nupa import generate
from papers.nupa.benchmark import (
    build_benchmark,
    generate_pairs,
    iter_benchmark,
    sample_string,
    write_benchmark,
)
from papers.nupa.oracle import check_sample, verify_benchmark, verify_sample
from papers.nupa.tasks import COMBINATIONS, OFFICIAL_VARIANTS, VARIANTS
from shared.config import compose


@pytest.fixture(scope="module")
def toy():
    return compose("nupa", "toy").benchmark


@pytest.fixture(scope="module")
def records(toy):
    return build_benchmark(toy)


def pairs_of(cfg, i: int) -> dict[str, list]:
    spec = cfg.datasets[i]
    return generate_pairs(spec, cfg.n_train, cfg.n_valid, cfg.n_test, cfg.master_seed + spec.index)


def as_text(pairs) -> list[tuple[str, str]]:
    return [(str(a), str(b)) for a, b in pairs]


# --- brief Sec. 7.9 / 5a: the whole toy benchmark agrees with the oracle -------------------------
def test_toy_benchmark_covers_everything_and_agrees_with_the_oracle(toy, records):
    assert (toy.n_train, toy.n_valid, toy.n_test, toy.master_seed) == (20, 5, 5, 208171)
    assert len(toy.datasets) == 10
    names = {r["task"] for r in records}
    assert names == set(VARIANTS) and len(names) == 50
    assert set(OFFICIAL_VARIANTS) <= names
    assert {VARIANTS[n].combination for n in names} == COMBINATIONS and len(COMBINATIONS) == 41
    per_split = Counter((r["task"], r["split"]) for r in records)
    assert all(per_split[(n, s)] > 0 for n in names for s in ("train", "valid", "test"))
    n_checked, n_agree, failures = verify_benchmark(records)
    assert n_checked == len(records) > 40000
    assert failures == [] and n_agree == n_checked


def test_record_format(records):
    keys = {"task", "split", "digit", "a", "b", "question", "answer", "type_out"}
    for r in records[::97]:
        assert set(r) == keys
        v = VARIANTS[r["task"]]
        assert r["type_out"] == v.type_out and r["split"] in ("train", "valid", "test")
        assert r["question"].endswith(" = ") and (r["b"] is None) == (v.type_b == "none")
        assert isinstance(r["digit"], int) and 1 <= r["digit"] <= v.max_length


def test_digits_span_the_configured_lengths(records):
    digits = defaultdict(set)
    for r in records:
        if r["split"] == "test":
            digits[r["task"]].add(r["digit"])
    assert max(digits["add_Integer_Integer_Integer"]) == 20
    assert max(digits["max_Float_Float_Float"]) == 100
    assert min(digits["max_Integer_Integer_Integer"]) == 5
    assert min(digits["add_Fraction_Fraction_Fraction"]) == 1


# --- the oracle catches corrupted answers --------------------------------------------------------
def find(records, task: str, pred=lambda r: True) -> dict:
    return copy.deepcopy(next(r for r in records if r["task"] == task and pred(r)))


def corrupt_last_digit(text: str) -> str:
    """Change the last digit d to (d + 1) % 10: the value always changes."""
    return text[:-1] + str((int(text[-1]) + 1) % 10)


def test_oracle_catches_corrupted_answers(records):
    for r in records[::50]:
        assert not verify_sample(dict(r, answer=corrupt_last_digit(r["answer"]))), r
        assert not verify_sample(dict(r, answer=r["answer"] + "0")), r
    frac = find(records, "add_Fraction_Fraction_Fraction", lambda r: r["answer"] != "0/1")
    num, den = frac["answer"].split("/")
    assert not verify_sample(dict(frac, answer=f"{2 * int(num)}/{2 * int(den)}"))  # unreduced
    assert "not reduced" in check_sample(dict(frac, answer=f"{3 * int(num)}/{3 * int(den)}"))
    assert not verify_sample(dict(frac, answer=num))  # wrong type


def test_oracle_catches_non_canonical_forms():
    q = "Directly ... Get the maximal number: 9.11 and 9.9 = "
    good = {
        "task": "max_Float_Float_Float",
        "a": "9.11",
        "b": "9.9",
        "question": q,
        "answer": "9.9",
        "digit": 2,
        "type_out": "Float",
    }
    assert verify_sample(good)
    assert not verify_sample(dict(good, answer="9.90"))  # trailing zero
    assert not verify_sample(dict(good, answer="9.11"))  # the wrong number
    assert not verify_sample(dict(good, answer="09.9"))
    assert not verify_sample(dict(good, digit=3))
    assert not verify_sample(dict(good, question="... 9.11 and 9.8 = "))
    sci = {
        "task": "add_ScientificNotation_ScientificNotation_ScientificNotation",
        "a": "1.2e3",
        "b": "4.5e1",
        "answer": "1.245e3",
    }
    assert verify_sample(sci)
    assert not verify_sample(dict(sci, answer="12.45e2"))  # mantissa not normalised
    assert not verify_sample(dict(sci, answer="1.2450e3"))
    assert not verify_sample(dict(sci, answer="1.245E3"))
    assert not verify_sample(dict(sci, a="12.0e2"))  # non-canonical input
    sig = {
        "task": "sig_Integer_int_ScientificNotation",
        "a": "120345",
        "b": "3",
        "answer": "1.20e5",
    }
    assert verify_sample(sig)
    assert not verify_sample(dict(sig, answer="1.2e5"))  # trailing zero of sig kept
    assert not verify_sample(dict(sig, answer="1.203e5"))
    assert not verify_sample(dict(sig, b="1", answer="1e5"))
    assert verify_sample(
        {"task": "sig_Integer_int_ScientificNotation", "a": "996", "b": "2", "answer": "1.0e3"}
    )
    assert not verify_sample(
        {"task": "sig_Integer_int_ScientificNotation", "a": "996", "b": "2", "answer": "1.000e2"}
    )  # official bug (ii)
    assert verify_sample(
        {"task": "sig_Float_int_ScientificNotation", "a": "6.55", "b": "2", "answer": "6.6e0"}
    )
    sub = {"task": "sub_Integer_Integer_Integer", "a": "3", "b": "70", "answer": "67"}
    assert "a < b" in check_sample(sub)  # preprocessing guarantee violated
    assert verify_sample(dict(sub, a="70", b="3"))
    assert not verify_sample(
        {"task": "floordiv_Integer_Integer_Integer", "a": "5", "b": "0", "answer": "0"}
    )
    assert not verify_sample(
        {"task": "nonsense_Integer_Integer_Integer", "a": "1", "b": "1", "answer": "2"}
    )


# --- brief Sec. 3.3 / 7.7: pair datasets ---------------------------------------------------------
def test_pairs_match_the_official_generator(toy):
    # Fingerprints of the official DataGenerator at toy size (checked against the official code).
    p = pairs_of(toy, 0)
    assert as_text(p["train"][:3]) == [("2", "6"), ("5", "4"), ("8", "3")]
    assert as_text(p["test"][:2]) == [("508", "2"), ("92", "355")]
    assert {k: len(v) for k, v in p.items()} == {"train": 159, "valid": 90, "test": 90}
    p = pairs_of(toy, 2)
    assert as_text(p["train"][:2]) == [("1/4", "4/1"), ("1/2", "1/4")]
    assert as_text(p["test"][:2]) == [("8/9", "7/1"), ("7/4", "4/3")]
    p = pairs_of(toy, 9)
    assert as_text(p["test"][:2]) == [("2.446e20", "2.9e20"), ("6.99e94", "6.418e94")]
    assert {k: len(v) for k, v in p.items()} == {"train": 400, "valid": 490, "test": 490}


def test_pair_dataset_invariants(toy):
    for i, spec in enumerate(toy.datasets):
        p = pairs_of(toy, i)
        train, valid, test = (set(as_text(p[s])) for s in ("train", "valid", "test"))
        assert not train & test and not train & valid and not valid & test
        assert len(test) == len(p["test"])  # no duplicates
        for a, b in p["valid"] + p["test"]:
            long, short = max(a.digit, b.digit), min(a.digit, b.digit)
            assert short >= int(0.5 * long)
            assert spec.test_lengths[0] <= long <= spec.test_lengths[1]
        per_length = Counter(max(a.digit, b.digit) for a, b in p["test"])
        lo, hi = spec.test_lengths
        assert set(per_length) == set(range(lo, hi + 1))
        assert max(per_length.values()) <= toy.n_test
        for a, b in p["train"]:
            assert spec.train_lengths[0] <= max(a.digit, b.digit) <= spec.train_lengths[1]
        if spec.same_len:
            assert all(a.digit == b.digit for a, b in p["train"] + p["test"])


def test_pairs_are_deterministic_and_seed_dependent(toy):
    spec = toy.datasets[5]
    one = generate_pairs(spec, 20, 5, 5, 123)
    two = generate_pairs(spec, 20, 5, 5, 123)
    other = generate_pairs(spec, 20, 5, 5, 124)
    assert {k: as_text(v) for k, v in one.items()} == {k: as_text(v) for k, v in two.items()}
    assert as_text(one["train"]) != as_text(other["train"])


def test_harder_compare_shares_prefixes(toy):
    plain, harder = pairs_of(toy, 5), pairs_of(toy, 8)  # Float compare vs compare_harder
    same_int = [
        sum(a.int_part == b.int_part for a, b in p["test"]) / len(p["test"])
        for p in (plain, harder)
    ]
    assert same_int[0] < 0.1 and same_int[1] > 0.5  # about 70 % share the int part
    sci = pairs_of(toy, 9)["test"]
    assert sum(a.exponent == b.exponent for a, b in sci) / len(sci) > 0.6  # about 80 %
    ints = pairs_of(toy, 7)["test"]
    assert sum(str(a)[0] == str(b)[0] for a, b in ints) / len(ints) > 0.6


# --- decontamination and test subsampling (Sec. 3.7, 6) ------------------------------------------
def test_decontamination(records):
    texts = defaultdict(lambda: defaultdict(list))
    for r in records:
        texts[r["task"]][r["split"]].append(sample_string(r))
    for splits in texts.values():
        test, valid, train = set(splits["test"]), set(splits["valid"]), set(splits["train"])
        assert len(test) == len(splits["test"])
        assert not test & valid and not test & train and not valid & train


def test_test_subsampling(toy):
    cfg = copy.deepcopy(toy)
    cfg.test_samples_per_digit = 2
    names = ["add_Integer_Integer_Integer", "length_Float_none_int"]
    small = build_benchmark(cfg, names)
    again = build_benchmark(cfg, names)
    full = build_benchmark(toy, names)
    assert small == again
    per_digit = Counter((r["task"], r["digit"]) for r in small if r["split"] == "test")
    assert max(per_digit.values()) == 2
    full_test = [r for r in full if r["split"] == "test"]
    assert {(r["task"], r["digit"]) for r in full_test} == set(per_digit)
    assert all(r in full_test for r in small if r["split"] == "test")
    assert [r for r in small if r["split"] != "test"] == [r for r in full if r["split"] != "test"]


def test_iter_benchmark_rejects_unknown_tasks(toy):
    with pytest.raises(KeyError):
        list(iter_benchmark(toy, ["add_Float_Float_Fraction"]))


# --- files and the command line ------------------------------------------------------------------
def test_write_benchmark(tmp_path, toy, records):
    manifest = write_benchmark(records, tmp_path, config=toy)
    assert manifest["n_tasks"] == 50 and manifest["seed"] == 208171
    assert sum(manifest["totals"].values()) == len(records)
    saved = json.loads((tmp_path / "manifest.json").read_text())
    assert saved["counts"]["add_Integer_Integer_Integer"]["valid"] > 0
    assert saved["config"]["datasets"][7]["harder_compare"] is True
    lines = (tmp_path / "sig_Float_int_ScientificNotation.jsonl").read_text().splitlines()
    assert len(lines) == sum(saved["counts"]["sig_Float_int_ScientificNotation"].values())
    assert verify_sample(json.loads(lines[0]))


def test_generate_cli_with_verification(tmp_path, capsys):
    assert generate.main(["--scale", "smoke", "--out", str(tmp_path), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "50 tasks" in out and "samples agree" in out
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    v = manifest["verification"]
    assert v["checked"] == v["agree"] == sum(manifest["totals"].values())
    assert len(list(tmp_path.glob("*.jsonl"))) == 50
