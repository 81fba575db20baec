"""Every paper x scale composes; bad input fails at start with a message naming it."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ValidationError

from shared.config import SCALES, ConfigError, compose, compose_dict
from shared.entry import execute, paper_modules
from shared.preflight import PreflightError, missing_packages
from tests.helpers import run_cli


@pytest.mark.parametrize("scale", SCALES)
def test_every_paper_and_scale_composes(slug, scale):
    cfg = compose_dict(slug, scale)
    assert cfg.paper == slug and cfg.scale == scale


@pytest.mark.parametrize("scale", ("smoke", "toy"))
def test_runnable_scales_validate_against_the_schema(slug, scale):
    cfg = compose(slug, scale)
    assert type(cfg).__name__ == "Config" and cfg.methods and cfg.seeds


def test_unknown_key_names_it(slug):
    # one line naming the key, without Hydra's suggestion to add it with '+' (issue 52)
    with pytest.raises(ConfigError, match=r"^no_such_key=1: no such key: the config \(") as e:
        compose_dict(slug, "smoke", ["no_such_key=1"])
    assert "\n" not in str(e.value) and "use +" not in str(e.value)


def test_unknown_paper_and_scale_are_named():
    with pytest.raises(ValueError, match="no_such_paper"):
        compose_dict("no_such_paper", "toy")
    with pytest.raises(ValueError, match="huge"):
        compose_dict("adamcb", "huge")


def test_wrong_type_names_the_key():
    with pytest.raises((ConfigCompositionException, ValidationError), match="optim.lr"):
        compose_dict("adamcb", "smoke", ["optim.lr=fast"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-m", "papers.adamcb.train", "scale=smoke", "optim.lrr=1"], "lrr"),
        (["-m", "papers.adamcb.train", "scale=smoke", "optim.lr=fast"], "optim.lr"),
        (["-m", "papers.adamcb.train", "scale=huge"], "huge"),
        (["-m", "papers.adamcb.train", "paper=no_such_paper"], "no_such_paper"),
        (["-m", "papers.no_such_paper.train"], "no_such_paper"),
    ],
)
def test_bad_command_line_exits_nonzero_naming_it(tmp_path, args, expected):
    proc = run_cli([*args, f"out_root={tmp_path}"], cwd=tmp_path)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
    assert not list(tmp_path.rglob(".hydra")), "Hydra made a run folder before the refusal"


def test_paper_scale_without_data_says_what_to_put_where(tmp_path):
    proc = run_cli(
        ["-m", "papers.adamcb.train", "scale=paper", f"out_root={tmp_path}"], cwd=tmp_path
    )
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert "data.root" in message
    missing_dir = tmp_path / "nowhere"
    proc = run_cli(
        [
            "-m",
            "papers.adamcb.train",
            "scale=paper",
            f"data.root={missing_dir}",
            f"out_root={tmp_path}",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert str(missing_dir / "MNIST" / "raw") in message and "Nothing is downloaded" in message
    assert not missing_dir.exists()  # nothing was created, let alone downloaded


@pytest.mark.smoke
def test_multirun_sweep_writes_one_folder_per_job(tmp_path):
    proc = run_cli(
        [
            "-m",
            "papers.adamcb.train",
            "-m",
            "scale=smoke",
            "seeds=[0],[1]",
            "methods=[adam]",
            "runtime.progress=false",
            f"out_root={tmp_path}",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = sorted(p.parent.name for p in tmp_path.rglob("result.json"))
    assert results == ["methods=[adam],seeds=[0]", "methods=[adam],seeds=[1]"]


def test_paper_scale_checks_data_and_packages_before_any_work(slug, tmp_path):
    """A paper whose paper scale needs local data or optional packages names every missing
    one, on one line, before it makes the run folder (``train.preflight``)."""
    train, _ = paper_modules(slug)
    optional = getattr(train, "OPTIONAL_PACKAGES", {})  # method -> {module: install hint}
    methods = compose_dict(slug, "paper").methods
    packages_missing = any(missing_packages(optional.get(method, {})) for method in methods)
    if not hasattr(train, "preflight") and not packages_missing:
        pytest.skip(f"{slug}'s paper scale needs nothing outside the repository")
    out_dir = tmp_path / "run"
    with pytest.raises(PreflightError) as error:
        execute(slug, compose_dict(slug, "paper", ["runtime.progress=false"]), out_dir)
    message = str(error.value)
    assert message.startswith(f"papers.{slug} scale=paper cannot start: ")
    assert "\n" not in message
    assert not out_dir.exists(), "the run folder was made before the check"


def test_preflight_from_the_command_line_is_one_line(tmp_path):
    proc = run_cli(
        ["-m", "papers.matryoshka_kv.train", "scale=paper", f"out_root={tmp_path}"], cwd=tmp_path
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and "model.path is not set" in lines[0], proc.stderr
    # shared.entry.check_at_start runs the preflight before Hydra makes the run folder
    assert not (tmp_path / "matryoshka_kv").exists()
