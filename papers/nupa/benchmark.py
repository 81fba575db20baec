"""NUPA benchmark generation: number-pair datasets (Sec. 3.3) and the text benchmark (Sec. 3.7).

1. :func:`generate_pairs` draws the (a, b) pairs of one pair dataset per length, with its
   train / valid / test split, exactly like the official generator (one ``random.Random`` per
   dataset, same call order).
2. :func:`iter_benchmark` turns every dataset into the samples of the variants built on it
   (preprocess -> ground truth -> text), decontaminates them per task (the text of a test sample
   never appears in valid or train, a valid one never in train) and subsamples the test split
   for LLM evaluation (Sec. 6).
3. :func:`write_benchmark` streams the records into ``<folder>/<task>.jsonl`` plus a
   ``manifest.json``.

A record is a dict ``{"task", "split", "digit", "a", "b", "question", "answer", "type_out"}``:
``question`` is ``instruction + "<a><op><b>" + " = "`` and the sample text is
``question + answer``; ``a``/``b`` are the preprocessed inputs as strings (``b`` is the int
parameter as a string for get_digit/count/sig, None for one-input tasks).
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from papers.nupa.numbers import (
    Float,
    Integer,
    Number,
    ScientificNotation,
    number_type,
)
from papers.nupa.tasks import (
    VARIANTS,
    Variant,
    get_variant,
    ground_truth,
    preprocess,
    question_text,
    sample_digit,
)

SPLITS = ("train", "valid", "test")
PROB_FLOAT_KEEP = 0.3  # harder compare, Float: probability to leave the pair alone
PROB_SCIENT_OWN_EXP = 0.2  # harder compare, Scientific: probability b keeps its own exponent
Pair = tuple[Number, Number]


def _get(obj, key: str, default=None):
    """Attribute or mapping access (dataclasses, DictConfig and plain dicts all work)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


# --- pair datasets (Sec. 3.3) --------------------------------------------------------------------
def make_harder(a: Number, b: Number, rng: random.Random) -> Pair:
    """Make b share a prefix with a, so that comparing them needs more digits."""
    if isinstance(a, Integer):
        if a.digit != b.digit:
            raise ValueError("harder compare between Integers needs same_len=True")
        j = rng.randint(0, a.digit - 1)
        return a, Integer._make(int(str(a)[:j] + str(b)[j:]))
    if isinstance(a, Float):
        if rng.random() < PROB_FLOAT_KEEP:
            return a, b
        j = rng.randint(0, min(a.digit, b.digit) - 1)
        return a, Float(a.int_part, a.dec[:j] + b.dec[j:])
    if isinstance(a, ScientificNotation):
        exponent = a.exponent if rng.random() > PROB_SCIENT_OWN_EXP else b.exponent
        j = rng.randint(-1, min(a.digit, b.digit) - 1)
        if j == -1:
            return a, ScientificNotation._make(b.mantissa, exponent)
        # As in the official code, j >= 0 also copies a's mantissa int digit.
        mantissa = Float(a.mantissa.int_part, a.mantissa.dec[:j] + b.mantissa.dec[j:])
        return a, ScientificNotation(mantissa, exponent)
    raise TypeError(f"harder compare is not defined for {type(a).__name__}")


def generate_pairs(spec, n_train: int, n_valid: int, n_test: int, seed: int) -> dict[str, list]:
    """The (a, b) pairs of one pair dataset: ``{"train": [...], "valid": [...], "test": [...]}``.

    ``spec`` has ``representation``, ``train_lengths`` and ``test_lengths`` ([lo, hi],
    inclusive; the valid split uses the test lengths), ``test_shorter_len`` (ratio or None),
    ``same_len`` (None | True | False) and ``harder_compare``. For every length L, ``n_train``
    (L in the train range) + ``n_valid`` + ``n_test`` (L in the test range) pairs are drawn with
    ``len(a) = L``; valid/test pairs are taken among those with ``len(b) >= int(ratio * L)``.
    """
    cls = number_type(_get(spec, "representation"))
    train_lo, train_hi = (int(x) for x in _get(spec, "train_lengths"))
    test_lo, test_hi = (int(x) for x in _get(spec, "test_lengths"))
    ratio = _get(spec, "test_shorter_len", 0.5)
    same_len = _get(spec, "same_len", None)
    harder = bool(_get(spec, "harder_compare", False))
    rng = random.Random(seed)
    low, high = min(train_lo, test_lo), max(train_hi, test_hi)
    out: dict[str, list] = {split: [] for split in SPLITS}
    for length in range(low, high + 1):
        k_train = n_train if train_lo <= length <= train_hi else 0
        k_valid = n_valid if test_lo <= length <= test_hi else 0
        k_test = n_test if test_lo <= length <= test_hi else 0
        n = k_train + k_valid + k_test
        if n == 0:
            continue
        a_list = [cls.random(length, rng) for _ in range(n)]
        shortest = low
        if n == k_valid + k_test and ratio is not None:  # a length used only for evaluation
            shortest = max(1, int(ratio * length))
        if same_len:
            b_lens = [length] * n
        elif same_len is not None:  # always shorter
            if length == shortest:
                continue
            b_lens = [rng.randint(shortest, length - 1) for _ in range(n)]
        else:
            b_lens = [rng.randint(shortest, length) for _ in range(n)]
        b_list = [cls.random(bl, rng) for bl in b_lens]
        pairs = list(zip(a_list, b_list, strict=True))
        if harder:
            pairs = [make_harder(a, b, rng) for a, b in pairs]
        # Remove duplicated ordered pairs, keeping the first occurrence.
        first: dict[Pair, int] = {}
        for i, pair in enumerate(pairs):
            first.setdefault(pair, i)
        keep = sorted(first.values())
        pairs = [pairs[i] for i in keep]
        b_lens = [b_lens[i] for i in keep]
        if ratio is not None:
            threshold = int(ratio * length)
            candidates = [i for i, bl in enumerate(b_lens) if bl >= threshold]
            k_valid = min(k_valid, len(candidates) // 2)
            k_test = min(k_test, len(candidates) // 2)
        else:
            candidates = list(range(len(pairs)))
        swap = rng.choices([True, False], k=len(pairs))
        for i in range(len(pairs)):
            if swap[i] and b_lens[i] != length:  # only pairs of different lengths
                pairs[i] = pairs[i][::-1]
        valid_idx = rng.sample(candidates, k=k_valid)
        taken = set(valid_idx)
        test_idx = rng.sample([i for i in candidates if i not in taken], k=k_test)
        taken.update(test_idx)
        out["valid"].extend(pairs[i] for i in valid_idx)
        out["test"].extend(pairs[i] for i in test_idx)
        out["train"].extend(pairs[i] for i in range(len(pairs)) if i not in taken)
    return out


# --- text benchmark (Sec. 3.7) -------------------------------------------------------------------
def make_record(variant: Variant | str, split: str, a: Number, b: Number) -> dict:
    """One benchmark record from a raw pair of the variant's dataset."""
    v = get_variant(variant)
    a, b = preprocess(v, a, b)
    return {
        "task": v.name,
        "split": split,
        "digit": sample_digit(v, a, b),
        "a": str(a),
        "b": None if b is None else str(b),
        "question": question_text(v, a, b),
        "answer": ground_truth(v, a, b),
        "type_out": v.type_out,
    }


def sample_string(record: Mapping) -> str:
    """The sample text ``question + answer`` (what decontamination compares)."""
    return record["question"] + record["answer"]


def subsample_test(
    records: list[dict], per_digit: int | None, seed: int, task_name: str
) -> list[dict]:
    """At most ``per_digit`` test records per digit, drawn with ``random.Random`` (Sec. 6).

    One RNG per task, seeded with ``f"{seed}:{task_name}"`` (deterministic across processes),
    walking the digits in increasing order and calling ``rng.sample(group, min(n, len))`` like
    the official evaluation loader.
    """
    if per_digit is None:
        return records
    groups: dict[int, list[dict]] = defaultdict(list)
    for record in records:
        groups[record["digit"]].append(record)
    rng = random.Random(f"{seed}:{task_name}")
    out: list[dict] = []
    for digit in sorted(groups):
        out.extend(rng.sample(groups[digit], min(per_digit, len(groups[digit]))))
    return out


def variant_records(
    variant: Variant | str,
    pairs: Mapping[str, list],
    *,
    test_samples_per_digit: int | None = None,
    test_sample_seed: int = 20222943,
) -> Iterator[dict]:
    """The decontaminated records of one variant: train (streamed), then valid, then test.

    Decontamination (per task and digit; the text fixes the digit, so per task suffices): test
    samples are de-duplicated, valid samples equal to a test sample are dropped, train samples
    equal to a valid or test sample are dropped. The test split is then subsampled.
    """
    v = get_variant(variant)
    test: list[dict] = []
    held: set[str] = set()
    for a, b in pairs["test"]:
        record = make_record(v, "test", a, b)
        text = sample_string(record)
        if text not in held:
            held.add(text)
            test.append(record)
    valid = [make_record(v, "valid", a, b) for a, b in pairs["valid"]]
    valid = [r for r in valid if sample_string(r) not in held]
    held.update(sample_string(r) for r in valid)
    for a, b in pairs["train"]:
        record = make_record(v, "train", a, b)
        if sample_string(record) not in held:
            yield record
    yield from valid
    yield from subsample_test(test, test_samples_per_digit, test_sample_seed, v.name)


def _section(cfg):
    """Accept the whole paper config (with ``.benchmark``) or its benchmark section."""
    inner = _get(cfg, "benchmark")
    return cfg if inner is None else inner


def dataset_seed(cfg, spec) -> int:
    return int(_get(_section(cfg), "master_seed")) + int(_get(spec, "index"))


def iter_benchmark(cfg, variants: Iterable[str] | None = None) -> Iterator[dict]:
    """Stream the records of the whole benchmark, one pair dataset at a time.

    ``cfg`` is a ``BenchmarkConfig``-like object (``master_seed``, ``n_train``, ``n_valid``,
    ``n_test``, ``datasets``, ``test_samples_per_digit``, ``test_sample_seed``) or the whole
    paper config. ``variants`` restricts the task names (default: all 50).
    """
    cfg = _section(cfg)
    wanted = [get_variant(n) for n in (VARIANTS if variants is None else variants)]
    specs = {(_get(s, "name"), _get(s, "representation")): s for s in _get(cfg, "datasets")}
    missing = [v.name for v in wanted if (v.dataset, v.representation) not in specs]
    if missing:
        raise KeyError(f"no pair dataset configured for {missing}")
    for key, spec in specs.items():
        users = [v for v in wanted if (v.dataset, v.representation) == key]
        if not users:
            continue
        pairs = generate_pairs(
            spec,
            int(_get(cfg, "n_train")),
            int(_get(cfg, "n_valid")),
            int(_get(cfg, "n_test")),
            dataset_seed(cfg, spec),
        )
        for v in users:
            yield from variant_records(
                v,
                pairs,
                test_samples_per_digit=_get(cfg, "test_samples_per_digit"),
                test_sample_seed=int(_get(cfg, "test_sample_seed", 20222943)),
            )


def build_benchmark(cfg, variants: Iterable[str] | None = None) -> list[dict]:
    """All records in memory (fine for toy scale; use :func:`iter_benchmark` at paper scale)."""
    return list(iter_benchmark(cfg, variants))


def to_plain(cfg) -> object:
    """A JSON-able copy of a config (dataclass, DictConfig or mapping)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return dataclasses.asdict(cfg)
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(cfg, DictConfig | ListConfig):
            return OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(cfg, Mapping):
        return {k: to_plain(v) for k, v in cfg.items()}
    if isinstance(cfg, list | tuple):
        return [to_plain(v) for v in cfg]
    return cfg


def count_records(records: Iterable[Mapping]) -> dict[str, dict[str, int]]:
    """``{task: {split: n}}``."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(SPLITS, 0))
    for r in records:
        counts[r["task"]][r["split"]] += 1
    return dict(counts)


def write_benchmark(
    records: Iterable[dict], folder, *, config=None, seconds: float | None = None
) -> dict:
    """Write ``<folder>/<task>.jsonl`` (all splits, with a "split" field) and ``manifest.json``.

    ``records`` may be a generator (it is consumed once); ``seconds`` defaults to the time spent
    consuming it (generation + writing). Returns the manifest.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    counts: dict[str, dict[str, int]] = {}
    handles = {}
    try:
        for record in records:
            task = record["task"]
            if task not in handles:
                handles[task] = open(folder / f"{task}.jsonl", "w", encoding="utf-8")  # noqa: SIM115
                counts[task] = dict.fromkeys(SPLITS, 0)
            handles[task].write(json.dumps(record, ensure_ascii=False) + "\n")
            counts[task][record["split"]] += 1
    finally:
        for handle in handles.values():
            handle.close()
    elapsed = time.perf_counter() - start if seconds is None else seconds
    section = _section(config) if config is not None else None
    manifest = {
        "config": to_plain(section) if section is not None else None,
        "seed": _get(section, "master_seed") if section is not None else None,
        "n_tasks": len(counts),
        "counts": {task: counts[task] for task in sorted(counts)},
        "totals": {s: sum(c[s] for c in counts.values()) for s in SPLITS},
        "files": sorted(f"{task}.jsonl" for task in counts),
        "generation_seconds": round(elapsed, 3),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
