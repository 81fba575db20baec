"""Cache memory and decode speed of MatryoshkaKV (papers/matryoshka_kv): measured.

    python -m papers.matryoshka_kv.benchmark                 # toy + 1B-shaped Llama sweeps
    python -m papers.matryoshka_kv.benchmark --models toy --contexts 2048 4096
    python -m papers.matryoshka_kv.benchmark --prompt 256 --new 128 --batch 8 --repeats 3

1. **Ranks on the toy** (prefill + greedy ``generate``): for each uniform rank r of d, the bytes
   per token actually held by the compressed cache after a prefill (must be exactly r / d of
   the full cache's, nothing hidden), and generation tokens per second against the unmodified
   model's full cache (median of ``--repeats``).
2. **Decode sweep**: per model (``--models``: the toy's Llama; ``llama-1b``, the real
   transformers ``LlamaForCausalLM`` built from Llama-3.2-1B's shapes, 1.24 B parameters,
   random weights, nothing downloaded), context S (``--contexts``, 2k-16k) and cache budget
   (``--budgets``, 25 / 37.5 / 50 / 100 % = uniform rank r = budget x d): seconds per decoded
   token (``--decode`` tokens after S cached ones, batch 1, median of ``--sweep-repeats``
   rounds, all budgets of one S interleaved) and the cache's bytes, measured from its stored
   tensors. The cache is filled with random coordinates instead of a prefill (a 16k prefill
   of the 1B model would take an hour on one core; decode cost does not depend on the
   values). The reference is the unmodified model with its own sdpa attention and
   ``DynamicCache`` ("full").

3. **Real model** (``--real``, on by default when the asset is fetched): SmolLM2-135M
   (``shared.pretrained``, real weights, 30 layers, 3 KV heads of 64) beside the toy: the
   first ``--real-prompt`` tokens of a test document prefilled, ``--real-new`` tokens greedily
   generated with the full cache and with the compressed cache at each budget (identity bases:
   speed and memory do not depend on them); bytes per token held after the prefill and
   tokens/s. Cheap: one repeat of a short generation per budget.

One thread; weights random except the real model's (speed and memory do not depend on them).
Tables are printed and written with the environment to ``results/benchmark.json`` with a
log-log plot ``results/benchmark.png`` (``--out`` elsewhere). Target: memory = budget x full,
exactly; decode time falling with the budget where attention over the cache dominates.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.cache_utils import DynamicCache

from papers.matryoshka_kv.config import ModelConfig
from papers.matryoshka_kv.method import KVProjections, uniform_ranks
from papers.matryoshka_kv.model import (
    CompressedCache,
    _cache_kwarg,
    attach_projections,
    build_toy_model,
    cache_bytes_per_token,
    set_ranks,
)
from shared.benchmarks import interleaved, write_benchmark

# Llama-3.2-1B's shapes (its config.json): 16 layers, d_model 2048, 32 query / 8 KV heads of 64.
LLAMA_1B_SHAPES = dict(
    vocab_size=128256,
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=64,
    rope_theta=500000.0,
    max_position_embeddings=131072,
    tie_word_embeddings=True,
)
PAPER_BUDGETS = (0.25, 0.375, 0.5, 1.0)  # the paper's cache budgets


def tokens_per_second(model, prompt: torch.Tensor, new_tokens: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.generate(
            prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False
        )
        times.append(time.perf_counter() - start)
    return prompt.shape[0] * new_tokens / statistics.median(times)


def sweep_model(name: str) -> LlamaForCausalLM:
    """The toy's Llama or the 1B-shaped one, random weights, eval mode, sdpa attention."""
    torch.manual_seed(0)
    if name == "toy":
        return build_toy_model(ModelConfig()).eval()
    if name == "llama-1b":
        config = LlamaConfig(**LLAMA_1B_SHAPES, attn_implementation="sdpa")
        return LlamaForCausalLM(config).eval()
    if name == "tiny":  # the smoke test's stand-in
        config = LlamaConfig(
            vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=8,
            attn_implementation="sdpa",
        )  # fmt: skip
        return LlamaForCausalLM(config).eval()
    raise ValueError(f"unknown model {name!r}; choose toy, llama-1b or tiny")


def filled_cache(model, context: int, rank: int | None, generator: torch.Generator):
    """A cache holding ``context`` random tokens per layer: the model's own ``DynamicCache``
    of full keys / values (``rank=None``) or a ``CompressedCache`` of rank-r coordinates."""
    cfg = model.config
    n_kv, d = cfg.num_key_value_heads, cfg.head_dim
    if rank is None:
        cache = DynamicCache()
        for layer in range(cfg.num_hidden_layers):
            k, v = (torch.randn(1, n_kv, context, d, generator=generator) for _ in range(2))
            cache.update(k, v, layer)
        return cache
    cache = CompressedCache(cfg.num_hidden_layers)
    ranks = (rank,) * n_kv
    for layer in cache.layers:
        k, v = (torch.randn(1, n_kv, context, rank, generator=generator) for _ in range(2))
        layer.append(k, v, ranks, ranks)
    return cache


def decode_round(model, cache, context: int, tokens: torch.Tensor):
    """Decode ``tokens`` one at a time after the cache's ``context`` tokens, then crop it back
    (every round starts from the same cache)."""

    kwarg = _cache_kwarg(model)

    def run() -> None:
        for i in range(tokens.shape[1]):
            model(tokens[:, i : i + 1], **{kwarg: cache}, use_cache=True)
        cache.crop(-tokens.shape[1])  # drop what this round appended
        if cache.get_seq_length() != context:
            raise RuntimeError("the decode round did not restore the cache's length")

    return run


@torch.no_grad()
def decode_sweep(
    name: str, contexts: list[int], budgets: list[float], decode: int, repeats: int
) -> dict:
    """Seconds per decoded token and cache bytes per (context, budget) for one model."""
    base = sweep_model(name)
    cfg = base.config
    d, n_layers, n_kv = cfg.head_dim, cfg.num_hidden_layers, cfg.num_key_value_heads
    shared = {id(p): p for p in base.parameters()}  # one copy of the weights for both models
    student = attach_projections(copy.deepcopy(base, shared), KVProjections(n_layers, n_kv, d))
    ranks = {b: round(b * d) for b in budgets}
    for b, r in ranks.items():
        if abs(r - b * d) > 1e-9 or r < 1:
            raise ValueError(f"budget {b} x head dim {d} is not a whole rank")
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg.vocab_size, (1, decode), generator=generator)
    rows = []
    for context in contexts:
        caches = {"full": (base, filled_cache(base, context, None, generator))}
        for b in budgets:
            set_ranks(student, *uniform_ranks(n_layers, n_kv, ranks[b]))
            caches[f"{b:g}"] = (student, filled_cache(student, context, ranks[b], generator))
        rounds = {}
        for key, (model, cache) in caches.items():
            if key != "full":  # one student: set its ranks before each of its rounds
                rank = ranks[float(key)]

                def run(model=model, cache=cache, rank=rank, context=context):
                    set_ranks(model, *uniform_ranks(n_layers, n_kv, rank))
                    decode_round(model, cache, context, tokens)()

                rounds[key] = run
            else:
                rounds[key] = decode_round(model, cache, context, tokens)
        seconds = interleaved(rounds, repeats, warmup=1)
        full_bytes = cache_bytes_per_token(caches["full"][1]) * context
        for key, (_, cache) in caches.items():
            held = cache_bytes_per_token(cache) * context
            rows.append(
                {
                    "context": context,
                    "budget": 1.0 if key == "full" else float(key),
                    "cache": "full (sdpa)" if key == "full" else "matryoshka",
                    "rank": d if key == "full" else ranks[float(key)],
                    "kv_bytes": held,
                    "kv_ratio": held / full_bytes,
                    "s_per_token": seconds[key] / decode,
                    "vs_full": seconds[key] / seconds["full"],
                }
            )
        print_rows(rows[-len(caches) :])
    parameters = sum(p.numel() for p in base.parameters())
    return {"model": name, "parameters": parameters, "head_dim": d, "rows": rows}


def print_rows(rows: list[dict]) -> None:
    for r in rows:
        print(
            f"| {r['context']} | {r['cache']} | {r['budget']:.3g} | {r['rank']} | "
            f"{r['kv_bytes'] / 2**20:.2f} | {r['kv_ratio']:.4f} | {1e3 * r['s_per_token']:.2f} | "
            f"{r['vs_full']:.2f} |"
        )


def plot_sweeps(sweeps: list[dict], path: Path) -> None:
    """Log-log: ms per decoded token against context, one line per budget, one panel a model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(sweeps), figsize=(5 * len(sweeps), 4), squeeze=False)
    for ax, sweep in zip(axes[0], sweeps, strict=True):
        series: dict[str, list[tuple[int, float]]] = {}
        for r in sweep["rows"]:
            label = "full (sdpa)" if r["cache"] != "matryoshka" else f"{r['budget']:.1%} budget"
            series.setdefault(label, []).append((r["context"], 1e3 * r["s_per_token"]))
        for label, points in series.items():
            xs, ys = zip(*points, strict=True)
            ax.loglog(xs, ys, marker="o", label=label, ls="--" if "full" in label else "-")
        ax.set(xlabel="context (tokens)", ylabel="ms per decoded token", title=sweep["model"])
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


@torch.no_grad()
def rank_table(args) -> tuple[list[dict], bool]:
    """Part 1: bytes per token and generate tokens/s at every rank of the toy."""
    torch.manual_seed(0)
    cfg = ModelConfig()
    base = build_toy_model(cfg).eval()
    n_layers, n_heads = cfg.num_hidden_layers, cfg.num_key_value_heads
    d = cfg.hidden_size // cfg.num_attention_heads
    prompt = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt))

    full_bytes = cache_bytes_per_token(base(prompt, use_cache=True).past_key_values)
    full_speed = tokens_per_second(base, prompt, args.new, args.repeats)
    print(f"full cache: {full_bytes} bytes/token, {full_speed:.0f} tokens/s")
    student = attach_projections(copy.deepcopy(base), KVProjections(n_layers, n_heads, d))
    print("| rank | budget | bytes/token | ratio to full | expected r/d | tokens/s | vs full |")
    print("|---|---|---|---|---|---|---|")
    ok, rows = True, []
    for r in range(max(1, d // 8), d + 1, max(1, d // 8)):
        set_ranks(student, *uniform_ranks(n_layers, n_heads, r))
        held = cache_bytes_per_token(student(prompt, use_cache=True).past_key_values)
        speed = tokens_per_second(student, prompt, args.new, args.repeats)
        ok &= held * d == full_bytes * r
        rows.append({"rank": r, "bytes_per_token": held, "tokens_per_s": speed})
        print(
            f"| {r} | {r / d:.3f} | {held} | {held / full_bytes:.3f} | {r / d:.3f} | "
            f"{speed:.0f} | {speed / full_speed:.2f}x |"
        )
    print("bytes per token equal r / d of the full cache at every rank:", ok)
    rows.insert(0, {"rank": "full", "bytes_per_token": full_bytes, "tokens_per_s": full_speed})
    return rows, ok


@torch.no_grad()
def real_model_rows(
    model, tokenizer, prompt_tokens: int, new_tokens: int, repeats: int, budgets: list[float]
) -> tuple[list[dict], bool]:
    """Part 3: bytes per token after a prefill and greedy-generation tokens/s of the real
    pretrained LM, its full cache and the compressed one at each budget (uniform rank
    r = budget x d); whether every compressed cache holds exactly budget x the full bytes."""
    from shared import pretrained

    document = next(iter(pretrained.corpus("test").values()))
    ids = tokenizer(document)["input_ids"][:prompt_tokens]
    if len(ids) < prompt_tokens:
        raise ValueError(f"--real-prompt {prompt_tokens} exceeds the document's {len(ids)} tokens")
    prompt = torch.tensor([ids])
    cfg = model.config
    n_layers, n_kv, d = cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim
    full_bytes = cache_bytes_per_token(model(prompt, use_cache=True).past_key_values)
    full_speed = tokens_per_second(model, prompt, new_tokens, repeats)
    rows = [{"cache": "full (sdpa)", "budget": 1.0, "rank": d, "bytes_per_token": full_bytes}]
    rows[0] |= {"tokens_per_s": full_speed, "vs_full": 1.0}
    shared = {id(p): p for p in model.parameters()}  # one copy of the weights for both models
    student = attach_projections(copy.deepcopy(model, shared), KVProjections(n_layers, n_kv, d))
    exact = True
    for b in budgets:
        rank = round(b * d)
        set_ranks(student, *uniform_ranks(n_layers, n_kv, rank, d))
        held = cache_bytes_per_token(student(prompt, use_cache=True).past_key_values)
        speed = tokens_per_second(student, prompt, new_tokens, repeats)
        exact &= held * d == full_bytes * rank
        rows.append(
            {"cache": "matryoshka", "budget": b, "rank": rank, "bytes_per_token": held}
            | {"tokens_per_s": speed, "vs_full": speed / full_speed}
        )
    print("| cache | budget | rank | bytes/token | ratio to full | tokens/s | vs full |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['cache']} | {r['budget']:.3g} | {r['rank']} | {r['bytes_per_token']} | "
            f"{r['bytes_per_token'] / full_bytes:.3f} | {r['tokens_per_s']:.1f} | "
            f"{r['vs_full']:.2f}x |"
        )
    return rows, exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="*", default=["toy", "llama-1b"])
    parser.add_argument("--contexts", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    parser.add_argument("--budgets", type=float, nargs="+", default=list(PAPER_BUDGETS))
    parser.add_argument("--decode", type=int, default=8, help="decoded tokens per round")
    parser.add_argument("--sweep-repeats", type=int, default=3)
    parser.add_argument(
        "--real",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the real pretrained LM's row (skipped, saying so, when its asset is not fetched)",
    )
    parser.add_argument("--real-prompt", type=int, default=128, help="prefilled tokens")
    parser.add_argument("--real-new", type=int, default=16, help="generated tokens")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default: "
        "papers/matryoshka_kv/results/benchmark.json; the plot goes beside it)",
    )
    args = parser.parse_args(argv)
    if min(args.decode, args.sweep_repeats, args.repeats, *args.contexts) < 1:
        parser.error("--decode, --sweep-repeats, --repeats and --contexts must be >= 1")
    torch.set_num_threads(1)
    rank_rows, ok = rank_table(args)
    sweeps = []
    for name in args.models:
        print(f"\n{name}: decode after S cached tokens, batch 1, one thread")
        print("| S | cache | budget | rank | KV MiB | vs full bytes | ms / token | vs full time |")
        print("|---|---|---|---|---|---|---|---|")
        sweeps.append(
            decode_sweep(name, args.contexts, args.budgets, args.decode, args.sweep_repeats)
        )
    exact = all(abs(r["kv_ratio"] - r["budget"]) < 1e-12 for sw in sweeps for r in sw["rows"])
    ok &= exact
    print("cache bytes = budget x full at every context and budget:", exact)
    results = {"ranks_toy": rank_rows, "sweeps": sweeps, "memory_exact": ok}
    if args.real:
        real = real_model_entry(args)
        if real is not None:
            results["real_model"] = real
            ok &= real["memory_exact"]
    path = write_benchmark("matryoshka_kv", results, argv, args.out)
    if sweeps:
        plot_sweeps(sweeps, path.with_suffix(".png"))
    return 0 if ok else 1


def real_model_entry(args) -> dict | None:
    """Part 3 for the command line: the real model's rows, or None (printed) without its asset."""
    from shared import assets, pretrained

    absent = assets.missing((pretrained.MODEL_ASSET, pretrained.CORPUS_ASSET))
    if absent:
        print(f"\nreal model skipped: {absent[0]}")
        return None
    model, tokenizer = pretrained.load_model()
    print(
        f"\n{pretrained.MODEL_ASSET}: prefill {args.real_prompt} test-document tokens, "
        f"generate {args.real_new}, batch 1, one thread"
    )
    rows, exact = real_model_rows(
        model, tokenizer, args.real_prompt, args.real_new, args.repeats, args.budgets
    )
    print("real model: cache bytes = budget x full at every budget:", exact)
    return {"model": pretrained.MODEL_ASSET, "rows": rows, "memory_exact": exact}


if __name__ == "__main__":
    raise SystemExit(main())
