"""Helpers shared by the generic tests."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from shared.config import REPO_ROOT, available_papers

PAPERS = available_papers()


def run_cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python <args>`` from ``cwd`` with the repository importable; capture output."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_smoke(slug: str, out_dir: Path) -> dict:
    """Run the paper's smoke config in this process into ``out_dir``; its record as
    ``result.json`` holds it (the form a shared reference run is read back in, so two runs
    compare like for like)."""
    from shared.config import compose_dict
    from shared.entry import execute

    execute(slug, compose_dict(slug, "smoke", ["runtime.progress=false"]), out_dir)
    return json.loads((Path(out_dir) / "result.json").read_text())


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def load_benchmark(slug: str):
    """Import ``papers/<slug>/benchmark.py`` afresh without leaking the thread variables the
    benchmarks set at import (for ``python -m``) into later tests' subprocesses."""
    import importlib
    import sys

    saved = {var: os.environ.get(var) for var in THREAD_VARIABLES}
    name = f"papers.{slug}.benchmark"
    sys.modules.pop(name, None)
    try:
        module = importlib.import_module(name)
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
    return module


@dataclass
class Clock:
    cpu_s: float = float("nan")
    wall_s: float = float("nan")


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, all its threads, and its waited children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@contextmanager
def cpu_and_wall_clock() -> Iterator[Clock]:
    """Measure a block's CPU seconds (process and children) and wall seconds."""
    clock = Clock()
    cpu, wall = _cpu_seconds(), time.perf_counter()
    try:
        yield clock
    finally:
        clock.cpu_s = _cpu_seconds() - cpu
        clock.wall_s = time.perf_counter() - wall


def save_tiny_llama(
    model_dir: Path, corpus: list[str], eos_token: str, chat_template: str | None = None
):
    """Save a tiny random ``LlamaForCausalLM`` and a byte-level BPE tokenizer trained on
    ``corpus`` to ``model_dir``: the stand-in for a paper-scale checkpoint that papers load
    with ``from_pretrained(local_dir)`` (nothing is downloaded). Returns the tokenizer."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=300, special_tokens=[eos_token])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=eos_token)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(model_dir)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        eos_token_id=tokenizer.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(model_dir)
    return tokenizer


def require_assets(*names: str) -> dict[str, dict[str, Path]]:
    """``{asset: {file name: verified path}}``, or skip the test naming the fetch command
    (a machine that cannot reach the registries runs everything else). A corrupt asset fails
    the test instead: it was fetched, so something broke it."""
    import pytest

    from shared import assets

    absent = [n for n in names if any("missing" in p for p in assets.problems(n))]
    if absent:
        pytest.skip(
            f"real assets {absent} are not in {assets.cache_root()}: run "
            f"`{assets.FETCH_COMMAND} {' '.join(absent)}` to run this test"
        )
    return {name: assets.require(name) for name in names}


def refused_at_start(slug: str, scale: str, overrides: list[str], out_dir: Path) -> str:
    """Run the train entry point's pipeline (``shared.entry.execute``) on ``overrides`` and
    return its one-line refusal, checking that it came before the run folder was made (a
    config error, or a preflight problem from the data, an asset or a committed file)."""
    import pytest

    from shared.config import compose_dict
    from shared.entry import execute

    with pytest.raises((ValueError, SystemExit)) as refusal:
        execute(slug, compose_dict(slug, scale, [*overrides, "runtime.progress=false"]), out_dir)
    message = str(refusal.value)
    assert "\n" not in message, message
    assert not Path(out_dir).exists(), f"{out_dir} was made before the refusal"
    return message


def write_idx(path, array, magic: int, compress: bool = False) -> None:
    """A uint8 array as an IDX file (the MNIST format: magic 2051 images, 2049 labels), or as
    ``<path>.gz`` with ``compress``."""
    import gzip

    import numpy as np

    header = np.array([magic, *array.shape], dtype=">i4").tobytes()
    payload = header + np.asarray(array).astype(np.uint8).tobytes()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(Path(path).with_name(Path(path).name + ".gz"), "wb") as f:
            f.write(payload)
    else:
        Path(path).write_bytes(payload)


def apply_refusal(module, argv: list[str], out: Path) -> str:
    """Run a paper's ``apply`` command line (``module``: ``papers.<slug>.apply``) on ``argv``
    and return its one-line refusal, checking that nothing was written to ``out``."""
    import pytest

    from shared.apply import main as apply_main

    saved = sys.argv
    sys.argv = ["apply", *argv]
    try:
        with pytest.raises(SystemExit) as stop:
            apply_main(module.SLUG, module.ApplyConfig, module.answer_for)
    finally:
        sys.argv = saved
    message = str(stop.value)
    assert message.startswith(f"papers.{module.SLUG}.apply cannot answer: "), message
    assert "\n" not in message and not Path(out).exists(), message
    return message
