"""T2V-Turbo-v2's start-time checks (issue 52): the keys the committed toy models were built
from are checked against their manifest, the teacher methods against eval.teacher_ddim_steps
and Algorithm 1's record counts against the training set, each before the run folder."""

from __future__ import annotations

import pytest

from papers.t2v_turbo_v2.prepare import (
    MODEL_KEYS,
    PREPARE_ONLY_KEYS,
    model_key_problems,
    prepare_only_problems,
)
from shared.config import REPO_ROOT, ConfigError, compose, lookup
from shared.records import read_json
from tests.helpers import refused_at_start


@pytest.mark.parametrize(
    ("override", "built_with"),
    [
        ("data.kind=sprites2d", "data.kind=sprites1d"),
        ("net.width=32", "net.width=24"),
        ("net.text_dim=32", "net.text_dim=64"),
        ("data.n_distractors=20", "data.n_distractors=12"),
        ("prepare.rm_width=8", "prepare.rm_width=16"),
    ],
)
def test_a_key_the_committed_models_were_built_from_is_refused_at_start(
    override, built_with, tmp_path
):
    message = refused_at_start("t2v_turbo_v2", "smoke", [override], tmp_path / "run")
    assert f"cannot start: {override}: " in message
    assert f"were built with {built_with} (manifest.json)" in message


def test_the_committed_manifest_records_the_toy_config_of_every_model_key():
    cfg = compose("t2v_turbo_v2", "toy")
    assert model_key_problems(cfg) == []
    recorded = read_json(REPO_ROOT / cfg.prepare.assets_dir / "manifest.json")["config"]
    assert recorded == {key: lookup(cfg, key) for key in MODEL_KEYS}


def test_a_folder_without_a_manifest_is_named(tmp_path):
    cfg = compose("t2v_turbo_v2", "smoke", [f"prepare.assets_dir={tmp_path}"])
    assert model_key_problems(cfg) == [
        f"prepare.assets_dir={tmp_path} holds no manifest.json: run "
        "`python -m papers.t2v_turbo_v2.prepare`"
    ]


def test_empty_teacher_ddim_steps_is_refused_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"^eval\.teacher_ddim_steps=\[\]: must list 4"):
        compose("t2v_turbo_v2", "smoke", ["eval.teacher_ddim_steps=[]"])
    message = refused_at_start(
        "t2v_turbo_v2", "smoke", ["eval.teacher_ddim_steps=[]"], tmp_path / "run"
    )
    assert message.startswith("eval.teacher_ddim_steps=[]")


def test_preprocess_n_motion_3000_is_refused_at_start(tmp_path):
    message = refused_at_start(
        "t2v_turbo_v2", "smoke", ["preprocess.n_motion=3000"], tmp_path / "run"
    )
    assert "cannot start: preprocess.n_motion=3000: the training set (data.n_train=6000)" in message


@pytest.mark.parametrize("override", ["prepare.teacher_steps=100", "prepare.seed=5"])
def test_a_prepare_only_key_is_refused_by_the_train_command(override, tmp_path):
    """The train command loads models the prepare command built; it never reads how they were
    trained, so a changed value would be accepted and ignored."""
    message = refused_at_start("t2v_turbo_v2", "smoke", [override], tmp_path / "run")
    assert f"cannot start: {override}: python -m papers.t2v_turbo_v2.train does not read it" in (
        message
    )
    # the paper scale (a local teacher instead of the toy models) reads them no more
    (problem,) = prepare_only_problems(compose("t2v_turbo_v2", "paper", [override]))
    assert problem.startswith(f"{override}: python -m papers.t2v_turbo_v2.train does not read")


def test_the_prepare_only_keys_are_every_other_prepare_key():
    cfg = compose("t2v_turbo_v2", "toy")
    assert prepare_only_problems(cfg) == []
    prepare_keys = {f"prepare.{name}" for name in vars(cfg.prepare)}
    assert set(PREPARE_ONLY_KEYS) | set(MODEL_KEYS) | {"prepare.assets_dir"} >= prepare_keys
    assert not set(PREPARE_ONLY_KEYS) & (set(MODEL_KEYS) | {"prepare.assets_dir"})
