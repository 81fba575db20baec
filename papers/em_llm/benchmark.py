"""Speed and memory of the memory attention: ``python -m papers.em_llm.benchmark``.

Tokens per second of reading the longest toy documents through EM-LLM's chunked memory
attention (n_mem = 64) against one full-attention forward pass, measured interleaved on one
thread, and the peak number of keys held in one attention per layer on those documents and
on a document 10x longer (bounded, independent of length). Weights are random: speed and key
counts do not depend on them. Ratios are printed, never asserted (CI does not time).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import torch  # noqa: E402

from papers.em_llm.config import MemoryConfig, ModelConfig, StreamConfig  # noqa: E402
from papers.em_llm.data import test_documents  # noqa: E402
from papers.em_llm.model import (  # noqa: E402
    attach_memory_attention,
    build_toy_model,
    full_attention_logits,
    read_document,
)


def measure(n_docs: int = 5, repeats: int = 3) -> dict[str, float]:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lm = attach_memory_attention(build_toy_model(ModelConfig()).eval())
    docs = sorted(test_documents(StreamConfig(), 60, 0), key=lambda d: -len(d.ids))[:n_docs]
    cfg = MemoryConfig(n_mem=64)
    memory_s = full_s = 0.0
    tokens = sum(len(d.ids) for d in docs) * repeats
    peak = 0
    for _ in range(repeats):
        for doc in docs:  # interleaved, so load changes hit both alike
            ids = torch.tensor(doc.ids)
            start = time.perf_counter()
            reading = read_document(lm, ids, cfg)
            memory_s += time.perf_counter() - start
            start = time.perf_counter()
            full_attention_logits(lm, ids)
            full_s += time.perf_counter() - start
            peak = max(peak, *reading.peak_keys)
    long_ids = torch.cat([torch.tensor(d.ids) for d in docs] * 2)  # ~10x a document
    long_peak = max(read_document(lm, long_ids, cfg).peak_keys)
    return {
        "memory_tokens_per_s": tokens / memory_s,
        "full_tokens_per_s": tokens / full_s,
        "speed_ratio_memory_over_full": full_s / memory_s,
        "peak_keys": peak,
        "peak_keys_10x": long_peak,
        "longest_document": len(docs[0].ids),
        "long_document": long_ids.numel(),
    }


if __name__ == "__main__":
    for name, value in measure().items():
        print(f"{name:32s} {value:,.2f}" if isinstance(value, float) else f"{name:32s} {value}")
