"""Cache memory and generation speed of MatryoshkaKV (papers/matryoshka_kv): measured.

    python -m papers.matryoshka_kv.benchmark                 # the toy model, budgets 1/8..1
    python -m papers.matryoshka_kv.benchmark --prompt 256 --new 128 --batch 8 --repeats 3

For each uniform rank r of d: the bytes per token actually held by the compressed cache after
a prefill (must be exactly r / d of the full cache's, nothing hidden), and greedy generation
tokens per second with the compressed cache vs the unmodified model's full cache (median of
``--repeats``), single-threaded. The model is the toy's architecture at random init: speed and
memory do not depend on the weights.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

from papers.matryoshka_kv.config import ModelConfig  # noqa: E402
from papers.matryoshka_kv.method import KVProjections, uniform_ranks  # noqa: E402
from papers.matryoshka_kv.model import (  # noqa: E402
    attach_projections,
    build_toy_model,
    cache_bytes_per_token,
    set_ranks,
)


def tokens_per_second(model, prompt: torch.Tensor, new_tokens: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.generate(
            prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False
        )
        times.append(time.perf_counter() - start)
    return prompt.shape[0] * new_tokens / statistics.median(times)


@torch.no_grad()
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
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
    ok = True
    for r in range(max(1, d // 8), d + 1, max(1, d // 8)):
        set_ranks(student, *uniform_ranks(n_layers, n_heads, r))
        held = cache_bytes_per_token(student(prompt, use_cache=True).past_key_values)
        speed = tokens_per_second(student, prompt, args.new, args.repeats)
        ok &= held * d == full_bytes * r
        print(
            f"| {r} | {r / d:.3f} | {held} | {held / full_bytes:.3f} | {r / d:.3f} | "
            f"{speed:.0f} | {speed / full_speed:.2f}x |"
        )
    print("bytes per token equal r / d of the full cache at every rank:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
