"""Same seed, same numbers; an interrupted run resumes to the same result.

One run checks both: the interrupted run is a fresh run of the smoke config, in another test
and often another process than the session's reference run, up to its first save; resumed, it
must end on the reference's numbers exactly. (Every claim check also recomputes a paper's
committed numbers bit for bit.)"""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from shared import checkpoint, experiment
from shared.config import compose_dict
from shared.entry import execute
from tests.helpers import run_smoke

pytestmark = pytest.mark.smoke


class Preempted(Exception):
    """Stands in for a job killed right after it wrote a checkpoint."""


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
        run_smoke(slug, tmp_path / "interrupted")
    monkeypatch.setattr(checkpoint, "save_checkpoint", real_save)
    monkeypatch.setattr(experiment, "write_json", real_record)
    assert len(saves) == 1 and saves[0].exists()

    resumed = run_smoke(slug, tmp_path / "interrupted")  # the same command again
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
