"""The real rung: a real pretrained LLM (SmolLM2-135M-Instruct) answers the NUPA text benchmark
as the paper evaluates LLMs (brief Sec. 3.7, 3.8, 6).

1. :func:`real_questions`: the benchmark's own pair datasets and per-task preprocessing, ground
   truth and text (``benchmark.py``), test split only, at a ladder of lengths (digits) for every
   task; each (task, digit) cell subsampled with the official sampler (``subsample_test``).
2. :func:`greedy_continuations`: the official prompt, the question text ``instruction +
   "<a><op><b>" + " = "`` with no chat template, greedy decoding with ``max_new_tokens = 2 *
   digit`` (at least 4), left padding with pad = eos; batched over questions of the same digit
   with the KV cache, and stopped once every answer in the batch is settled (see
   :func:`answer_settled`: the scores are those of the full token budget).
3. :func:`score_answers`: extraction after the first " = " of ``question + continuation``, then
   exact match, digit match and dlength (Sec. 3.8), averaged per (task, digit) and over digit
   ranges.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from papers.nupa.benchmark import build_benchmark, subsample_test
from papers.nupa.metrics import DEFAULT_MARKER, extract_answer, score
from papers.nupa.oracle import verify_benchmark
from papers.nupa.tasks import VARIANTS

# Results rows: one per (task, digit range), named "<task>/<lo>-<hi>"; one more for the checks.
CHECKS = "checks"
METRIC_NAMES = {"exact_match": "em", "digit_match": "dm", "dlength": "dlen"}
# Whitespace after a non-blank character: no answer pattern spans whitespace (metrics.FORMATS).
_SETTLED = re.compile(r"\S\s")


def range_name(task: str, low: int, high: int) -> str:
    """The results row of ``task`` over the digits ``low..high``: ``"<task>/<low>-<high>"``."""
    return f"{task}/{low}-{high}"


def check_real_config(real, tasks: Sequence[str]) -> None:
    """One-line errors for a real-rung config that cannot run (unknown task, bad ranges)."""
    unknown = [t for t in [*tasks, *real.claim_tasks] if t not in VARIANTS]
    if unknown:
        raise ValueError(f"real.tasks: unknown NUPA task(s) {unknown}; see papers/nupa/tasks.py")
    if not real.digits or min(real.digits) < 1:
        raise ValueError(f"real.digits must be positive lengths, got {real.digits}")
    for pair in real.ranges:
        if len(pair) != 2 or pair[0] > pair[1]:
            raise ValueError(f"real.ranges: each range is [low, high], got {pair}")
    for name in ("questions_per_cell", "claim_questions_per_cell", "batch_size"):
        if getattr(real, name) < 1:
            raise ValueError(f"real.{name} must be >= 1, got {getattr(real, name)}")


def real_questions(cfg, tasks: Sequence[str]) -> list[dict]:
    """Test questions of ``tasks`` at the ladder ``cfg.real.digits``: per (task, digit) at most
    ``claim_questions_per_cell`` (claim tasks) or ``questions_per_cell`` (others), drawn by the
    official test sampler (seed ``benchmark.test_sample_seed``, one RNG per task)."""
    real = cfg.real
    ladder = set(real.digits)
    by_task: dict[str, list[dict]] = defaultdict(list)
    for record in build_benchmark(cfg.benchmark, tasks):
        if record["split"] == "test" and record["digit"] in ladder:
            by_task[record["task"]].append(record)
    questions = []
    for task in tasks:
        n = real.claim_questions_per_cell if task in real.claim_tasks else real.questions_per_cell
        questions += subsample_test(by_task[task], n, cfg.benchmark.test_sample_seed, task)
    return questions


def answer_settled(continuation: str) -> bool:
    """Whether more generated text can no longer change the extracted answer (Sec. 3.8).

    The answer is the output pattern matched at the *start* of the stripped text after the
    prompt's " = ", and no pattern contains whitespace: once a blank follows a non-blank
    character, the match is fixed (or impossible), whatever comes next.
    """
    return _SETTLED.search(continuation) is not None


class StopWhenSettled(StoppingCriteria):
    """Per-sequence stop once :func:`answer_settled` holds for its continuation."""

    def __init__(self, tokenizer, prompt_width: int):
        self.tokenizer, self.prompt_width = tokenizer, prompt_width

    def __call__(self, input_ids: torch.Tensor, scores, **kwargs) -> torch.Tensor:
        texts = self.tokenizer.batch_decode(
            input_ids[:, self.prompt_width :], skip_special_tokens=True
        )
        return torch.tensor([answer_settled(t) for t in texts], device=input_ids.device)


def new_token_budget(digit: int, real) -> int:
    """The official greedy budget: ``2 * digit`` new tokens, at least ``min_new_tokens``."""
    return max(real.min_new_tokens, real.new_tokens_per_digit * digit)


@torch.no_grad()
def greedy_continuations(
    model, tokenizer, prompts: Sequence[str], max_new_tokens: int, stop_when_settled: bool
) -> list[str]:
    """Greedy continuations of ``prompts`` decoded together: left padding (pad = eos) so every
    prompt ends in the last column, the KV cache, ``max_new_tokens`` at most."""
    tokenizer.padding_side = "left"  # decoder-only models continue from the last token
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    encoded = tokenizer(list(prompts), return_tensors="pt", padding=True)  # (B, T)
    width = encoded["input_ids"].shape[1]
    stop = [StopWhenSettled(tokenizer, width)] if stop_when_settled else []
    generated = model.generate(
        **encoded,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        stopping_criteria=StoppingCriteriaList(stop),
    )
    return tokenizer.batch_decode(generated[:, width:], skip_special_tokens=True)


def answer_questions(model, tokenizer, questions: list[dict], real, progress=None) -> list[str]:
    """Every question's continuation, in the order given: batches of ``real.batch_size``
    questions of one digit (one token budget), sorted by prompt length to pad little."""
    order = sorted(
        range(len(questions)),
        key=lambda i: (questions[i]["digit"], len(questions[i]["question"]), i),
    )
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if (
            last is None
            or len(last) == real.batch_size
            or questions[last[0]]["digit"] != questions[i]["digit"]
        ):
            batches.append([i])
        else:
            last.append(i)
    answers: list[str] = [""] * len(questions)
    for number, batch in enumerate(batches):
        digit = questions[batch[0]]["digit"]
        texts = greedy_continuations(
            model,
            tokenizer,
            [questions[i]["question"] for i in batch],
            new_token_budget(digit, real),
            real.stop_when_settled,
        )
        for i, text in zip(batch, texts, strict=True):
            answers[i] = text
        if progress is not None:
            progress(number + 1, len(batches), digit)
    return answers


def batched_agreement(model, tokenizer, questions: list[dict], real) -> float:
    """Share of ``questions`` whose batched greedy continuation equals the one decoded alone
    (padding and batching must not change an answer)."""
    if not questions:
        return float("nan")
    budget = new_token_budget(max(q["digit"] for q in questions), real)
    prompts = [q["question"] for q in questions]
    together = greedy_continuations(model, tokenizer, prompts, budget, stop_when_settled=False)
    alone = [
        greedy_continuations(model, tokenizer, [p], budget, stop_when_settled=False)[0]
        for p in prompts
    ]
    return float(np.mean([a == b for a, b in zip(together, alone, strict=True)]))


def score_answers(questions: list[dict], continuations: list[str]) -> list[dict]:
    """Per question: the answer extracted after the first " = " of the whole text ``question +
    continuation`` (the prompt's own, so the answer is what the model wrote right after it),
    and its three text metrics (Sec. 3.8)."""
    rows = []
    for q, text in zip(questions, continuations, strict=True):
        extracted = extract_answer(q["question"] + text, q["type_out"], DEFAULT_MARKER)
        rows.append(
            {
                "task": q["task"],
                "digit": q["digit"],
                "extracted": extracted,
                **score(extracted, q["answer"], q["type_out"]),
            }
        )
    return rows


def cell_means(rows: list[dict]) -> dict[tuple[str, int], dict[str, float]]:
    """Mean of each metric per (task, digit), with the cell's question count ``n``."""
    cells: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in rows:
        cells[(row["task"], row["digit"])].append(row)
    return {
        key: {
            "n": float(len(group)),
            **{m: float(np.mean([r[m] for r in group])) for m in METRIC_NAMES},
        }
        for key, group in cells.items()
    }


def range_rows(rows: list[dict], ranges: Sequence[Sequence[int]]) -> dict[str, dict[str, float]]:
    """Results rows ``"<task>/<lo>-<hi>"``: each metric (``em``, ``dm``, ``dlen``) pooled over
    the questions whose digit lies in the range (sample-weighted, as the paper's length
    ranges), their count ``n``, and the per-digit means (``dm_d12``, ...)."""
    out: dict[str, dict[str, float]] = {}
    cells = cell_means(rows)
    for task in dict.fromkeys(r["task"] for r in rows):
        for low, high in ranges:
            inside = [r for r in rows if r["task"] == task and low <= r["digit"] <= high]
            if not inside:
                continue
            metrics = {
                short: float(np.mean([r[m] for r in inside])) for m, short in METRIC_NAMES.items()
            }
            metrics["n"] = float(len(inside))
            for digit in sorted({r["digit"] for r in inside}):
                for m, short in METRIC_NAMES.items():
                    metrics[f"{short}_d{digit}"] = cells[(task, digit)][m]
            out[range_name(task, low, high)] = metrics
    return out


def evaluate_model(cfg, model, tokenizer, tasks: Sequence[str], log=print):
    """Ask every question, score the answers and run the two checks; returns the results rows
    (one value each, the single deterministic "seed"), the per-cell means and the timings."""
    real = cfg.real
    start = time.process_time()
    questions = real_questions(cfg, tasks)
    n_checked, n_agree, failures = verify_benchmark(questions)
    for failure in failures[:5]:
        log(f"oracle disagrees: {failure}")
    log(f"{len(questions)} questions over {len(tasks)} tasks at digits {list(real.digits)}")

    def progress(done: int, total: int, digit: int) -> None:
        if done == total or done % 10 == 0:
            log(f"batch {done}/{total} (digit {digit}), {time.process_time() - start:.0f} CPU s")

    continuations = answer_questions(model, tokenizer, questions, real, progress)
    scored = score_answers(questions, continuations)
    # A few short questions of different lengths decoded alone and together.
    probe = sorted(questions, key=lambda q: (q["digit"], q["question"]))
    step = max(1, len(probe) // max(1, real.agreement_questions))
    probe = probe[::step][: real.agreement_questions]
    agreement = batched_agreement(model, tokenizer, probe, real)
    rows = range_rows(scored, real.ranges)
    rows[CHECKS] = {
        "oracle_agreement": n_agree / n_checked if n_checked else float("nan"),
        "batched_agreement": agreement,
        "n": float(len(questions)),
    }
    examples = [
        {**q, "continuation": text, **s}
        for q, text, s in zip(questions, continuations, scored, strict=True)
    ]
    return rows, cell_means(scored), examples
