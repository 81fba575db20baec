"""Same seed, same numbers; an interrupted run resumes to the same result."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from shared import checkpoint, experiment
from shared.config import compose_dict
from shared.entry import execute

pytestmark = pytest.mark.smoke


class Preempted(Exception):
    """Stands in for a job killed right after it wrote a checkpoint."""


def _smoke(slug, out_dir) -> dict:
    """The smoke run's record as its ``result.json`` holds it (the form the session's
    reference run is read back in, so the two compare like for like)."""
    execute(slug, compose_dict(slug, "smoke", ["runtime.progress=false"]), out_dir)
    return json.loads((out_dir / "result.json").read_text())


def test_same_seed_same_metrics(slug, tmp_path, smoke_reference):
    # The reference was computed by whichever worker process asked first: the same seed gives
    # the same numbers in another run and, usually, in another process.
    reference, _ = smoke_reference
    assert _smoke(slug, tmp_path)["metrics"] == reference["metrics"]


def test_killed_run_resumes_to_the_same_result(slug, tmp_path, monkeypatch, smoke_reference):
    reference, _ = smoke_reference

    # Progress is persisted by a loop checkpoint or by a finished (method, seed) record;
    # the job is killed right after the first of either reaches the disk.
    real_save, real_record = checkpoint.save_checkpoint, experiment.write_json
    saves = []

    def save_then_die(real):
        def wrapped(state, path):
            real(state, path)
            saves.append(path)
            raise Preempted(f"killed after writing {path}")

        return wrapped

    monkeypatch.setattr(checkpoint, "save_checkpoint", save_then_die(real_save))
    monkeypatch.setattr(experiment, "write_json", save_then_die(real_record))
    with pytest.raises(Preempted):
        _smoke(slug, tmp_path / "interrupted")
    monkeypatch.setattr(checkpoint, "save_checkpoint", real_save)
    monkeypatch.setattr(experiment, "write_json", real_record)
    assert len(saves) == 1 and saves[0].exists()

    resumed = _smoke(slug, tmp_path / "interrupted")  # the same command again
    assert resumed["metrics"] == reference["metrics"]

    # The resumed run continued, rather than restarted: no record is logged twice. A record
    # is identified by its tags (str and int fields: method, seed, step...) and its fields.
    lines = (tmp_path / "interrupted" / "metrics.jsonl").read_text().splitlines()
    keys = Counter(
        (frozenset(r), tuple(sorted((k, v) for k, v in r.items() if type(v) in (str, int))))
        for r in map(json.loads, lines)
    )
    assert max(keys.values()) == 1


def test_resume_refuses_a_different_config(slug, tmp_path, smoke_reference):
    _, finished = smoke_reference
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)  # a finished run, ours to change
    changed = compose_dict(slug, "smoke", ["runtime.progress=false", "seeds=[7]"])
    with pytest.raises(SystemExit, match="different config"):
        execute(slug, changed, tmp_path)
