"""NUPA experiment: ``python -m papers.nupa.train [scale=smoke|toy|paper] [key=value ...]``.

Two parts (brief Sec. 5):

a. the benchmark: every task variant generated at the configured size (``benchmark.py``) and
   each sample re-checked by the independent oracle (``oracle.py``);
b. the tokenizer study: per (method, seed) a randomly initialised Llama learns the study task
   (Integer addition) with the method's number tokenizer and positional encoding, through the
   shared minibatch loop with the loss on the answer tokens only; then greedy decoding on
   in-domain (and longer) lengths, scored with the benchmark's digit and exact match.

The mismatched-answer score reads each prediction against the answer of another test
question of the same length: what a model that ignores its inputs but writes plausible
numbers would get (the negative control of the digit-match bar).

``scale=real`` (configs/nupa/real.yaml) asks a real pretrained LLM, SmolLM2-135M-Instruct, the
benchmark's questions at a ladder of lengths on every task, as the paper evaluates LLMs
(``real.py``): results rows ``"<task>/<lo>-<hi>"`` with exact match, digit match and dlength.
"""

from __future__ import annotations

import functools
import json
import math
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from transformers import get_cosine_schedule_with_warmup

from papers.nupa.benchmark import build_benchmark
from papers.nupa.claims import BENCHMARK, LABELS, REAL_LABELS, REAL_PLOT
from papers.nupa.config import Config, MethodConfig
from papers.nupa.data import Problem, check_task, make_test_set, training_batch
from papers.nupa.metrics import digit_match, exact_match
from papers.nupa.model import build_model
from papers.nupa.oracle import verify_benchmark
from papers.nupa.real import METRIC_NAMES, check_real_config, evaluate_model
from papers.nupa.tasks import COMBINATIONS, VARIANTS
from papers.nupa.tokenizer import EOS, PAD, NumberTokenizer
from shared import pretrained
from shared.config import REAL_SCALE
from shared.entry import main
from shared.experiment import RunOutput, check_names, enabled_settings, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

# scale=real: the pinned model the entry point verifies before any work (shared/pretrained.py).
REAL_ASSETS = (pretrained.MODEL_ASSET,)
# The models scale=real can ask (``methods``): name -> loader of (model, tokenizer) from the
# config; ``own`` is your checkpoint folder (real.model_path).
OWN_MODEL = "own"
REAL_MODELS = {
    pretrained.MODEL_ASSET: lambda cfg: pretrained.load_model(),
    OWN_MODEL: lambda cfg: pretrained.load_model(cfg.real.model_path),
}


def real_assets(cfg: Config) -> tuple[str, ...]:
    """SmolLM2's asset, unless the model asked is your own (methods=[own])."""
    return () if list(cfg.methods) == [OWN_MODEL] else REAL_ASSETS


def user_files(cfg: Config) -> dict[str, str]:
    """Your checkpoint's config and weights (methods=[own]), recorded with their sha256."""
    if OWN_MODEL not in cfg.methods or not cfg.real.model_path:
        return {}
    return pretrained.own_files({"real.model_path": cfg.real.model_path})


# ----------------------------------------------------------------------------------------
# (a) the benchmark and its oracle check
# ----------------------------------------------------------------------------------------
def check_benchmark(cfg: Config, seed: int) -> dict[str, float]:
    """Generate the benchmark (master seed shifted by 1000 * seed; seed 0 is the official
    one) and measure its coverage and its agreement with the oracle (brief Sec. 5a)."""
    spec = cfg.benchmark
    spec = type(spec)(**{**spec.__dict__, "master_seed": spec.master_seed + 1000 * seed})
    start = time.perf_counter()
    records = build_benchmark(spec)
    n_checked, n_agree, failures = verify_benchmark(records)
    seconds = time.perf_counter() - start
    for failure in failures[:5]:
        print(f"oracle disagrees: {failure}")
    tasks = {r["task"] for r in records}
    combinations = {(VARIANTS[t].task, VARIANTS[t].type_a) for t in tasks} & set(COMBINATIONS)
    print(
        f"benchmark seed {seed}: {len(records)} samples, {len(tasks)} task names, generated "
        f"and verified in {seconds:.1f} s"
    )
    return {
        "samples": float(len(records)),
        "task_names": float(len(tasks)),
        "combinations": float(len(combinations)),
        "oracle_agreement": n_agree / n_checked if n_checked else float("nan"),
    }


# ----------------------------------------------------------------------------------------
# (b) the tokenizer study
# ----------------------------------------------------------------------------------------
def make_tokenizer(method: MethodConfig) -> NumberTokenizer:
    t = method.tokenizer
    return NumberTokenizer(
        t.k,
        split=t.split,
        reverse=t.reverse,
        pad_zeros=t.pad_zeros,
        index_hints=t.index_hints,
        max_index=t.max_index,
    )


def encode_batch(
    tokenizer: NumberTokenizer, problems: list[Problem], types: tuple, rng: random.Random
) -> dict[str, torch.Tensor]:
    """Right-padded ids with labels on the answer and EOS only (brief Sec. 3.9)."""
    samples = [(p.a, p.b, p.answer) for p in problems]
    return tokenizer.batch_encode(samples, *types, rng=rng, return_tensors="pt")  # (B, T)


@torch.no_grad()
def greedy_answers(
    model, tokenizer: NumberTokenizer, problems: list[Problem], types: tuple, cfg: Config
) -> list[str]:
    """Greedy decoding until EOS from left-padded prompts; the decoded answer strings."""
    k = tokenizer.k
    rng = random.Random(0)  # only a random-split tokenizer draws from it
    answers = []
    for start in range(0, len(problems), cfg.study.eval_batch_size):
        chunk = problems[start : start + cfg.study.eval_batch_size]
        prompts = tokenizer.batch_encode(
            [(p.a, p.b, None) for p in chunk],
            *types,
            rng=rng,
            generation=True,
            return_tensors="pt",
        )  # left padding: every prompt ends in the last column
        longest = max(p.length for p in chunk)
        new_tokens = math.ceil((longest + 2) / k) + cfg.study.extra_new_tokens  # Sec. 5b
        if tokenizer.split == "random" or tokenizer.index_hints:  # more tokens per digit
            bound = tokenizer.max_answer_tokens(longest + 2, types[2])
            new_tokens = max(new_tokens, bound + cfg.study.extra_new_tokens)
        width = prompts["input_ids"].shape[1]
        out = model.generate(
            **{k: v.to(model.device) for k, v in prompts.items()},
            max_new_tokens=new_tokens,
            do_sample=False,
            eos_token_id=EOS,
            pad_token_id=PAD,
        )
        for row in out[:, width:].tolist():
            answers.append(tokenizer.decode_number(row, types[2]))
    return answers


def score(
    problems: list[Problem], answers: list[str], type_out: str, ood_lengths: list[int], seed: int
) -> dict[str, float]:
    """Digit and exact match per test length, in-domain (``dm``, ``em``) and on the longer
    ``ood_lengths`` (``dm_ood``, ``em_ood``), and the in-domain digit match against another
    question's answer of the same length (``dm_mismatched``)."""
    by_length: dict[int, list[int]] = {}
    for i, p in enumerate(problems):
        by_length.setdefault(p.length, []).append(i)
    rng = np.random.default_rng(seed)
    metrics: dict[str, float] = {}
    pooled: dict[str, list[float]] = {"dm": [], "em": [], "dm_ood": [], "em_ood": []}
    mismatched: list[float] = []
    for length, items in sorted(by_length.items()):
        dm = [digit_match(answers[i], problems[i].answer, type_out) for i in items]
        em = [exact_match(answers[i], problems[i].answer, type_out) for i in items]
        metrics[f"dm_len{length}"], metrics[f"em_len{length}"] = np.mean(dm), np.mean(em)
        suffix = "_ood" if length in ood_lengths else ""
        pooled["dm" + suffix] += dm
        pooled["em" + suffix] += em
        if not suffix:
            partner = rng.permutation(items)  # another question of the same length
            mismatched += [
                digit_match(answers[i], problems[j].answer, type_out)
                for i, j in zip(items, partner, strict=True)
            ]
    metrics.update({name: np.mean(v) for name, v in pooled.items() if v})
    metrics["dm_mismatched"] = np.mean(mismatched)
    return {k: float(v) for k, v in metrics.items()}


def train_one(
    method: str,
    seed: int,
    run_dir: Path,
    cfg: Config,
    accelerator: Accelerator,
    logger: MetricsLogger,
    problems_of: Callable[..., list[Problem]] = training_batch,
) -> RunOutput:
    """Train one from-scratch model with ``method``'s tokenizer and PE, then test it.
    ``problems_of`` draws a step's problems (:func:`training_batch`, or a cache of it)."""
    setting = cfg.settings[method]
    tokenizer = make_tokenizer(setting)
    variant = check_task(cfg.study.task)
    types = (variant.type_a, variant.type_b if variant.type_b != "none" else None, variant.type_out)
    seed_everything(seed)
    model = build_model(cfg.model, tokenizer.vocab_size, setting.pe)
    t = cfg.train
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=t.lr,
        weight_decay=t.weight_decay,
        betas=tuple(t.adam_betas),
        foreach=True,
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, t.warmup_steps, t.steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    device = accelerator.device

    test_lengths = [*cfg.study.test_lengths, *cfg.study.ood_lengths]
    problems = make_test_set(
        cfg.study.task,
        test_lengths,
        cfg.study.n_test_per_length,
        cfg.study.test_seed_offset + seed,
    )

    def next_batch(step: int) -> dict[str, torch.Tensor]:
        lengths = tuple(cfg.study.train_lengths)
        batch = problems_of(cfg.study.task, lengths, t.batch_size, seed, step)
        # a random-split tokenizer draws its chunking from the step's own stream too
        rng = random.Random(f"nupa-split-{seed}-{step}")
        return {k: v.to(device) for k, v in encode_batch(tokenizer, batch, types, rng).items()}

    def compute_loss(model, batch):
        # Mean CE over answer tokens (labels -100 elsewhere). The padding is on the right, so
        # under the causal mask no real token attends to it and it carries no loss: the
        # padding mask changes nothing and is left out (sdpa then takes its plain causal path,
        # the same numbers bit for bit, a little faster); training keeps no KV cache.
        out = model(input_ids=batch["input_ids"], labels=batch["labels"], use_cache=False)
        return out.loss, {}

    def after_step(step: int, batch, aux) -> None:
        schedule.step()

    def evaluate(model) -> dict[str, float]:
        answers = greedy_answers(accelerator.unwrap_model(model), tokenizer, problems, types, cfg)
        return score(problems, answers, types[2], cfg.study.ood_lengths, seed)

    history = fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=t.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=after_step,
        evaluate=evaluate,
        stateful={"schedule": schedule},
        logger=logger,
        tags={"method": method, "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"{method} s{seed}",
    )
    accelerator.free_memory()
    final = history[-1]
    return RunOutput(
        metrics={k: v for k, v in final.items() if k != "step"},
        curves={
            "dm_by_length": [final[f"dm_len{n}"] for n in test_lengths],
            "em_by_length": [final[f"em_len{n}"] for n in test_lengths],
        },
    )


def plot_by_length(curves, lengths: list[int], path: Path, train_max: int) -> None:
    """Digit and exact match against the operand length, one line per tokenizer."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=120)
    for ax, name, ylabel in (
        (axes[0], "dm_by_length", "digit match"),
        (axes[1], "em_by_length", "exact match"),
    ):
        for method, c in curves.items():
            values = np.asarray(c[name])  # (seeds, lengths)
            mean, std = values.mean(0), values.std(0)
            (line,) = ax.plot(lengths, mean, marker="o", label=LABELS.get(method, method))
            ax.fill_between(lengths, mean - std, mean + std, color=line.get_color(), alpha=0.2)
        ax.axvline(train_max + 0.5, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("length of the longer operand (digits)")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].legend(frameon=False, fontsize=8)
    fig.suptitle("NUPA toy: accuracy by length per number tokenizer (dotted: trained up to)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ----------------------------------------------------------------------------------------
# scale=real: a pretrained LLM on the text benchmark
# ----------------------------------------------------------------------------------------
def real_tasks(cfg: Config) -> list[str]:
    """The task names asked: ``real.tasks``, or all 50 when it is empty."""
    return list(cfg.real.tasks) or list(VARIANTS)


def real_preflight(cfg: Config) -> list[str]:
    """Config problems of scale=real, named before the model loads (the model's files are
    checked by ``REAL_ASSETS``)."""
    problems = [
        f"methods: {m!r} is no real model; choose from {sorted(REAL_MODELS)}"
        for m in cfg.methods
        if m not in REAL_MODELS
    ]
    if len(cfg.methods) != 1:
        problems.append(f"methods: scale=real asks one model, got {list(cfg.methods)}")
    if list(cfg.seeds) != [0]:
        problems.append(f"seeds: greedy decoding is deterministic, use seeds=[0], got {cfg.seeds}")
    if OWN_MODEL in cfg.methods:  # checked before any weights load
        if not cfg.real.model_path:
            problems.append(f"real.model_path is not set: methods=[{OWN_MODEL}] asks your model")
        else:
            problems += pretrained.model_config("real.model_path", cfg.real.model_path)[1]
    elif cfg.real.model_path:
        problems.append(
            f"real.model_path={cfg.real.model_path}: only methods=[{OWN_MODEL}] reads it"
        )
    try:
        check_real_config(cfg.real, real_tasks(cfg))
    except ValueError as err:
        problems.append(str(err))
    return problems


# 50 small panels: the README keeps figures under 150 kB (scripts/reproduce.py), so few
# pixels per panel and a small palette (plots have few colours)
FIGURE_DPI = 80
PANEL_INCHES = (2.4, 1.7)
FIGURE_COLOURS = 64


def plot_real(cells: dict, tasks: list[str], digits: list[int], path: Path, title: str) -> None:
    """Exact match, digit match (left axis) and dlength (right axis) against the length, one
    small panel per task (the paper's accuracy-by-length figure)."""
    columns = min(5, len(tasks))
    rows = math.ceil(len(tasks) / columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows),
        dpi=FIGURE_DPI,
        squeeze=False,
    )
    for ax, task in zip(axes.flat, tasks, strict=False):
        present = [d for d in digits if (task, d) in cells]
        for metric, style in (("exact_match", "o-"), ("digit_match", "s-")):
            values = [cells[(task, d)][metric] for d in present]
            ax.plot(present, values, style, markersize=3, label=METRIC_NAMES[metric])
        twin = ax.twinx()
        twin.plot(
            present,
            [cells[(task, d)]["dlength"] for d in present],
            "^:",
            color="grey",
            markersize=3,
            label="dlen",
        )
        twin.tick_params(labelsize=6)
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(REAL_LABELS.get(f"{task}/1-4", task).rsplit(",", 1)[0], fontsize=8)
        ax.tick_params(labelsize=6)
    for ax in axes.flat[len(tasks) :]:
        ax.axis("off")
    dlength_key = plt.Line2D([], [], color="grey", linestyle=":", marker="^")
    fig.legend(
        [*axes.flat[0].get_lines(), dlength_key],
        ["exact match", "digit match", "dlength (right axis)"],
        loc="upper right",
        fontsize=8,
    )
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path)
    plt.close(fig)
    from PIL import Image  # matplotlib's own dependency

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=FIGURE_COLOURS)
    palette.save(path, optimize=True)


def run_real(cfg: Config, out_dir: Path) -> Results:
    """Ask the model every question, score the answers (Sec. 3.8), write them to
    ``answers.jsonl`` and plot accuracy against length; one results row per task and range."""
    problems = real_preflight(cfg)
    if problems:  # the entry point names these first; a direct call fails the same way
        raise ValueError("; ".join(problems))
    name = cfg.methods[0]
    tasks = real_tasks(cfg)
    model, tokenizer = REAL_MODELS[name](cfg)
    if name == OWN_MODEL:
        name = Path(cfg.real.model_path).name
    rows, cells, examples = evaluate_model(cfg, model, tokenizer, tasks)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "answers.jsonl").open("w") as f:
        for example in examples:
            f.write(json.dumps(example) + "\n")
    plot_real(
        cells,
        tasks,
        sorted(cfg.real.digits),
        out_dir / REAL_PLOT,
        f"NUPA on {name}: greedy answers by length (questions per cell: "
        f"{cfg.real.questions_per_cell}; integer add: {cfg.real.claim_questions_per_cell})",
    )
    return {row: {k: [v] for k, v in metrics.items()} for row, metrics in rows.items()}


def run(cfg: Config, out_dir: Path) -> Results:
    """The benchmark check (a) and the tokenizer study (b); returns the per-seed metrics.
    ``scale=real``: the pretrained LLM on the text benchmark (:func:`run_real`)."""
    if cfg.scale == REAL_SCALE:
        return run_real(cfg, out_dir)
    settings = enabled_settings(cfg.settings)
    check_names("methods", cfg.methods, settings)
    check_task(cfg.study.task)
    out_dir = Path(out_dir)
    results: Results = {}
    if cfg.verify_benchmark:
        per_seed = [check_benchmark(cfg, seed) for seed in cfg.seeds]
        results[BENCHMARK] = {k: [m[k] for m in per_seed] for k in per_seed[0]}
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    # Every tokenizer of the study trains on the same problems at a (seed, step): drawn once
    # per run (~16 kB a step) instead of once per method (7 CPU s of the toy's 2 x 1500 steps).
    problems_of = functools.cache(training_batch)
    study, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda method, seed, run_dir: train_one(
            method, seed, run_dir, cfg, accelerator, logger, problems_of
        ),
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    results.update(study)
    if accelerator.is_main_process:
        lengths = [*cfg.study.test_lengths, *cfg.study.ood_lengths]
        plot_by_length(
            curves, lengths, out_dir / "accuracy_by_length.png", cfg.study.train_lengths[1]
        )
    return results


if __name__ == "__main__":
    main("nupa")
