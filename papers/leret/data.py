"""Data: the toy's synthetic multi-hop corpus (brief Sec. 5.1) and the paper-scale readers
(HotpotQA / HoVer questions and a Wikipedia-abstract corpus from local files, Sec. 6).

Both produce a :class:`RetrievalTask`: documents, questions with gold document sets, and the
question splits (prompt-search demos and validation, one disjoint chunk per LeReT iteration,
test). Nothing is downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from papers.leret.config import DataConfig, WorldConfig
from shared.seeding import numpy_rng

FUNCTION_WORDS = ("what", "is", "the", "of", "does", "or", "have", "same")
STREAM_WORLD, STREAM_SPLIT = 1, 2
HOVER_PREFIX = "Is the following statement supported: "  # hover_retrieval_dataset.py


@dataclass(frozen=True)
class Question:
    """One question: its text (toy: token ids), gold document ids, and what the toy's
    "restate the subject and first relation" habit writes (toy only)."""

    text: str | tuple[int, ...]
    gold: frozenset[int]
    form: str = ""  # toy: bridge | comparison
    habit_query: tuple[int, ...] = ()


@dataclass
class Splits:
    """Question indices: demo mining and prompt validation (Sec. 3.3.1), one disjoint chunk
    per LeReT iteration (Sec. 3.4.3), test, and (toy) the base policy's habit pool."""

    demo: list[int]
    validation: list[int]
    iterations: list[list[int]]
    test: list[int]
    habit: list[int] = field(default_factory=list)


@dataclass
class RetrievalTask:
    documents: list  # toy: token-id lists; paper: "Title | text" strings
    questions: list[Question]
    splits: Splits
    vocab: list[str] = field(default_factory=list)  # toy: token names, id -> name
    kinds: np.ndarray | None = None  # toy: 0 function, 1 entity, 2 relation, 3 filler


# ------------------------------------------------------------------ toy world (Sec. 5.1)


def make_toy_task(cfg: WorldConfig, seed: int) -> RetrievalTask:
    """The synthetic knowledge base, its 300 documents and 1500 two-hop questions."""
    rng = numpy_rng(seed, STREAM_WORLD)
    n_fn, n_e, n_r, n_f = len(FUNCTION_WORDS), cfg.n_entities, cfg.n_relations, cfg.n_fillers
    entity = np.arange(n_fn, n_fn + n_e)
    relation = np.arange(n_fn + n_e, n_fn + n_e + n_r)
    filler = np.arange(n_fn + n_e + n_r, n_fn + n_e + n_r + n_f)
    vocab = [
        *FUNCTION_WORDS,
        *(f"E{i}" for i in range(n_e)),
        *(f"R{i}" for i in range(n_r)),
        *(f"w{i}" for i in range(n_f)),
    ]
    kinds = np.repeat([0, 1, 2, 3], [n_fn, n_e, n_r, n_f])
    word = {w: i for i, w in enumerate(FUNCTION_WORDS)}
    zipf = 1.0 / np.arange(1, n_f + 1)  # Zipf(1) filler frequencies, rank 1 = w0
    zipf /= zipf.sum()

    # Knowledge base: facts[e] = [(relation, object), ...], distinct relations per entity.
    facts = []
    for e in range(n_e):
        rels = rng.choice(n_r, size=cfg.facts_per_entity, replace=False)
        objects = [(e + 1 + rng.integers(n_e - 1)) % n_e for _ in rels]  # uniform, != e
        facts.append(list(zip(rels.tolist(), objects, strict=True)))

    documents = []
    for e in range(n_e):
        doc = [int(entity[e])] * 2  # the title, doubled
        for rel, obj in facts[e]:
            f1, f2, f3 = rng.choice(filler, size=3, p=zipf)
            doc += [int(f1), int(f2), int(relation[rel]), int(entity[obj]), int(f3)]
        documents.append(doc)

    low, high = cfg.distractor_rank_min, cfg.distractor_rank_max
    questions = []
    for _ in range(cfg.n_questions):
        a = int(rng.integers(n_e))
        r1, b_ = facts[a][rng.integers(len(facts[a]))]
        d1, d2 = (int(filler[r - 1]) for r in rng.choice(np.arange(low, high + 1), 2, False))
        if rng.random() < cfg.comparison_fraction:
            a2 = int((a + 1 + rng.integers(n_e - 1)) % n_e)
            tokens = [word["does"], entity[a], word["or"], entity[a2], word["have"]]
            tokens += [word["the"], word["same"], relation[r1], d1, d2]
            gold, form = frozenset({a, a2}), "comparison"
        else:
            r2, _ = facts[b_][rng.integers(len(facts[b_]))]
            tokens = [word["what"], word["is"], word["the"], relation[r2], word["of"]]
            tokens += [word["the"], relation[r1], word["of"], entity[a], d1, d2]
            gold, form = frozenset({a, int(b_)}), "bridge"
        habit = (int(entity[a]), int(relation[r1]))
        questions.append(Question(tuple(int(t) for t in tokens), gold, form, habit))

    order = numpy_rng(seed, STREAM_SPLIT).permutation(cfg.n_questions).tolist()
    sizes = [cfg.n_demo, cfg.n_validation, cfg.n_test, *cfg.per_iteration]
    if sum(sizes) > cfg.n_questions:
        raise ValueError(
            f"world splits need {sum(sizes)} questions, world.n_questions is {cfg.n_questions}"
        )
    cuts = np.cumsum([0, *sizes]).tolist()
    parts = [order[s:e] for s, e in zip(cuts[:-1], cuts[1:], strict=True)]
    splits = Splits(parts[0], parts[1], parts[3:], parts[2], habit=order[cuts[-1] :])
    return RetrievalTask(documents, questions, splits, vocab, kinds)


# ------------------------------------------------------------------ paper scale (Sec. 6)


def _records(path: Path) -> list[tuple[str, object]]:
    """(where, record) pairs of a json list or a jsonl file, ``where`` naming the record."""
    text = path.read_text()
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid json ({err})") from err
        return [(f"{path} record {i}", row) for i, row in enumerate(rows)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{path} line {number}", json.loads(line)))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} line {number}: not valid json ({err.msg})") from err
    return out


def _string_field(where: str, row: object, name: str) -> str:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object, got {type(row).__name__}")
    if name not in row:
        raise ValueError(f"{where}: missing field {name!r}")
    value = row[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty string")
    return value


def load_corpus(path: str | Path) -> tuple[list[str], list[str]]:
    """Wikipedia abstracts from a local json/jsonl file of {"title", "text"} records.

    Returns (titles, passages "Title | text"), the ColBERTv2 passage format whose title is the
    text before "|". A malformed record fails naming its line; so does a repeated title.
    """
    path = Path(path)
    titles, passages, seen = [], [], {}
    for where, row in _records(path):
        title = _string_field(where, row, "title").strip()
        text = _string_field(where, row, "text").strip()
        if title in seen:
            raise ValueError(f"{where}: title {title!r} repeats {seen[title]}")
        seen[title] = where
        titles.append(title)
        passages.append(f"{title} | {text}")
    if not titles:
        raise ValueError(f"{path}: no passages")
    return titles, passages


def load_questions(path: str | Path, dataset: str, titles: list[str]) -> list[Question]:
    """HotpotQA ({"question", "supporting_facts": [[title, sentence], ...]}) or HoVer
    ({"claim", "supporting_facts"}, asked as "Is the following statement supported: <claim>").

    Gold = the distinct supporting-fact titles (official ``*_retrieval_dataset.py``). A
    malformed record, or one none of whose gold titles is in the corpus, fails naming it.
    """
    if dataset not in ("hotpotqa", "hover"):
        raise ValueError(f"data.dataset must be hotpotqa or hover, got {dataset!r}")
    index = {t: i for i, t in enumerate(titles)}
    questions = []
    for where, row in _records(Path(path)):
        field_name = "question" if dataset == "hotpotqa" else "claim"
        text = _string_field(where, row, field_name)
        if dataset == "hover":
            text = HOVER_PREFIX + text
        facts = row.get("supporting_facts")
        if not isinstance(facts, list) or not facts:
            raise ValueError(f"{where}: field 'supporting_facts' must be a non-empty list")
        gold_titles = []
        for fact in facts:
            if not (isinstance(fact, list | tuple) and fact and isinstance(fact[0], str)):
                raise ValueError(f"{where}: supporting fact {fact!r} is not [title, sentence]")
            gold_titles.append(fact[0])
        gold = frozenset(index[t] for t in gold_titles if t in index)
        if not gold:
            raise ValueError(
                f"{where}: none of its gold titles {sorted(set(gold_titles))} is in the corpus"
            )
        questions.append(Question(text, gold))
    return questions


def load_paper_task(cfg: DataConfig, seed: int) -> RetrievalTask:
    """Corpus, training questions (shuffled with ``data.split_seed``: 50 demo, 50 validation,
    then one disjoint chunk per iteration) and the dev questions as the test set."""
    titles, passages = load_corpus(cfg.corpus_path)
    train = load_questions(cfg.train_path, cfg.dataset, titles)
    dev = load_questions(cfg.dev_path, cfg.dataset, titles)[: cfg.n_test]
    order = np.random.default_rng(cfg.split_seed).permutation(len(train)).tolist()
    sizes = [cfg.n_demo, cfg.n_validation, *cfg.per_iteration]
    if sum(sizes) > len(train):
        raise ValueError(
            f"{cfg.train_path}: the splits need {sum(sizes)} questions, it has {len(train)}"
        )
    cuts = np.cumsum([0, *sizes]).tolist()
    parts = [order[s:e] for s, e in zip(cuts[:-1], cuts[1:], strict=True)]
    test = list(range(len(train), len(train) + len(dev)))
    return RetrievalTask(passages, train + dev, Splits(parts[0], parts[1], parts[2:], test))
