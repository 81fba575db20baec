"""The length experiment behind the real accuracy claim's diagnosis (``diagnose.py``): the
numbers it quotes on a hand case, and one run on the real LM evaluated part-way (a few
hundred tokens)."""

from __future__ import annotations

import pytest

from papers.matryoshka_kv import diagnose
from papers.matryoshka_kv.claims import REAL_SMOKE_OVERRIDES
from shared import pretrained
from shared.config import compose
from tests.helpers import require_assets


def test_numbers_quote_each_milestone_against_pca():
    real = {
        "metrics": {
            "pca": {"kl_r16": {"per_seed": {"0": 2.0}}, "kl_r24": {"per_seed": {"0": 1.0}}},
            "matryoshka": {"acc_ratio_r24": {"per_seed": {"0": 0.79}}},
        }
    }
    at = {
        120: {"acc_ratio_r24": 0.80, "kl_r16": 1.0, "kl_r24": 0.5},
        240: {"acc_ratio_r24": 0.84, "kl_r16": 0.7, "kl_r24": 0.3},
        480: {"acc_ratio_r24": 0.86, "kl_r16": 0.5, "kl_r24": 0.25},
    }
    numbers = diagnose.numbers_from(at, real, seed=0, step_tokens=512, paper_tokens=512 * 480 * 8)
    assert numbers["first_protocol_acc_ratio_r24"] == 0.79
    assert numbers["acc_ratio_r24_at_120"] == 0.80 and numbers["acc_ratio_r24_at_480"] == 0.86
    assert numbers["kl_ratio_r16_at_120"] == 0.5 and numbers["kl_ratio_r24_at_480"] == 0.25
    assert numbers["first_steps"] == 120 and numbers["last_steps"] == 480
    assert numbers["acc_ratio_gain"] == pytest.approx(0.06)
    # two doublings from 120 to 480: 0.03 a doubling, 0.04 short of the bar: 4/3 more doublings
    assert numbers["acc_ratio_gain_per_doubling"] == pytest.approx(0.03)
    assert numbers["doublings_to_bar"] == pytest.approx(0.04 / 0.03)
    # the last doubling alone (240 -> 480) gained 0.02: slower than the run's 0.03
    assert numbers["acc_ratio_gain_per_doubling_last"] == pytest.approx(0.02)
    assert numbers["acc_ratio_r24_at_last"] == 0.86 and numbers["kl_ratio_r24_at_last"] == 0.25
    assert numbers["doublings_to_paper"] == pytest.approx(3.0)
    with pytest.raises(ValueError, match="no milestone"):
        diagnose.numbers_from({}, real, seed=0)


def test_one_run_is_evaluated_at_every_milestone(tmp_path):
    require_assets(pretrained.MODEL_ASSET, pretrained.CORPUS_ASSET)
    shrink = tuple(
        o for o in REAL_SMOKE_OVERRIDES if not o.startswith(("projection.steps", "projection.warm"))
    )
    at = diagnose.run([1, 2], seed=0, out_dir=tmp_path, overrides=shrink)
    assert sorted(at) == [1, 2]
    # the last checkpoint re-evaluated on the same segments gives the last milestone's numbers
    n = compose("matryoshka_kv", "real", list(shrink)).eval.n_sequences
    again = diagnose.all_segments(tmp_path / "run" / "checkpoint.pt", 0, n, shrink)
    assert again["matryoshka"]["kl_r16"] == pytest.approx(at[2]["kl_r16"], rel=1e-9)
    assert set(again) == {"pca", "matryoshka"} and again["pca"]["kl_r64"] < 1e-4  # PCA exact
    for metrics in at.values():
        assert 0 < metrics["acc_ratio_r24"] <= 1.5 and metrics["kl_r16"] >= metrics["kl_r64"] - 1e-6
    # the two evaluations see a student that trained in between
    assert at[1]["kl_r16"] != at[2]["kl_r16"]
