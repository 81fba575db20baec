"""shared/experiment.py: the (method x seed) grid, in one process and in forked workers."""

from __future__ import annotations

import json
import os

import pytest
import torch

from shared.experiment import FINAL_NAME, RunOutput, map_jobs, parallel_runs, run_grid


def _train_one(method: str, seed: int, run_dir) -> RunOutput:
    """A run whose numbers depend only on (method, seed), as every paper's do."""
    torch.manual_seed(seed + 100 * len(method))
    weights = torch.randn(64, 64)
    for _ in range(20):
        weights = torch.tanh(weights @ weights.T / 8.0)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "pid").write_text(str(os.getpid()))
    return RunOutput({"value": float(weights.sum())}, {"curve": [float(seed), 1.0]})


def test_forked_workers_give_the_numbers_of_one_process(tmp_path):
    methods, seeds = ["a", "bb", "ccc"], [0, 1]
    serial, serial_curves = run_grid(methods, seeds, tmp_path / "one", _train_one, progress=False)
    with parallel_runs(2):
        forked, forked_curves = run_grid(
            methods, seeds, tmp_path / "two", _train_one, progress=False
        )
    assert forked == serial and forked_curves == serial_curves
    pids = {
        (tmp_path / "two" / "runs" / f"{m}-s{s}" / "pid").read_text()
        for m in methods
        for s in seeds
    }
    assert str(os.getpid()) not in pids  # the runs happened in the workers
    final = json.loads((tmp_path / "two" / "runs" / "a-s0" / FINAL_NAME).read_text())
    assert final["metrics"] == {"value": serial["a"]["value"][0]}


def _failing(method: str, seed: int, run_dir) -> RunOutput:
    if method == "bad":
        raise RuntimeError("this run fails")
    return RunOutput({"value": 1.0})


def test_a_failing_worker_fails_the_grid(tmp_path):
    with parallel_runs(2), pytest.raises(RuntimeError, match="this run fails"):
        run_grid(["good", "bad"], [0], tmp_path, _failing, progress=False)


def test_workers_must_be_positive():
    with pytest.raises(ValueError, match="runtime.workers"):
        with parallel_runs(0):
            pass


def _build_artefact(root, seed: int, index: int) -> str:
    """A shared artefact seeded by its own job, written to its own path (as resdex's experts)."""
    torch.manual_seed(1000 * seed + index)
    path = root / f"artefact{index}-s{seed}"
    path.mkdir(parents=True)
    (path / "value").write_text(repr(float(torch.randn(32, 32).sum())))
    (path / "pid").write_text(str(os.getpid()))
    return (path / "value").read_text()


@pytest.mark.parametrize("workers", [1, 2])
def test_mapped_jobs_give_the_same_numbers_in_order_with_any_worker_count(tmp_path, workers):
    jobs = [(0, 0), (0, 1), (1, 0)]
    with parallel_runs(workers):
        values = map_jobs(
            lambda seed, i: _build_artefact(tmp_path, seed, i), jobs, desc="jobs", progress=False
        )
    for seed, index in jobs:
        torch.manual_seed(1000 * seed + index)
        expected = repr(float(torch.randn(32, 32).sum()))
        assert (tmp_path / f"artefact{index}-s{seed}" / "value").read_text() == expected
    assert values == [(tmp_path / f"artefact{i}-s{s}" / "value").read_text() for s, i in jobs]
    pids = {(tmp_path / f"artefact{i}-s{s}" / "pid").read_text() for s, i in jobs}
    assert (str(os.getpid()) in pids) == (workers == 1)  # forked only with two workers


def test_a_failing_mapped_job_fails(tmp_path):
    def build(index: int) -> None:
        if index == 1:
            raise RuntimeError("this build fails")

    with parallel_runs(2), pytest.raises(RuntimeError, match="this build fails"):
        map_jobs(build, [(0,), (1,)], desc="jobs", progress=False)
