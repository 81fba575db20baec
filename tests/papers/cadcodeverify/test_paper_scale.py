"""The paper-scale path on tiny stand-ins: a fake CADPrompt folder (small STLs written with
trimesh), a stub chat server on 127.0.0.1, and model-written scripts run in the sandbox."""

from __future__ import annotations

import json

import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")

from papers.cadcodeverify import sandbox, train  # noqa: E402
from papers.cadcodeverify.data import load_cadprompt, load_mesh  # noqa: E402
from papers.cadcodeverify.render import MeshRenderer, rasterise  # noqa: E402
from shared.config import compose  # noqa: E402
from tests.papers.cadcodeverify.stub_server import StubChat, last_user_text  # noqa: E402


def _box_stl(extents) -> str:
    return trimesh.creation.box(extents=extents).export(file_type="stl_ascii")


def _fake_cadprompt(root, n: int = 2):
    folder = root / "CADPrompt"
    for i in range(n):
        d = folder / f"{i:08d}"
        d.mkdir(parents=True)
        (d / "Natural_Language_Descriptions_Prompt.txt").write_text(f"A box number {i}.")
        (d / "Ground_Truth.stl").write_text(_box_stl([2.0, 1.0, 0.5]))
        (d / "Ground_Truth.json").write_text(json.dumps({"Volume": 1.0}))
        (d / "Python_Code.py").write_text("import cadquery as cq\n")
    return root


def _script(extents) -> str:
    """A model 'CadQuery' script; plain Python so the test needs no CadQuery."""
    return f"```python\nopen('output.stl', 'w').write({_box_stl(extents)!r})\n```"


def _reply(body) -> str:
    text = last_user_text(body)
    if text.startswith("TASK: write validation questions"):
        return '["Is it a box?", "Is it twice as long as wide?"]'
    if text.startswith("TASK: answer validation questions"):
        return 'Looking at the views: [{"answer": "Yes"}, {"answer": "No", "reason": "square"}]'
    if text.startswith("TASK: write feedback"):
        return "Make the box twice as long as it is wide."
    if text.startswith(("TASK: refine", "TASK: repair")):
        return _script([2.0, 1.0, 0.5])  # the refined program matches the ground truth
    return _script([1.0, 1.0, 0.5])  # the first program is a square block


def test_paper_scale_run_end_to_end(tmp_path):
    if (problem := sandbox.bwrap_problem()) is not None:  # without it the run refuses
        pytest.skip(f"bubblewrap cannot confine programs here ({problem})")
    root = _fake_cadprompt(tmp_path / "clone")
    with StubChat(_reply) as stub:
        cfg = compose(
            "cadcodeverify",
            "paper",
            [
                f"cadprompt.cadprompt_dir={root}",
                f"cadprompt.generator.base_url={stub.base_url}",
                "cadprompt.generator.model=stub",
                "cadprompt.image_size=48",
                "cadprompt.n_points=256",
                "cadprompt.n_examples=1",
                "cadprompt.sandbox.timeout_s=30",
                "refine.rounds=1",
                "methods=[generated,cadcodeverify,premise3d,geometric_solver]",
                "runtime.progress=false",
            ],
        )
        results = train.run(cfg, tmp_path / "out")
    ccv = results["cadcodeverify"]
    assert ccv["compile_rate_r0"] == [1.0] and ccv["compile_rate"] == [1.0]
    assert ccv["median_d"][0] < 1e-6 < ccv["median_d_r0"][0]  # refinement fixed the aspect
    assert results["generated"]["median_d"] == ccv["median_d_r0"]
    assert results["geometric_solver"]["stopped_timeout"] == [0.0]
    # the answerer got four image_url parts; the question writer got none
    asks = [r for r in stub.requests if last_user_text(r).startswith("TASK: answer")]
    assert asks and sum(p["type"] == "image_url" for p in asks[0]["messages"][-1]["content"]) == 4
    q = [r for r in stub.requests if last_user_text(r).startswith("TASK: write validation")]
    assert all(isinstance(r["messages"][-1]["content"], str) for r in q)
    # few-shot: the other item's code is in the generation prompt
    gen = [r for r in stub.requests if last_user_text(r).startswith("TASK: generate")]
    assert "Example script" in last_user_text(gen[0])
    items = (tmp_path / "out" / "runs" / "cadcodeverify-s0" / "items.jsonl").read_text()
    record = json.loads(items.splitlines()[0])
    assert record["rounds"][1]["answers"] == ["Yes", "No"] and "stopped" in record["rounds"][0]
    assert (tmp_path / "out" / "refinement.png").is_file()


def test_unreadable_stl_fails_naming_the_file(tmp_path):
    bad = tmp_path / "Ground_Truth.stl"
    bad.write_bytes(b"\x00garbage, not a mesh")
    with pytest.raises(ValueError, match="Ground_Truth.stl"):
        load_mesh(bad)


def test_missing_cadprompt_files_are_named(tmp_path):
    root = _fake_cadprompt(tmp_path)
    (root / "CADPrompt" / "00000001" / "Ground_Truth.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"00000001/Ground_Truth.json"):
        load_cadprompt(root)
    with pytest.raises(FileNotFoundError, match="cadprompt_dir"):
        load_cadprompt(tmp_path / "nowhere")


def test_preflight_names_the_data_and_the_endpoint():
    problems = train.preflight(compose("cadcodeverify", "paper"))
    text = "; ".join(problems)
    assert "cadprompt.cadprompt_dir is not set" in text
    assert "cadprompt.generator.base_url is not set" in text
    assert train.preflight(compose("cadcodeverify", "toy")) == []


def test_preflight_names_a_missing_sandbox_before_any_model_is_asked(monkeypatch):
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    text = "; ".join(train.preflight(compose("cadcodeverify", "paper")))
    assert "Refusing to run model-written code: bubblewrap (bwrap) is not installed" in text
    opted_in = ["cadprompt.sandbox.unsafe_allow_unconfined=true"]
    assert "Refusing" not in "; ".join(train.preflight(compose("cadcodeverify", "paper", opted_in)))


def test_rasteriser_draws_a_shaded_silhouette():
    mesh = trimesh.creation.box(extents=[2.0, 1.0, 0.5])
    image = rasterise(mesh.vertices, mesh.faces, 0.0, 30.0, 64)
    assert image.shape == (64, 64) and image.dtype == np.uint8
    covered = image < 255
    assert 0.1 < covered.mean() < 0.9  # the box fills part of the frame
    assert len(np.unique(image[covered])) >= 2  # two visible faces, two Lambert shades
    pngs = MeshRenderer([0, 90, 180, 270], 30.0, 32).render(mesh)
    assert len(pngs) == 4 and all(p.startswith(b"\x89PNG") for p in pngs)
