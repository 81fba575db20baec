"""The shared loop under two gloo CPU processes gives the same result as under one."""

from __future__ import annotations

import json
import socket

import numpy as np
import torch

from shared.config import REPO_ROOT, RuntimeConfig
from shared.runtime import make_accelerator, shutdown_process_group
from tests.helpers import run_cli

WORKER = REPO_ROOT / "tests" / "shared" / "ddp_worker.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(nproc: int, out_dir) -> dict:
    out_dir.mkdir()
    out = out_dir / "result.json"
    proc = run_cli(
        [
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={nproc}",
            "--nnodes=1",
            f"--master_port={_free_port()}",
            str(WORKER),
            str(out),
        ],
        cwd=out_dir,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_two_processes_match_one(tmp_path):
    one = _launch(1, tmp_path / "one")
    two = _launch(2, tmp_path / "two")
    assert (one["world"], two["world"]) == (1, 2)
    for a, b in zip(one["params"], two["params"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert [h["step"] for h in one["history"]] == [h["step"] for h in two["history"]]
    np.testing.assert_allclose(
        [h["mse"] for h in one["history"]], [h["mse"] for h in two["history"]], rtol=1e-5
    )


def test_shutdown_is_a_no_op_in_one_process():
    accelerator = make_accelerator(RuntimeConfig(device="cpu", num_threads=torch.get_num_threads()))
    shutdown_process_group(accelerator)  # no process group: returns without touching anything
    assert not torch.distributed.is_initialized()
    assert accelerator.num_processes == 1
