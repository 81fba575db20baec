"""EM-LLM experiment: ``python -m papers.em_llm.train [scale=smoke|toy|paper] [key=value ...]``.

Toy (brief Sec. 5): per seed, train a tiny Llama on short record streams (<= ~76 tokens),
then read 60 documents ~5x longer through the training-free memory attention with every
method (full attention, sliding window, InfLLM, EM-LLM) at each retrieval budget, and score
the pass-key answer at the last position. The segmentation analysis compares the surprise
events of EM-LLM (S), their graph refinement (SM) and evenly spaced boundaries (fixed) by
boundary F1 against the true record starts and by modularity of the key-similarity graph.

Paper scale: a local Mistral / Llama checkpoint, the extended passkey and LongBench /
InfiniteBench tasks from local jsonl files, greedy answers written to ``predictions/``.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from papers.em_llm.claims import LABELS, REAL_LABELS, REAL_PLOT
from papers.em_llm.config import Config, MemoryConfig
from papers.em_llm.data import (
    PASSKEY_FILLER,
    PK,
    Document,
    format_prompt,
    load_task,
    passkey_prompt,
    test_documents,
    training_batch,
    training_labels,
    truncate_middle,
)
from papers.em_llm.method import (
    boundary_f1,
    evenly_spaced,
    key_similarity,
    modularity,
    refine_boundaries,
)
from papers.em_llm.model import (
    attach_memory_attention,
    build_toy_model,
    full_attention_logits,
    load_local_model,
    read_document,
)
from papers.em_llm.real import SEGMENTATIONS, RealReader, real_metrics
from shared import checkpoint, pretrained
from shared.config import REAL_SCALE
from shared.entry import main
from shared.experiment import RunOutput, check_names, map_jobs, parallel_runs, run_grid
from shared.logger import MetricsLogger
from shared.loop import CHECKPOINT_NAME, fit
from shared.plotting import plt
from shared.preflight import missing_model_folders, missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import seed_everything

PASSKEY_METHODS = (
    "full",
    "sliding_window",
    "infllm",
    "em_llm",
    "em_llm_sm",
    "em_llm_c",
    "em_llm_smc",
)
SEGMENTATION_METHODS = ("fixed_segmentation",)
METHODS = PASSKEY_METHODS + SEGMENTATION_METHODS

# scale=real: the pinned assets the entry point verifies before any work (shared/assets.py)
REAL_ASSETS = (pretrained.MODEL_ASSET, pretrained.CORPUS_ASSET)

# Trained toy LMs of this process, keyed by everything that determines them: the claim check,
# the smoke tests and reruns in one test session train each (config, seed) once.
_TRAINED: dict[str, dict] = {}


# --------------------------------------------------------------------------- variants


def method_memory(method: str, cfg: Config) -> MemoryConfig:
    """The memory settings of a method (brief Sec. 3.6): InfLLM = fixed ``infllm_block``
    events without surprise or contiguity; S / SM / S+C / SM+C switch refinement and the
    contiguity buffer on the configured memory."""
    m = cfg.memory
    refine = m.refine or cfg.eval.refine_metric
    if method == "infllm":
        block = cfg.infllm_block
        return dataclasses.replace(
            m,
            uniform_blocks=True,
            max_block=block,
            min_block=min(m.min_block, block),
            refine=None,
            contiguity=False,
        )
    variants = {
        "sliding_window": (None, False),
        "em_llm": (None, False),
        "em_llm_sm": (refine, False),
        "em_llm_c": (None, True),
        "em_llm_smc": (refine, True),
    }
    refine_metric, contiguity = variants[method]
    return dataclasses.replace(m, refine=refine_metric, contiguity=contiguity)


def budget_name(n_mem: int) -> str:
    return "inf" if n_mem < 0 else str(n_mem)


# --------------------------------------------------------------------------- the toy LM


def train_lm(cfg: Config, seed: int, run_dir: Path, accelerator, logger):
    """The toy LM (brief Sec. 5): next-token loss on every position of short record streams,
    AdamW, linear warm-up x cosine, gradient clipping; trained once per (config, seed)."""
    key = json.dumps(
        [
            dataclasses.asdict(cfg.model),
            dataclasses.asdict(cfg.train),
            dataclasses.asdict(cfg.stream),
            seed,
        ],
        sort_keys=True,
    )
    if key in _TRAINED:  # hand the finished checkpoint to the loop, which resumes at the end
        checkpoint.save_checkpoint(_TRAINED[key], Path(run_dir) / CHECKPOINT_NAME)
    seed_everything(seed)
    model = build_toy_model(cfg.model)
    t = cfg.train
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=t.lr, weight_decay=t.weight_decay, foreach=True
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, t.warmup_steps, t.steps)
    model, optimizer = accelerator.prepare(model, optimizer)

    def compute_loss(m, ids):
        return m(input_ids=ids, labels=training_labels(ids), use_cache=False).loss, {}

    fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=t.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        # every batch is a pure function of (seed, step): resumable
        next_batch=lambda step: training_batch(
            cfg.stream, t.batch_size, random.Random(f"{seed}-{step}")
        ),
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: schedule.step(),
        stateful={"schedule": schedule},
        logger=logger,
        tags={"method": "lm", "seed": seed},
        progress=cfg.runtime.progress,
        desc=f"LM s{seed}",
    )
    accelerator.free_memory()
    if key not in _TRAINED:
        _TRAINED[key] = checkpoint.load_checkpoint(Path(run_dir) / CHECKPOINT_NAME)
    lm = accelerator.unwrap_model(model).eval()
    lm.requires_grad_(False)
    return attach_memory_attention(lm)


# --------------------------------------------------------------------------- toy evaluation


def read_all(lm, docs: list[Document], method: str, n_mem: int, cfg: Config, keep_keys: int = 0):
    """Read every document with one method at one budget; per document: correctness of the
    answer, events, boundaries, surprise, peak keys (and the keys of the first ``keep_keys``
    documents, for the segmentation analysis)."""
    out = []
    for i, doc in enumerate(docs):
        ids = torch.tensor(doc.ids)
        if method == "full":
            logits = full_attention_logits(lm, ids)[-1]
            out.append({"correct": int(logits.argmax()) == doc.target})
            continue
        memory = dataclasses.replace(method_memory(method, cfg), n_mem=n_mem)
        reading = read_document(lm, ids, memory, sliding_window=method == "sliding_window")
        record = {
            "correct": int(reading.last_logits.argmax()) == doc.target,
            "events": reading.events,
            "boundaries": reading.boundaries,
            "surprise": reading.surprise,
            "peak_keys": max(reading.peak_keys),
        }
        if i < keep_keys:  # (L, H_kv, T, d) un-rotated keys of every layer
            record["keys"] = torch.stack([m.keys for m in reading.memories])
        out.append(record)
    return out


def segmentation_analysis(
    docs, em_readings, sliding_readings, cfg: Config
) -> dict[str, dict[str, float]]:
    """Brief Sec. 5: over the region turned into events, boundary F1 against the true record
    starts and modularity (1/(4m)) of A = sum_{l,h} K K^T (keys of a sliding-window pass) for
    the surprise segmentation (S), its refinement (SM) and evenly spaced boundaries (fixed)."""
    e = cfg.eval
    rows: dict[str, dict[str, list[float]]] = {
        name: {"boundary_f1": [], "modularity": [], "needle_intact": []}
        for name in ("S", "SM", "fixed")
    }
    for doc, em, sliding in zip(docs, em_readings, sliding_readings, strict=False):
        if not em["events"]:
            continue
        begin, end = em["events"][0][0], em["events"][-1][1]
        surprise_starts = [b for b, _ in em["events"][1:]]
        adjacency = key_similarity(sliding["keys"][:, :, begin:end])
        relative = [b - begin for b in surprise_starts]
        segmentations = {
            "S": surprise_starts,
            "SM": [
                b + begin
                for b in refine_boundaries(adjacency, relative, e.refine_min_block, e.refine_metric)
            ],
            "fixed": evenly_spaced(begin, end, len(surprise_starts)),
        }
        true_starts = [s for s in doc.record_starts if begin < s < end]
        needle = doc.ids.index(PK) - 1  # the pass-key token; PK follows it
        for name, starts in segmentations.items():
            rows[name]["boundary_f1"].append(boundary_f1(starts, true_starts, e.boundary_tolerance))
            rows[name]["modularity"].append(modularity(adjacency, [b - begin for b in starts]))
            if begin <= needle < end - 1:  # both p and PK inside the region: same event?
                cut = any(needle < b <= needle + 1 for b in starts)
                rows[name]["needle_intact"].append(0.0 if cut else 1.0)
    return {
        name: {k: float(np.mean(v)) if v else float("nan") for k, v in r.items()}
        for name, r in rows.items()
    }


class ToySeed:
    """Everything one seed's methods share: the trained LM, the test documents, and readings
    cached per (method, budget), so each is computed once however the grid is walked."""

    def __init__(self, cfg: Config, seed: int, out_dir: Path, accelerator, logger):
        self.cfg = cfg
        self.lm = train_lm(cfg, seed, out_dir / "runs" / f"lm-s{seed}", accelerator, logger)
        self.docs = test_documents(cfg.stream, cfg.eval.n_documents, seed)
        self.readings: dict[tuple[str, int], list[dict]] = {}
        self._segmentation: dict | None = None

    def readings_of(self, method: str, n_mem: int) -> list[dict]:
        if method in ("full", "sliding_window"):
            n_mem = -1  # budget-independent: one pass serves every budget
        key = (method, n_mem)
        if key not in self.readings:
            keep = self.cfg.eval.segmentation_documents if method == "sliding_window" else 0
            self.readings[key] = read_all(self.lm, self.docs, method, n_mem, self.cfg, keep)
        return self.readings[key]

    def segmentation(self) -> dict:
        if self._segmentation is None:
            n = self.cfg.eval.segmentation_documents
            self._segmentation = segmentation_analysis(
                self.docs[:n],
                self.readings_of("em_llm", -1)[:n],
                self.readings_of("sliding_window", -1)[:n],
                self.cfg,
            )
        return self._segmentation


def toy_metrics(method: str, ctx: ToySeed, cfg: Config) -> RunOutput:
    metrics: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    variant_without_passkey = method == "em_llm_sm" and not cfg.eval.variant_passkey
    if method in PASSKEY_METHODS and not variant_without_passkey:
        for n_mem in cfg.eval.budgets:
            readings = ctx.readings_of(method, n_mem)
            name = budget_name(n_mem)
            metrics[f"acc_{name}"] = float(np.mean([r["correct"] for r in readings]))
            if method != "full":
                metrics[f"peak_keys_{name}"] = float(max(r["peak_keys"] for r in readings))
                metrics[f"events_{name}"] = float(np.mean([len(r["events"]) for r in readings]))
    segmentation = {"em_llm": "S", "em_llm_sm": "SM", "fixed_segmentation": "fixed"}
    if method in segmentation:
        metrics.update(ctx.segmentation()[segmentation[method]])
    if method == "em_llm":  # the plotted document's surprise trace and boundaries
        reading = ctx.readings_of("em_llm", -1)[cfg.eval.plot_document]
        curves["surprise"] = [
            0.0 if np.isnan(s) else float(s) for s in reading["surprise"].tolist()
        ]
        curves["event_starts"] = [float(b) for b, _ in reading["events"]]
    return RunOutput(metrics=metrics, curves=curves)


# --------------------------------------------------------------------------- paper scale


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads a local checkpoint and, for benchmark tasks, a local folder of jsonl
    files: name each one that is unset or absent, before any work."""
    hint = " (a local path; nothing is downloaded, see configs/em_llm/paper.yaml)"
    paths = {"benchmark.root": cfg.benchmark.root} if cfg.benchmark.tasks else {}
    return missing_model_folders({"model.path": cfg.model.path}, hint) + missing_paths(paths, hint)


def answer_score(task: str, prediction: str, answers: list[str]) -> float:
    """Containment of a gold answer (passkey, kv_retrieval, number_string, retrieval tasks);
    other tasks' official metrics (F1, ROUGE, code similarity) are left to LongBench's
    ``eval.py`` on the written predictions, so their score here is the same containment."""
    normal = re.sub(r"\s+", " ", prediction.lower())
    return float(any(str(a).lower() in normal for a in answers))


def paper_examples(cfg: Config, tokenizer) -> dict[str, list[tuple[list[int], list[str], int]]]:
    """(prompt ids, gold answers, new tokens) per task: extended passkey at each length, then
    LongBench / InfiniteBench tasks with their official prompts and maximum lengths."""
    b = cfg.benchmark
    tasks: dict[str, list] = {}
    for length in b.passkey_lengths:
        rng = random.Random(length)
        sentence = len(tokenizer(PASSKEY_FILLER)["input_ids"])  # tokens per filler unit
        examples = []
        for trial in range(b.passkey_trials):
            prompt, answer = passkey_prompt(
                max(1, length // sentence),
                trial / max(1, b.passkey_trials - 1),
                rng.randint(10000, 99999),
            )
            examples.append((tokenizer(prompt)["input_ids"], [answer], 8))
        tasks[f"passkey_{length}"] = examples
    for task in b.tasks:
        if task not in b.prompts:
            raise ValueError(f"benchmark.prompts has no template for task {task!r}")
        examples = []
        for row in load_task(b.root, task, b.max_examples):
            ids = tokenizer(format_prompt(b.prompts[task], row))["input_ids"]
            answers = row.get("answers", row.get("answer", []))
            answers = answers if isinstance(answers, list) else [answers]
            examples.append(
                (
                    truncate_middle(ids, b.max_lengths.get(task, len(ids))),
                    answers,
                    b.max_new_tokens.get(task, 32),
                )
            )
        tasks[task] = examples
    return tasks


def run_paper(cfg: Config, out_dir: Path) -> Results:
    """Every method x task on a local checkpoint; greedy answers go to predictions/*.jsonl."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cfg.model.path, local_files_only=True)
    lm = attach_memory_attention(load_local_model(cfg.model.path, cfg.model.dtype).eval())
    lm.requires_grad_(False)
    tasks = paper_examples(cfg, tokenizer)
    eos = tokenizer.eos_token_id
    prediction_dir = out_dir / "predictions"
    prediction_dir.mkdir(parents=True, exist_ok=True)

    def evaluate(method: str, seed: int, run_dir: Path) -> RunOutput:
        seed_everything(seed)
        metrics = {}
        for task, examples in tasks.items():
            scores, lines = [], []
            for ids, answers, new_tokens in examples:
                ids = torch.tensor(ids)
                if method == "full":
                    generated = greedy_full(lm, ids, new_tokens, eos)
                else:
                    memory = method_memory(method, cfg)
                    reading = read_document(
                        lm, ids, memory, method == "sliding_window", new_tokens, eos
                    )
                    generated = reading.generated
                text = tokenizer.decode(generated, skip_special_tokens=True)
                scores.append(answer_score(task, text, answers))
                lines.append(json.dumps({"prediction": text, "answers": answers}))
            (prediction_dir / f"{method}-{task}.jsonl").write_text("\n".join(lines) + "\n")
            metrics[f"score_{task}"] = float(np.mean(scores))
        return RunOutput(metrics=metrics)

    results, _ = run_grid(cfg.methods, cfg.seeds, out_dir, evaluate, progress=cfg.runtime.progress)
    return results


@torch.no_grad()
def greedy_full(lm, ids: torch.Tensor, new_tokens: int, eos: int | None) -> list[int]:
    """Greedy answer with plain full attention (the full-context baseline)."""
    generated: list[int] = []
    for _ in range(new_tokens):
        token = int(
            full_attention_logits(lm, torch.cat([ids, torch.tensor(generated, dtype=ids.dtype)]))[
                -1
            ].argmax()
        )
        if token == eos:
            break
        generated.append(token)
    return generated


# --------------------------------------------------------------------------- entry


def real_assets(cfg: Config) -> tuple[str, ...]:
    """SmolLM2 unless ``model.path`` names your checkpoint; the docutils documents unless
    ``real.corpus_path`` names your text."""
    return tuple(
        asset
        for asset, own in zip(REAL_ASSETS, (cfg.model.path, cfg.real.corpus_path), strict=True)
        if own is None
    )


def user_files(cfg: Config) -> dict[str, str]:
    """Your checkpoint's config and weights and your text files, recorded with their sha256."""
    return pretrained.own_files(
        {"model.path": cfg.model.path}, {"real.corpus_path": cfg.real.corpus_path}
    )


def real_model_problems(config: dict, cfg: Config) -> list[str]:
    """Your checkpoint against the run: full attention reads inside its window, the memory's
    positions (initial + retrieved + local tokens and a chunk) fit in it, and the refinement's
    layers exist."""
    window, layers = config.get("max_position_embeddings"), config.get("num_hidden_layers")
    problems = []
    for name, n in cfg.real.full_lengths.items():
        if window is not None and n > window:
            problems.append(
                f"real.full_lengths.{name}={n}: above model.path's window ({window} tokens); "
                "full attention is the baseline inside it"
            )
    m = cfg.memory
    span = m.n_init + max(m.n_mem, 0) + m.n_local + m.chunk
    if window is not None and span > window:
        problems.append(
            f"memory.n_local={m.n_local}: n_init + n_mem + n_local + chunk = {span} positions "
            f"exceed model.path's window ({window})"
        )
    if layers is not None and m.refine_from_layer >= layers:
        problems.append(
            f"memory.refine_from_layer={m.refine_from_layer}: model.path has {layers} layers"
        )
    return problems


def real_preflight(cfg: Config) -> list[str]:
    """scale=real reads SmolLM2 and the docutils documents (``real_assets``) or your own
    checkpoint (``model.path``: a Llama-family folder, checked against the memory's sizes) and
    text (``real.corpus_path``), each checked before any weights load."""
    problems = []
    if cfg.model.path is not None:
        config, found = pretrained.model_config("model.path", cfg.model.path)
        problems += found or real_model_problems(config, cfg)
    if cfg.real.corpus_path is not None:
        try:
            pretrained.corpus_folder(cfg.real.corpus_path)
        except ValueError as err:
            problems.append(f"real.corpus_path: {err}")
    return problems


def run_real(cfg: Config, out_dir: Path) -> Results:
    """Every document of every real method, in ``real.processes`` forked workers (one thread
    each; each document is independent, so the numbers do not depend on the count), then the
    per-method metrics and the real figure."""
    reader = RealReader(cfg)
    jobs = reader.jobs(cfg.methods, cfg.seeds)
    with parallel_runs(cfg.real.processes):
        answers = map_jobs(reader.run, jobs, desc="documents", progress=cfg.runtime.progress)
    done = dict(zip(jobs, answers, strict=True))
    results, _ = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        lambda method, seed, run_dir: real_metrics(method, seed, cfg, done),
        progress=cfg.runtime.progress,
    )
    plot_real(results, cfg, out_dir / REAL_PLOT)
    return results


def reader_window(cfg: Config) -> int:
    """The real model's context window (its ``max_position_embeddings``)."""
    folder = Path(cfg.model.path).expanduser() if cfg.model.path else pretrained.model_folder()
    return json.loads((folder / "config.json").read_text())["max_position_embeddings"]


def plot_real(results: Results, cfg: Config, path: Path) -> None:
    """Left: pass-key accuracy against document length per method (full attention inside the
    window, the memory methods at 2x and 4x it). Right: modularity and conductance of the
    three segmentations of the test documents."""
    fig, (left, mid, right) = plt.subplots(
        1, 3, figsize=(12, 3.8), dpi=100, gridspec_kw={"width_ratios": [1.6, 1, 1]}
    )
    for method, marker in (("full", "s"), ("sliding_window", "v"), ("em_llm", "o")):
        if method not in results:
            continue
        named = cfg.real.full_lengths if method == "full" else cfg.real.passkey_lengths
        lengths = sorted((n, name) for name, n in named.items() if name in results[method])
        accuracy = [np.mean(results[method][name]) for _, name in lengths]
        left.plot(
            [n for n, _ in lengths], accuracy, marker=marker, label=REAL_LABELS.get(method, method)
        )
    window = reader_window(cfg)
    left.axvline(window, color="0.6", ls=":", lw=1, label=f"model window ({window:,})")
    left.set_xscale("log", base=2)
    left.set_xlabel("document length (tokens)")
    left.set_ylabel("pass-key accuracy")
    left.set_ylim(-0.05, 1.05)
    left.legend(frameon=False, fontsize=7)
    model = Path(cfg.model.path).name if cfg.model.path else "SmolLM2-135M"
    left.set_title(f"{model}, {cfg.real.documents} documents per length", fontsize=8)
    names = [m for m in SEGMENTATIONS if m in results and "modularity" in results[m]]
    for axis, metric in ((mid, "modularity"), (right, "conductance")):
        values = [np.mean(results[m][metric]) for m in names]
        axis.bar(range(len(names)), values, color=["tab:red", "tab:purple", "0.6"][: len(names)])
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels([SEGMENTATIONS[m] for m in names])
        better = "higher" if metric == "modularity" else "lower"
        axis.set_title(f"{metric} ({better} is better), test documents", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(cfg: Config, out_dir: Path) -> Results:
    check_names("methods", cfg.methods, METHODS)
    out_dir = Path(out_dir)
    if cfg.scale == REAL_SCALE:
        return run_real(cfg, out_dir)
    if cfg.model.path is not None:
        return run_paper(cfg, out_dir)
    accelerator = make_accelerator(cfg.runtime)
    logger = MetricsLogger(
        out_dir / "metrics.jsonl", cfg.loop.console_every_s, accelerator.is_main_process
    )
    seeds: dict[int, ToySeed] = {}

    def evaluate(method: str, seed: int, run_dir: Path) -> RunOutput:
        if seed not in seeds:
            seeds[seed] = ToySeed(cfg, seed, out_dir, accelerator, logger)
        return toy_metrics(method, seeds[seed], cfg)

    results, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        evaluate,
        is_main_process=accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=logger,
    )
    if accelerator.is_main_process:
        plot(results, curves, cfg, out_dir / "passkey_and_surprise.png")
    return results


def plot(results: Results, curves, cfg: Config, path: Path) -> None:
    """Left: pass-key accuracy by method and budget. Right: one test document's surprise
    trace with its true record starts and the events EM-LLM formed."""
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(11, 3.8), dpi=100, gridspec_kw={"width_ratios": [1, 1.6]}
    )
    methods = [m for m in results if any(k.startswith("acc_") for k in results[m])]
    budgets = [budget_name(b) for b in cfg.eval.budgets]
    width = 0.8 / max(1, len(budgets))
    for j, name in enumerate(budgets):
        means = [np.mean(results[m].get(f"acc_{name}", [np.nan])) for m in methods]
        left.bar(np.arange(len(methods)) + j * width, means, width, label=f"n_mem = {name}")
    left.set_xticks(np.arange(len(methods)) + width * (len(budgets) - 1) / 2)
    left.set_xticklabels(
        [LABELS.get(m, m).split(" (")[0] for m in methods], rotation=20, fontsize=7, ha="right"
    )
    left.set_ylabel("pass-key accuracy")
    left.set_ylim(0, 1.05)
    left.legend(frameon=False, fontsize=7)
    left.set_title(f"documents ~5x the training length, seeds {list(cfg.seeds)}", fontsize=8)
    trace = curves.get("em_llm", {})
    if trace.get("surprise"):
        surprise = np.asarray(trace["surprise"][0])
        right.plot(surprise, lw=0.8, color="0.3", label="surprise -log p(x_t)")
        doc = test_documents(cfg.stream, cfg.eval.plot_document + 1, cfg.seeds[0])[
            cfg.eval.plot_document
        ]
        for k, s in enumerate(doc.record_starts):
            right.axvline(
                s,
                color="tab:green",
                lw=0.6,
                alpha=0.6,
                label="true record start" if k == 0 else None,
            )
        starts = trace["event_starts"][0]
        right.plot(
            starts,
            np.interp(starts, np.arange(len(surprise)), surprise),
            "v",
            color="tab:red",
            ms=4,
            label="EM-LLM event start",
        )
        right.set_xlim(0, min(len(surprise), 200))
        right.set_xlabel("token position (first 200 tokens)")
        right.set_ylabel("surprise (nats)")
        right.legend(frameon=False, fontsize=7, loc="upper right")
        right.set_title(f"test document {cfg.eval.plot_document}, seed {cfg.seeds[0]}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("em_llm")
