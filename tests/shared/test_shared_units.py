"""Unit tests of the shared plumbing: claims, summaries, logger, checkpoints, run names."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from shared.checkpoint import load_checkpoint, save_checkpoint
from shared.claims import (
    Claim,
    MarginAtLeast,
    MeanAtLeast,
    MeanBelow,
    PairedWins,
    RatioAtMost,
    all_passed,
    claim_label,
    evaluate,
    verdict_word,
)
from shared.config import CONFIG_DIR, _run_name, register_schema
from shared.logger import MetricsLogger
from shared.records import summarise
from shared.replications import run_replications
from shared.tables import verdict_table

RESULTS = {
    "ours": {"loss": [1.0, 2.0, 3.0]},
    "base": {"loss": [2.0, 2.5, 2.9]},
}


def test_ratio_and_wins_measure_what_they_say():
    ratio = RatioAtMost("loss", "ours", "base", 0.95)
    assert ratio.measure(RESULTS) == pytest.approx(6.0 / 7.4)
    assert ratio.holds(ratio.measure(RESULTS))
    wins = PairedWins("loss", "ours", "base", 3)
    assert wins.measure(RESULTS) == 2.0 and not wins.holds(2.0)
    higher = PairedWins("loss", "ours", "base", 1, lower_is_better=False)
    assert higher.measure(RESULTS) == 1.0
    below = MeanBelow("loss", ("ours", "base"), 2.5)
    assert below.measure(RESULTS) == pytest.approx(7.4 / 3) and below.holds(7.4 / 3)


def test_roles_decide_what_passing_means():
    holds = RatioAtMost("loss", "ours", "base", 0.95)
    fails = RatioAtMost("loss", "base", "ours", 0.95)
    verdicts = evaluate(
        [
            Claim("c", holds),
            Claim("n", fails, role="negative_control"),
            Claim("d", fails, role="diagnostic"),
        ],
        RESULTS,
    )
    assert [v.passed for v in verdicts] == [True, True, True]
    assert all_passed(verdicts)
    assert not evaluate([Claim("n", holds, role="negative_control")], RESULTS)[0].passed
    assert not evaluate([Claim("c", fails)], RESULTS)[0].passed


def test_a_negative_control_reads_as_one_not_as_a_claim_that_held():
    # Issue 43, item 7: a control's "PASS" beside its statement read as a claim that held.
    assert verdict_word("negative_control", holds=False) == "fails, as a control must"
    assert verdict_word("negative_control", holds=True) == "HOLDS: control broken"
    assert (verdict_word("claim", True), verdict_word("claim", False)) == ("PASS", "FAIL")
    assert verdict_word("diagnostic", False) == "info: does not hold"
    for name in ("adamx / adam <= 0.95", "control: the sliding window reaches >= 0.9"):
        assert claim_label(name, "negative_control").startswith("control: ")
        assert claim_label(name, "negative_control").count("control:") == 1
    assert claim_label("ours beats base", "claim") == "ours beats base"
    fails = RatioAtMost("loss", "base", "ours", 0.95)
    verdicts = evaluate([Claim("n", fails, role="negative_control")], RESULTS)
    table = verdict_table([v.as_dict() for v in verdicts])
    assert "| control: n " in table and "fails, as a control must" in table


def test_claim_on_missing_method_names_it():
    with pytest.raises(KeyError, match="nope"):
        RatioAtMost("loss", "nope", "base", 1.0).measure(RESULTS)


def test_a_margin_claim_needs_the_baseline_it_reads():
    """A bound on a derived margin (ours vs base) is evaluated only where the base ran too."""
    margin = MeanAtLeast("loss_margin_vs_base", ("ours",), 0.0, every_seed=True, reads=("base",))
    assert margin.methods_needed() == {"ours", "base"}
    assert MeanAtLeast("loss", ("ours",), 0.0).methods_needed() == {"ours"}


def test_summarise_keys_by_seed():
    summary = summarise(RESULTS, seeds=[3, 4, 5])
    assert summary["ours"]["loss"]["mean"] == pytest.approx(2.0)
    assert summary["ours"]["loss"]["per_seed"] == {"3": 1.0, "4": 2.0, "5": 3.0}
    with pytest.raises(ValueError, match="seeds"):
        summarise(RESULTS, seeds=[0])


def test_logger_drops_records_after_a_resume_point(tmp_path):
    logger = MetricsLogger(tmp_path / "metrics.jsonl")
    for step in range(1, 5):
        logger.log({"method": "a", "step": step})
        logger.log({"method": "b", "step": step})
    logger.drop_after(2, method="a")
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["method"] == "a"] == [1, 2]
    assert [r["step"] for r in records if r["method"] == "b"] == [1, 2, 3, 4]
    silent = MetricsLogger(tmp_path / "other.jsonl", enabled=False)
    silent.log({"step": 1})
    assert not (tmp_path / "other.jsonl").exists()


def test_checkpoint_round_trip_is_weights_only(tmp_path):
    state = {"step": 3, "model": {"w": torch.ones(2)}, "history": [{"step": 0, "x": 1.5}]}
    save_checkpoint(state, tmp_path / "ck.pt")
    loaded = load_checkpoint(tmp_path / "ck.pt")
    assert loaded["step"] == 3 and torch.equal(loaded["model"]["w"], torch.ones(2))
    assert not (tmp_path / "ck.pt.tmp").exists()

    torch.save({"obj": _Arbitrary()}, tmp_path / "unsafe.pt")
    with pytest.raises(Exception, match="weights_only|Unsupported|global"):
        load_checkpoint(tmp_path / "unsafe.pt")


class _Arbitrary:
    """Any class: a weights-only load must refuse to rebuild it."""


def test_run_name_is_deterministic():
    assert _run_name("") == "default"
    assert _run_name("optim.lr=0.1,seeds=[0]") == "optim.lr=0.1,seeds=[0]"


def test_a_path_override_never_nests_the_run_folder():
    # Issue 43, case 20: model.path=/some/dir made outputs/em_llm/paper/...,model.path=/some/dir/.
    name = _run_name("model.path=/some/dir,seeds=[0]")
    assert "/" not in name and name.startswith("model.path=_some_dir,seeds=[0]-")
    assert _run_name("model.path=/some_dir,seeds=[0]") != name  # sanitising cannot collide
    long = ",".join(f"eval.key{i}=value{i}" for i in range(40))
    assert len(_run_name(long)) <= 120 and _run_name(long) == _run_name(long)
    assert _run_name(long) != _run_name(long + ",seeds=[1]")


def test_undefined_seeds_are_skipped_not_averaged_as_zero():
    nan = float("nan")
    results = {"ours": {"f1": [1.0, nan, 0.5]}, "base": {"f1": [0.25, 0.25, 0.25]}}
    margin = MarginAtLeast("f1", "ours", "base", 0.5)
    assert margin.measure(results) == pytest.approx(0.75 - 0.25) and margin.holds(0.5)
    assert MeanAtLeast("f1", ("ours",), 0.7).measure(results) == pytest.approx(0.75)
    never = {"ours": {"f1": [nan, nan]}}
    assert not MeanAtLeast("f1", ("ours",), 0.0).holds(
        MeanAtLeast("f1", ("ours",), 0.0).measure(never)
    )
    summary = summarise(results, seeds=[0, 1, 2])
    assert summary["ours"]["f1"]["mean"] == pytest.approx(0.75)
    assert (
        summary["ours"]["f1"]["n_defined"] == 2 and summary["ours"]["f1"]["per_seed"]["1"] is None
    )
    assert summarise(never, seeds=[0, 1])["ours"]["f1"]["mean"] is None


@pytest.mark.parametrize(
    ("overrides", "folder"),
    [
        (["runtime.workers=2", "runtime.progress=false"], "default"),  # same numbers, same folder
        (["model.path=/some/dir"], None),  # one path component, never nested
    ],
)
def test_run_folder_follows_only_the_keys_that_change_numbers(overrides, folder):
    # Issue 43, case 20: runtime.workers=2 got a folder of its own and did not resume.
    register_schema("em_llm")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=["paper=em_llm", "scale=paper", *overrides],
            return_hydra_config=True,
        )
    run_dir = cfg.hydra.run.dir
    assert run_dir.startswith("outputs/em_llm/paper/")
    name = run_dir.removeprefix("outputs/em_llm/paper/")
    assert "/" not in name
    if folder is not None:
        assert name == folder


def test_replications_log_running_means_and_resume_to_the_same_log(tmp_path):
    def one(rep, rng):
        return {"x": rng.normal(size=3), "y": [float(rep)]}

    def run(folder, n, resume_at=None):
        logger = MetricsLogger(folder / "metrics.jsonl", enabled=True)
        if resume_at is not None:  # an interrupted run: checkpoint at resume_at, then resume
            run_replications(
                one,
                resume_at,
                0,
                folder,
                checkpoint_every=resume_at,
                logger=logger,
                log_keys=("x", "y"),
                progress=False,
            )
        return run_replications(
            one,
            n,
            0,
            folder,
            checkpoint_every=4,
            logger=logger,
            log_keys=("x", "y"),
            progress=False,
        )

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    records = run(tmp_path / "a", 10)
    run(tmp_path / "b", 10, resume_at=6)
    log = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert log == [
        json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()
    ]
    assert log[-1]["x_so_far"] == pytest.approx(float(np.mean(records["x"])), rel=1e-12)
    assert log[-1]["y_so_far"] == 4.5 and len(log) == 10


def test_interleaved_runs_before_untimed_ahead_of_every_call():
    """shared.benchmarks.interleaved: ``before`` precedes each warm-up and timed call and its
    time is not counted (a 50 ms ``before`` around 0 ms candidates)."""
    import time

    from shared.benchmarks import interleaved

    calls: list[str] = []
    candidates = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    seconds = interleaved(
        candidates, repeats=2, warmup=1, before=lambda: (calls.append("before"), time.sleep(0.05))
    )
    assert calls == ["before", "a", "before", "b"] * 2 + ["before", "b", "before", "a"]
    assert max(seconds.values()) < 0.04


@pytest.mark.parametrize(
    "optimizer, options",
    [
        (torch.optim.Adam, {"lr": 1e-3, "weight_decay": 1e-4}),
        (torch.optim.AdamW, {"lr": 3e-3, "weight_decay": 0.05, "betas": (0.9, 0.95)}),
    ],
)
def test_foreach_adam_is_the_single_tensor_update_bit_for_bit(optimizer, options):
    """The papers build Adam(W) with ``foreach=True`` (a few batched kernels per step instead
    of a dozen per tensor, CPU's default): the committed numbers stand only because the update
    is the same, bit for bit. (``fused=True`` is not: it rounds differently.)"""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(37, 129), torch.nn.GELU(), torch.nn.Linear(129, 5))
    weights = {}
    for foreach in (False, True):
        model = copy.deepcopy(net)
        opt = optimizer(model.parameters(), **options, foreach=foreach)
        inputs = torch.randn(20, 64, 37, generator=torch.Generator().manual_seed(1))
        for x in inputs:
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        weights[foreach] = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert torch.equal(weights[True], weights[False])
