"""Issue 51 pieces: the no-feedback ablation's training path and diagnose.py's measurements."""

from __future__ import annotations

import numpy as np
import pytest

from papers.adamcb import train
from papers.adamcb.diagnose import (
    PROTOCOL_METHODS,
    RecordingAdamCB,
    r_squared,
    summarise_protocol,
)
from papers.adamcb.method import AdamCBSampler
from shared.config import compose_dict, to_object
from shared.logger import MetricsLogger
from shared.runtime import make_accelerator


def test_r_squared_of_a_line_is_one_and_of_noise_is_small():
    x = np.arange(50.0)
    assert r_squared(-0.4 * x + 2.0, x) == pytest.approx(1.0, abs=1e-12)
    noise = np.random.default_rng(0).normal(size=50)
    assert r_squared(noise, x) < 0.2


@pytest.mark.parametrize("feedback", [True, False])
def test_recording_sampler_counts_plays_and_the_feedback_share(feedback):
    n, K, gamma = 40, 5, 0.4
    sampler = RecordingAdamCB(n, K, seed=0, gamma=gamma, feedback=feedback)
    reference = AdamCBSampler(n, K, seed=0, gamma=gamma, feedback=feedback)
    for step in range(6):
        draw = sampler.draw()
        norms = np.linspace(0.5, 3.0, K) + step
        sampler.update(draw, norms)
        reference.update(reference.draw(), norms)
    # recording changes nothing the sampler does
    np.testing.assert_array_equal(sampler.log_weights, reference.log_weights)
    assert sampler.plays.sum() == 6 * K
    last = draw.probs[draw.indices]  # (K,)
    if feedback:
        g_bar = sampler.norm_range.normalise(norms)
        np.testing.assert_allclose(sampler.g_bar[-1], g_bar)
        np.testing.assert_allclose(
            sampler.share[-1], g_bar**2 * (gamma / n) ** 2 / last**2, rtol=1e-12
        )
    else:
        assert all(np.all(s == 0.0) for s in sampler.share)


def test_the_ablation_trains_without_ever_measuring_gradient_norms(tmp_path, monkeypatch):
    """adamcb_no_feedback never reads the norms, so it must not compute them; its sampler
    still learns (from the play counts)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the no-feedback ablation computed gradient norms")

    monkeypatch.setattr(train, "per_sample_grad_norms", refuse)
    cfg = to_object(compose_dict("adamcb", "smoke", ["methods=[adamcb_no_feedback]", "seeds=[0]"]))
    data = train.load_data(cfg)
    sampler = train.make_sampler("adamcb_no_feedback", len(data.y_train), cfg, 0)
    assert not sampler.feedback

    output = train.train_one(
        "adamcb_no_feedback",
        0,
        tmp_path / "run",
        cfg,
        data,
        make_accelerator(cfg.runtime),
        MetricsLogger(tmp_path / "metrics.jsonl", cfg.loop.console_every_s, True),
        sampler,
    )
    assert np.isfinite(output.metrics["final_train_ce"])
    assert np.ptp(sampler.log_weights) > 0.0  # the weights moved with the plays


def test_summarise_protocol_ratios_and_wins():
    seeds = [10, 20, 30]
    final = {"adam": [1.0, 1.0, 1.0], "adamcb": [0.9, 1.1, 0.95], "adamcb_no_feedback": [1, 1, 1]}
    proto = {
        m: {
            "final_train_ce": dict(zip(seeds, final[m], strict=True)),
            "final_test_ce": dict(zip(seeds, final[m], strict=True)),
            "final_test_acc": dict.fromkeys(seeds, 0.5),
        }
        for m in PROTOCOL_METHODS
    }
    proto["curves"] = {m: {s: [2.0, 1.5, 1.2, v] for s, v in zip(seeds, final[m], strict=True)}
                       for m in PROTOCOL_METHODS}  # fmt: skip
    numbers, details = summarise_protocol(proto)
    assert numbers["pp_seeds"] == 3 and numbers["pp_epochs"] == 3
    assert numbers["pp_ratio_adamcb_adam"] == pytest.approx(np.mean(final["adamcb"]))
    assert numbers["pp_wins_adamcb_vs_adam"] == 2
    assert numbers["pp_ratio_adamcb_adam_epoch3"] == pytest.approx(np.mean(final["adamcb"]))
    assert details["ratio_adamcb_adam_by_epoch"][0] == 1.0
