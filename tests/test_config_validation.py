"""Every option the config accepts runs, or is refused at start naming the key (issue 43).

Each case of the issue's table has a test named for it: the composed config is refused when it
becomes its dataclass (``shared.config.to_object`` runs each ``Config.validate``), in one line
that names the key, its value and what would be valid, before any data is read or any run
folder is made.
"""

from __future__ import annotations

import re

import pytest

from shared.config import ConfigError, compose_dict, to_object
from shared.entry import execute, paper_modules, table_spec
from shared.preflight import PreflightError


def refused(slug: str, overrides: list[str], key: str, scale: str = "smoke") -> str:
    """The one-line refusal of ``overrides``; asserts it names ``key`` first."""
    with pytest.raises(ConfigError) as error:
        to_object(compose_dict(slug, scale, overrides))
    message = str(error.value)
    assert "\n" not in message
    assert re.match(rf"{re.escape(key)}=", message), message
    return message


def test_case01_adamcb_an_eval_interval_that_does_not_divide_an_epoch_is_refused():
    message = refused("adamcb", ["loop.eval_every=2"], "loop.eval_every")
    assert "must divide the 3 steps per epoch" in message
    to_object(compose_dict("adamcb", "smoke", ["loop.eval_every=1"]))  # divides: accepted


def test_case02_adamcb_a_negative_epoch_count_is_refused():
    assert "must be >= 1" in refused("adamcb", ["epochs=-1"], "epochs")


@pytest.mark.parametrize(
    ("slug", "overrides", "key"),
    [
        ("conformal_bma", ["replications=-2"], "replications"),
        ("ppi_ate", ["replications=0"], "replications"),
    ],
)
def test_case06_a_replication_count_below_one_is_refused(slug, overrides, key):
    # Was: KeyError 'cb_linear/covered' / 'aipw/estimate' after the (empty) run.
    assert "must be >= 1" in refused(slug, overrides, key)


@pytest.mark.parametrize(
    ("slug", "key"),
    [("adamcb", "loop.checkpoint_every"), ("conformal_bma", "checkpoint_every")],
)
def test_case08_a_zero_checkpoint_interval_is_refused(slug, key):
    # Was: ZeroDivisionError (integer modulo by zero) inside the loop.
    assert "must be >= 1" in refused(slug, [f"{key}=0"], key)


@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_case12_etcd_gin_without_causal_learn_is_refused_before_any_graph(
    monkeypatch, tmp_path, scale
):
    # A missing optional package is not a bad config value: the entry point's preflight names
    # it at every scale (train.OPTIONAL_PACKAGES), before the run folder is made.
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "causallearn" else real(name)
    )
    with pytest.raises(PreflightError, match="method 'gin': package 'causallearn' is missing"):
        execute("etcd", compose_dict("etcd", scale, ["methods=[gin,etcd]"]), tmp_path / "run")
    assert not (tmp_path / "run").exists()
    to_object(compose_dict("etcd", scale, ["methods=[etcd]"]))  # without GIN: accepted


def test_case13_etcd_too_few_samples_names_data_n_and_the_minimum():
    message = refused("etcd", ["data.n=50"], "data.n")
    assert "must be >= data.min_samples (100)" in message


def test_case19_t2v_turbo_v2_labels_quote_the_configured_lcm_steps():
    # Was: "4 LCM steps" (fixed text in claims.LABELS) whatever eval.lcm_steps said.
    _, claims = paper_modules("t2v_turbo_v2")
    cfg = to_object(compose_dict("t2v_turbo_v2", "smoke", ["eval.lcm_steps=2"]))
    _, labels = table_spec(claims, "smoke", cfg)
    assert labels["cd"].endswith("2 LCM steps")
    default = to_object(compose_dict("t2v_turbo_v2", "toy"))
    assert table_spec(claims, "toy", default)[1]["cd"] == claims.LABELS["cd"]  # unchanged text


NO_LOOP_EVALUATION = [
    "em_llm",
    "gnn_kvariance",
    "horizon_generalization",
    "infoalign",
    "leret",
    "limac",
    "lucidppn",
    "matryoshka_kv",
    "spa",
]


@pytest.mark.parametrize("slug", NO_LOOP_EVALUATION)
def test_case14_loop_eval_every_is_no_key_where_nothing_evaluates_in_the_loop(slug):
    # Was: accepted and ignored (shared.loop.fit got no evaluate=); now the schema
    # (TrainLoopConfig) has no such key, so Hydra names it at composition.
    with pytest.raises(Exception, match="eval_every"):
        compose_dict(slug, "smoke", ["loop.eval_every=5"])
