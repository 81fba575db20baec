"""Toy data and nets, the LCM sampler grid, bad-input errors, and the paper-scale path on a
tiny random diffusers ``UNet3DConditionModel`` saved to a folder and loaded back."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from diffusers import LCMScheduler
from safetensors.torch import load_file

from papers.t2v_turbo_v2 import method as M
from papers.t2v_turbo_v2 import paper_scale as P
from papers.t2v_turbo_v2.data import centroid_direction, make_toy_data
from papers.t2v_turbo_v2.model import SpaceTimeUNet, TextEncoder
from papers.t2v_turbo_v2.prepare import load_assets, train_teacher
from shared.config import ConfigError, compose


def test_sprite_directions_are_recovered_from_centroids():
    data = make_toy_data(300, seed=3)
    assert data.clips.shape == (300, 3, 8, 32) and data.clips.min() >= -1 and data.clips.max() <= 1
    direction = centroid_direction(torch.from_numpy(data.clips), dead_zone=0.5)
    assert (direction.numpy() == data.prompt % 3).all()
    assert 0.35 < data.is_short.mean() < 0.65


def test_two_d_variant_is_selectable():
    data = make_toy_data(4, seed=0, length=16, kind="sprites2d")
    assert data.clips.shape == (4, 1, 8, 16, 16)
    with pytest.raises(ValueError, match="data.kind"):
        make_toy_data(2, seed=0, kind="voxels")


def test_lcm_timesteps_follow_the_brief():
    lcm = LCMScheduler()
    lcm.set_timesteps(4, original_inference_steps=200)
    assert lcm.timesteps.tolist() == [999, 749, 499, 249]


def test_student_starts_as_the_teacher_and_records_attention():
    torch.manual_seed(0)
    teacher = SpaceTimeUNet()
    student = copy.deepcopy(teacher)
    student.add_condition_projection()
    z, t = torch.randn(2, 3, 8, 32), torch.tensor([10, 900])
    ctx = TextEncoder(22)(torch.tensor([[1, 4, 7, 0, 0, 0], [2, 5, 8, 0, 0, 0]]))
    cond = M.student_condition(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 0.05]))
    torch.testing.assert_close(student(z, t, ctx, timestep_cond=cond), teacher(z, t, ctx))
    teacher.set_attention_recording(True)
    teacher(z, t, ctx)
    probs = teacher.recorded_attention_probs()
    assert [p.shape for p in probs] == [(2 * 16 * 2, 8, 8), (2 * 32 * 2, 8, 8)]
    torch.testing.assert_close(probs[0].sum(-1), torch.ones(64, 8))


def test_missing_and_corrupted_assets_are_named(tmp_path):
    cfg = compose("t2v_turbo_v2", "toy", [f"prepare.assets_dir={tmp_path}"])
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        load_assets(cfg)
    names = (
        "teacher.safetensors",
        "image_rm.safetensors",
        "video_rm.safetensors",
        "eval_classifier.safetensors",
    )
    (tmp_path / "manifest.json").write_text(json.dumps({"files": {n: "0" * 64 for n in names}}))
    with pytest.raises(FileNotFoundError, match="teacher.safetensors"):
        load_assets(cfg)
    for n in names:
        (tmp_path / n).write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="teacher.safetensors: sha256"):
        load_assets(cfg)


def test_teacher_run_resumes_bit_for_bit_and_refuses_a_longer_checkpoint(tmp_path):
    def run(name: str, steps: int, chunk: int) -> dict:
        cfg = compose(
            "t2v_turbo_v2",
            "toy",
            [
                f"prepare.assets_dir={tmp_path / name}",
                f"prepare.work_dir={tmp_path / name}",
                f"prepare.teacher_steps={steps}",
                f"prepare.chunk_steps={chunk}",
            ],
        )
        train_teacher(cfg, progress=False)
        return load_file(tmp_path / name / "teacher.safetensors")

    straight = run("straight", 3, 3)
    run("chunked", 1, 1)  # an interrupted run: one chunk, then resumed to the full budget
    resumed = run("chunked", 3, 1)
    assert straight.keys() == resumed.keys()
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    with pytest.raises(ValueError, match="past prepare.teacher_steps=2"):
        run("chunked", 2, 1)


def test_solver_grid_that_does_not_divide_fails_at_start():
    with pytest.raises(ConfigError, match="schedule.solver_steps=30: must divide"):
        compose("t2v_turbo_v2", "smoke", ["schedule.solver_steps=30"])
    with pytest.raises(ValueError, match="solver_steps=30"):
        M.SolverGrid.build(1000, 30)


def test_a_run_folder_made_with_other_assets_is_refused(tmp_path):
    from papers.t2v_turbo_v2.train import claim_run_folder

    claim_run_folder(tmp_path, {"teacher.safetensors": "a" * 64})
    claim_run_folder(tmp_path, {"teacher.safetensors": "a" * 64})  # same assets: resumes
    with pytest.raises(ValueError, match="other toy assets"):
        claim_run_folder(tmp_path, {"teacher.safetensors": "b" * 64})
    legacy = tmp_path / "legacy"
    (legacy / "runs").mkdir(parents=True)
    with pytest.raises(ValueError, match="unknown assets"):
        claim_run_folder(legacy, {"teacher.safetensors": "a" * 64})


def _tiny_unet3d(path):
    from diffusers import UNet3DConditionModel

    torch.manual_seed(0)
    unet = UNet3DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        down_block_types=("CrossAttnDownBlock3D", "DownBlock3D"),
        up_block_types=("UpBlock3D", "CrossAttnUpBlock3D"),
        block_out_channels=(32, 32),
        layers_per_block=1,
        cross_attention_dim=16,
        attention_head_dim=8,
        norm_num_groups=8,
    )
    unet.save_pretrained(path)


def test_paper_scale_path_on_a_tiny_saved_unet3d(tmp_path):
    _tiny_unet3d(tmp_path / "teacher")
    cfg = compose(
        "t2v_turbo_v2",
        "paper",
        [
            f"paper_scale.teacher_dir={tmp_path / 'teacher'}",
            f"data.root={tmp_path / 'data'}",
            "schedule.solver_steps=10",
            "methods=[cd_rm_mg]",
            "seeds=[0]",
            "student.steps=2",
            "student.batch=2",
            "student.checkpoint_every=1",
            "runtime.progress=false",
        ],
    )
    teacher = P.load_teacher(cfg.paper_scale.teacher_dir, cfg)
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(1000, 10)
    gen = torch.Generator().manual_seed(0)
    z0 = torch.randn(4, 4, 4, 8, 8, generator=gen)  # (B, C, F, H, W) latents
    ctx = torch.randn(4, 3, 16, generator=gen)
    is_motion = torch.tensor([True, True, False, False])
    n = M.sample_solver_indices(is_motion, grid.n_steps, 0.5, gen)
    assert (n[:2] >= 5).all() and (n[2:] < 5).all()
    records = M.preprocess_records(
        teacher,
        schedule,
        grid,
        z0,
        ctx,
        torch.zeros_like(ctx),
        is_motion,
        n,
        torch.randn(z0.shape, generator=gen),
    )
    assert (
        records["g"][:2].abs().sum() > 0 and records["g"][2:].abs().sum() == 0
    )  # energy read via the processor
    records.update(context=ctx, is_short=torch.tensor([True, False, True, False]))
    P.save_records(records, tmp_path / "data" / "records" / "part0.safetensors")
    assert P.preflight(cfg) == P.missing_packages(P.REWARD_PACKAGES)  # paths present

    initial = {k: v.clone() for k, v in teacher.unet.state_dict().items()}
    results = P.run_paper(cfg, tmp_path / "out")
    assert results == {"cd_rm_mg": {"steps": [2.0]}}
    state = torch.load(
        tmp_path / "out" / "runs" / "cd_rm_mg-s0" / "checkpoint.pt", weights_only=True
    )
    changed = [k for k in initial if not torch.equal(initial[k], state["model"][f"unet.{k}"])]
    assert len(changed) > 0.9 * len(initial)
    assert any("cond_proj" in k for k in state["model"])


def test_paper_scale_preflight_names_missing_paths():
    cfg = compose("t2v_turbo_v2", "paper")
    problems = " ".join(P.preflight(cfg))
    assert "paper_scale.teacher_dir" in problems and "data.root" in problems


def test_readme_lists_the_committed_assets_sha256():
    from shared.config import REPO_ROOT

    folder = REPO_ROOT / "papers/t2v_turbo_v2"
    manifest = json.loads((folder / "assets/manifest.json").read_text())
    readme = (folder / "README.md").read_text()
    for name, digest in manifest["files"].items():
        assert f"| `assets/{name}` | `{digest}` |" in readme, name
    assert f"{manifest['summary']['teacher_steps']:,} teacher steps" in readme


def test_more_records_than_the_training_set_holds_are_named():
    from papers.t2v_turbo_v2.train import build_records

    with pytest.raises(ConfigError, match="preprocess.n_motion=100000: .* data.n_train"):
        compose("t2v_turbo_v2", "toy", ["preprocess.n_motion=100000"])
    # within data.n_train, but more than its ~2,000 moving clips with a short caption
    cfg = compose("t2v_turbo_v2", "toy", ["preprocess.n_motion=4000"])
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(1000, cfg.schedule.solver_steps)
    with pytest.raises(ValueError, match="n_motion=4000: .* moving clips with a short caption"):
        build_records(cfg, {}, schedule, grid, progress=False)
