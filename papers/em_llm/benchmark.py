"""Speed and memory of the memory attention: ``python -m papers.em_llm.benchmark``.

On the toy LM (seed 0, trained as the toy trains it), one thread:

* a sweep of record-stream documents from 1k to 1M tokens: tokens / s, peak RSS (reset per
  call through ``/proc/self/clear_refs``) and keys held per layer (the most distinct keys in
  one chunk's attention, and the keys stored) for EM-LLM_S, InfLLM and full attention (one
  forward pass; it stops once its quadratic time, extrapolated from the last length, would
  exceed ``--full-max-s``), timed interleaved;
* pass-key accuracy of EM-LLM_S at 64k, 256k and 1M tokens (needle at a uniformly random
  record, i.e. a random depth);
* the configuration measured beside the official code (random tiny Llama, c = 512,
  n_local = 1024, n_mem = 512, the official rules), S and SM+C;
* the real model (``real_model``, scale=real's SmolLM2-135M and configs/em_llm/real.yaml's
  memory): tokens / s and peak RSS of EM-LLM_S, the sliding window and the bare model's own
  full attention on one ``--real-length`` pass-key document (``--only-real`` measures this
  row alone and adds it to an existing results file; skipped when the asset is not fetched).

The memory runs with the toy's settings except the execution block (``--chunk``, 512 as the
paper's c). Ratios are printed and written to ``results/benchmark.json``, never asserted.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import dataclasses  # noqa: E402
import gc  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from papers.em_llm.config import MemoryConfig, ModelConfig  # noqa: E402
from papers.em_llm.data import make_document  # noqa: E402
from papers.em_llm.model import (  # noqa: E402
    attach_memory_attention,
    build_toy_model,
    full_attention_logits,
    read_document,
)
from shared.benchmarks import interleaved, timed, write_benchmark  # noqa: E402
from shared.config import compose  # noqa: E402

RESULTS = Path(__file__).parent / "results"
# the measurement of the official code on the same tiny Llama (tokens / s, one thread)
OFFICIAL_TOKENS_PER_S = {"S": 5632.0, "SM+C": 870.0}


def peak_rss_reset() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux >= 4.0); False if unavailable."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def release_free_memory() -> None:
    """Return freed heap pages to the OS (glibc's ``malloc_trim``) after a garbage collection,
    so that a call's RSS starts from what the process still holds, not from the high-water
    mark of the toy LM's training or an earlier candidate (about 60 MiB here). Run untimed,
    before each measured call (``interleaved(before=...)``)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def with_peak_rss(fn):
    """``fn`` wrapped so each call records its own peak RSS (MiB) in ``wrapped.peaks`` and
    the RSS it started from (interpreter, torch, the model) in ``wrapped.starts``."""

    def wrapped():
        peak_rss_reset()
        wrapped.starts.append(rss_mib())
        out = fn()
        wrapped.peaks.append(peak_rss_mib())
        return out

    wrapped.peaks, wrapped.starts = [], []
    return wrapped


def model_mib(lm) -> float:
    """The model's parameters and buffers, MiB."""
    tensors = [*lm.parameters(), *lm.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20


def long_document(cfg, length: int, rng: random.Random):
    """A record stream of about ``length`` tokens (records of ~9.5 tokens)."""
    n = max(2, round((length - 3) / (2 + (cfg.min_repeat + cfg.max_repeat) / 2)))
    return make_document(cfg, n, rng)


def trained_lm(seed: int, steps: int | None):
    """The toy LM of ``seed`` (the toy's training; ``steps`` overrides its step count)."""
    from papers.em_llm.train import train_lm
    from shared.logger import MetricsLogger
    from shared.runtime import make_accelerator

    overrides = [] if steps is None else [f"train.steps={steps}"]
    cfg = compose("em_llm", "toy", overrides)
    cfg.runtime.progress = False
    with tempfile.TemporaryDirectory() as tmp:
        accelerator = make_accelerator(cfg.runtime)
        logger = MetricsLogger(Path(tmp) / "metrics.jsonl", 1e9, False)
        lm = train_lm(cfg, seed, Path(tmp) / "lm", accelerator, logger)
    torch.set_num_threads(1)
    return lm, cfg


def memory_configs(cfg, chunk: int) -> dict[str, MemoryConfig]:
    em = dataclasses.replace(cfg.memory, chunk=chunk, max_tokens=10**8)
    infllm = dataclasses.replace(
        em, uniform_blocks=True, max_block=cfg.infllm_block, min_block=cfg.infllm_block
    )
    return {"em_llm": em, "infllm": infllm}


def sweep(lm, cfg, lengths, chunk, full_max_s, repeats) -> list[dict]:
    configs = memory_configs(cfg, chunk)
    rng = random.Random(0)
    rows, full_s, full_len, full_stop = [], None, None, None
    for length in lengths:
        doc = long_document(cfg.stream, length, rng)
        ids = torch.tensor(doc.ids)
        n = ids.numel()
        readings: dict[str, object] = {}
        candidates = {}
        for name, memory in configs.items():

            def read(memory=memory, name=name, ids=ids, readings=readings, target=doc.target):
                # keep a summary, not the reading: a reading held here would count its whole
                # memory in the next candidate's peak RSS
                reading = read_document(lm, ids, memory)
                readings[name] = {
                    "keys_held_per_layer": max(reading.peak_keys),
                    "keys_stored_per_layer": reading.memories[0].length,
                    "events": len(reading.memories[0].events),
                    "correct": int(reading.last_logits.argmax()) == target,
                    "payload_mib": sum(m.storage_bytes for m in reading.memories) / 2**20,
                }

            candidates[name] = with_peak_rss(read)
        predicted = None if full_s is None else full_s * (n / full_len) ** 2
        if full_stop is None and (predicted is None or predicted <= full_max_s):
            candidates["full"] = with_peak_rss(lambda ids=ids: full_attention_logits(lm, ids))
        elif full_stop is None:
            full_stop = {"length": n, "predicted_s": predicted}
        reps = repeats if n <= 16_384 else 1
        seconds = interleaved(
            candidates, reps, warmup=1 if n <= 16_384 else 0, before=release_free_memory
        )
        row = {"length": n}
        for name, s in seconds.items():
            entry = {
                "tokens_per_s": n / s,
                "seconds": s,
                "peak_rss_mib": max(candidates[name].peaks),
            }
            if name in readings:
                # the payload (every layer's keys, values, scores and representative keys, as
                # allocated) plus the model, against the whole process's peak RSS
                model = model_mib(lm)
                payload = readings[name]["payload_mib"]
                entry.update(
                    **readings[name],
                    model_mib=model,
                    rss_start_mib=max(candidates[name].starts),
                    peak_over_payload_plus_model=max(candidates[name].peaks) / (payload + model),
                )
            else:
                full_s, full_len = s, n
            row[name] = entry
        rows.append(row)
        print(
            f"{n:>9,d} tokens  "
            + "  ".join(
                f"{k}: {v['tokens_per_s']:>9,.0f} tok/s {v['peak_rss_mib']:>6,.0f} MiB"
                + (
                    f" (payload {v['payload_mib']:,.0f} + model {v['model_mib']:,.0f} MiB)"
                    f" {v['keys_held_per_layer']} keys"
                    if "keys_held_per_layer" in v
                    else ""
                )
                for k, v in row.items()
                if k != "length"
            ),
            flush=True,
        )
    return rows, full_stop


def passkey(lm, cfg, lengths, n_docs, chunk) -> dict:
    memory = memory_configs(cfg, chunk)["em_llm"]
    out = {}
    for length in lengths:
        rng = random.Random(f"passkey-{length}")
        correct, depths, seconds = [], [], 0.0
        for _ in range(n_docs):
            doc = long_document(cfg.stream, length, rng)
            ids = torch.tensor(doc.ids)
            s, reading = timed(lambda ids=ids: read_document(lm, ids, memory))
            seconds += s
            correct.append(int(reading.last_logits.argmax()) == doc.target)
            depths.append(doc.ids.index(4) / len(doc.ids))  # PK marker position
        out[str(length)] = {
            "accuracy": sum(correct) / len(correct),
            "documents": n_docs,
            "depths": [round(d, 4) for d in depths],
            "correct": correct,
            "tokens_per_s": n_docs * length / seconds,
        }
        print(f"pass-key {length:>9,d} tokens: {sum(correct)}/{n_docs}", flush=True)
    return out


def official_configuration(length: int, repeats: int) -> dict:
    """Random tiny Llama, c = 512, n_local = 1024, n_mem = 512, the paper config's official
    rules (refinement from layer 0 of 2): S and SM+C tokens / s."""
    torch.manual_seed(0)
    lm = attach_memory_attention(build_toy_model(ModelConfig()).eval())
    paper = compose("em_llm", "paper").memory
    base = dataclasses.replace(
        paper, n_local=1024, n_mem=512, refine_from_layer=0, max_tokens=10**8
    )
    variants = {
        "S": base,
        "SM+C": dataclasses.replace(base, refine="modularity", contiguity=True),
    }
    ids = torch.randint(5, 101, (length,), generator=torch.Generator().manual_seed(0))
    seconds = interleaved(
        {k: (lambda m=m: read_document(lm, ids, m)) for k, m in variants.items()}, repeats
    )
    return {
        k: {
            "tokens_per_s": length / s,
            "official_tokens_per_s": OFFICIAL_TOKENS_PER_S[k],
            "ratio_over_official": length / s / OFFICIAL_TOKENS_PER_S[k],
        }
        for k, s in seconds.items()
    }


def real_model_row(length: int, repeats: int) -> dict | None:
    """SmolLM2-135M with scale=real's memory on one pass-key document of ``length`` tokens:
    EM-LLM_S, the sliding window (only the last logits) and the model's own full attention
    (one forward pass; within its window only). None when the asset is not fetched."""
    from papers.em_llm.real import passkey_documents
    from shared import assets, pretrained

    if assets.missing((pretrained.MODEL_ASSET,)):
        print("real model: not fetched (python scripts/fetch_assets.py); row skipped")
        return None
    cfg = compose("em_llm", "real")
    model, tokenizer = pretrained.load_model()
    lm = attach_memory_attention(model.requires_grad_(False))
    torch.set_num_threads(1)
    real = dataclasses.replace(cfg.real, documents=1)
    ids = torch.tensor(passkey_documents(tokenizer, length, real, seed=0)[0].ids)
    readings: dict[str, object] = {}

    def read(name: str, sliding: bool):
        def run():
            readings[name] = read_document(
                lm, ids, cfg.memory, sliding_window=sliding, score_surprise=not sliding
            )

        return with_peak_rss(run)

    candidates = {"em_llm": read("em_llm", False), "sliding_window": read("sliding_window", True)}
    if ids.numel() <= model.config.max_position_embeddings:
        candidates["full"] = with_peak_rss(lambda: full_attention_logits(lm, ids))
    seconds = interleaved(candidates, repeats, warmup=0, before=release_free_memory)
    row = {"length": ids.numel(), "memory": dataclasses.asdict(cfg.memory)}
    for name, s in seconds.items():
        row[name] = {
            "tokens_per_s": ids.numel() / s,
            "seconds": s,
            "peak_rss_mib": max(candidates[name].peaks),
        }
        if name in readings:
            row[name]["keys_held_per_layer"] = max(readings[name].peak_keys)
    print(
        f"real model, {ids.numel():,d} tokens: "
        + "  ".join(
            f"{k}: {row[k]['tokens_per_s']:,.0f} tok/s {row[k]['peak_rss_mib']:,.0f} MiB"
            for k in seconds
        ),
        flush=True,
    )
    return row


def plot(rows, path: Path) -> None:
    from shared.plotting import plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name, label in (("em_llm", "EM-LLM_S"), ("infllm", "InfLLM"), ("full", "full attention")):
        xs = [r["length"] for r in rows if name in r]
        a.plot(xs, [r[name]["tokens_per_s"] for r in rows if name in r], "o-", label=label)
        b.plot(xs, [r[name]["peak_rss_mib"] for r in rows if name in r], "o-", label=label)
        if name != "full":
            held = [r[name]["keys_held_per_layer"] for r in rows if name in r]
            b.plot(xs, held, "x--", label=f"{label}: keys held / layer")
    for ax, title in ((a, "tokens / s (one thread)"), (b, "peak RSS (MiB), keys held")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("context length (tokens)")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="1024,4096,16384,65536,262144,1048576")
    parser.add_argument("--passkey-lengths", default="65536,262144,1048576")
    parser.add_argument("--passkey-docs", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--full-max-s", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--official-length", type=int, default=16384)
    parser.add_argument("--train-steps", type=int, default=None, help="default: the toy's")
    parser.add_argument("--real-length", type=int, default=4096, help="0: no real-model row")
    parser.add_argument(
        "--only-real", action="store_true", help="measure the real-model row alone, add it to --out"
    )
    parser.add_argument("--out", type=Path, default=None, help="results json path")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    ints = lambda text: [int(x) for x in text.split(",") if x]  # noqa: E731
    if args.only_real:
        return add_real_row(args, argv)
    lm, cfg = trained_lm(0, args.train_steps)
    rows, full_stop = sweep(lm, cfg, ints(args.lengths), args.chunk, args.full_max_s, args.repeats)
    keys = passkey(lm, cfg, ints(args.passkey_lengths), args.passkey_docs, args.chunk)
    official = official_configuration(args.official_length, args.repeats)
    for k, v in official.items():
        print(
            f"official configuration {k}: {v['tokens_per_s']:,.0f} tok/s "
            f"(official {v['official_tokens_per_s']:,.0f}, {v['ratio_over_official']:.2f}x)"
        )
    results = {"sweep": rows, "full_attention_stops": full_stop, "passkey": keys}
    results["official_configuration"] = official
    results["settings"] = {"chunk": args.chunk, "memory": dataclasses.asdict(cfg.memory)}
    if args.real_length > 0:
        results["real_model"] = real_model_row(args.real_length, args.repeats)
    path = write_benchmark("em_llm", results, argv, args.out)
    plot(rows, path.with_suffix(".png"))
    return results


def add_real_row(args, argv: list[str] | None) -> dict:
    """``--only-real``: the real-model row alone, added to the results file at ``--out`` (or
    results/benchmark.json), the toy's rows and their command left as they were; the row
    records its own command and commit."""
    import json
    import sys

    from shared.benchmarks import benchmark_path
    from shared.records import git_commit, write_json

    path = Path(args.out) if args.out is not None else benchmark_path("em_llm")
    if not path.is_file():
        raise SystemExit(f"--only-real adds to an existing results file; {path} does not exist")
    record = json.loads(path.read_text())
    row = real_model_row(args.real_length, args.repeats)
    if row is not None:
        command = sys.argv[1:] if argv is None else argv
        row["command"] = " ".join(["python -m papers.em_llm.benchmark", *command])
        row["git_commit"] = git_commit()
        record["results"]["real_model"] = row
        write_json(record, path)
        print(f"wrote {path}")
    return record["results"]


if __name__ == "__main__":
    main()
