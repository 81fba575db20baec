"""The paper-scale path on stand-ins: a tiny random ConvNeXt saved with ``save_pretrained``
and a fake image tree with part maps in the official layout; the stride reduction of brief
3.1; the freeze-then-unfreeze schedule; preflight."""

from __future__ import annotations

import math

import pytest
import torch

from papers.lucidppn.config import Config
from papers.lucidppn.model import reduce_convnext_strides
from papers.lucidppn.train import apply_schedule, build_model, make_optimizer, preflight
from shared.checkpoint import load_checkpoint
from shared.config import compose_dict
from shared.entry import execute
from tests.papers.lucidppn.test_data import _tree

transformers = pytest.importorskip("transformers")


def save_tiny_convnext(path, hidden_sizes=(8, 16, 32, 64)) -> None:
    torch.manual_seed(0)
    config = transformers.ConvNextConfig(
        num_channels=3, hidden_sizes=list(hidden_sizes), depths=[1, 1, 1, 1]
    )
    transformers.ConvNextModel(config).save_pretrained(path)


@pytest.mark.parametrize(("threshold", "side"), [(100, 26), (300, 13)])
def test_stride_reduction_gives_the_papers_map_sizes(threshold, side):
    """ConvNeXt-tiny widths: a 224^2 input gives 26 x 26 (threshold 100) or 13 x 13 (300)."""
    torch.manual_seed(0)
    config = transformers.ConvNextConfig(hidden_sizes=[96, 192, 384, 768], depths=[1, 1, 1, 1])
    model = transformers.ConvNextModel(config).eval()
    changed = reduce_convnext_strides(model, threshold)
    assert len(changed) == (2 if threshold == 100 else 1)
    with torch.no_grad():
        out = model(pixel_values=torch.zeros(1, 3, 224, 224)).last_hidden_state
    assert out.shape == (1, 768, side, side)


def _paper_overrides(tmp_path, root, model_dir, methods="lucidppn,rgb"):
    return [
        f"data.root={root}",
        f"model.convnext_path={model_dir}",
        "data.num_classes=2",
        "data.num_parts=2",
        "data.image_size=64",
        "data.resize_to=72",
        "data.num_workers=0",
        "model.stride_reduction_min_channels=10",
        "model.color_widths=[8]",
        "optim.batch_size=2",
        "optim.epochs=2",
        "optim.freeze_epochs=1",
        "eval.batch_size=2",
        "seeds=[0]",
        f"methods=[{methods}]",
        "runtime.progress=false",
        "loop.checkpoint_every=2",
        f"out_root={tmp_path}",
    ]


def test_a_paper_scale_run_on_stand_ins(tmp_path):
    root, model_dir = tmp_path / "cub", tmp_path / "convnext"
    _tree(root)
    save_tiny_convnext(model_dir)
    cfg = compose_dict("lucidppn", "paper", _paper_overrides(tmp_path, root, model_dir))
    record = execute("lucidppn", cfg, tmp_path / "run")
    for method, metrics in record["metrics"].items():
        assert {"acc", "shapetex_acc", "hue_acc", "iou_0", "iou_1"} <= set(metrics), method
        for name, stats in metrics.items():
            assert stats["mean"] is None or math.isfinite(stats["mean"]), (method, name)
    assert "colornet_acc" in record["metrics"]["lucidppn"]
    assert (tmp_path / "run" / "explanation.png").is_file()
    # two epochs of 2 steps; the backbone was frozen in epoch 1 and trained in epoch 2
    state = load_checkpoint(tmp_path / "run" / "runs" / "lucidppn-s0" / "checkpoint.pt")
    assert state["step"] == 4
    unchanged = [
        name
        for name, (total, squares) in state["initial_fingerprints"].items()
        if [
            state["model"][name].double().sum().item(),
            state["model"][name].double().square().sum().item(),
        ]
        == [total, squares]
    ]
    assert not unchanged


def test_freeze_then_unfreeze_schedule(tmp_path):
    model_dir = tmp_path / "convnext"
    save_tiny_convnext(model_dir)
    cfg = Config()
    cfg.data.num_parts, cfg.data.num_classes = 2, 3
    cfg.model.backbone, cfg.model.convnext_path = "convnext", str(model_dir)
    cfg.model.gray_channels, cfg.model.stride_reduction_min_channels = 3, 10
    cfg.optim.freeze_epochs, cfg.optim.lr_net, cfg.optim.lr_color = 2, 0.002, 0.003
    model = build_model(cfg, "lucid")
    optimizer = make_optimizer(model, cfg)
    last = set(map(id, model.backbone.last_block().parameters()))
    apply_schedule(model, optimizer, 0, cfg)
    for p in model.backbone.parameters():
        assert p.requires_grad == (id(p) in last)
    assert all(p.requires_grad for p in model.head.parameters())
    assert all(p.requires_grad for p in model.colornet.parameters())
    lrs = {g["name"]: g["lr"] for g in optimizer.param_groups}
    assert lrs == {"network": 0.002, "color": 0.003}
    apply_schedule(model, optimizer, 2, cfg)
    assert all(p.requires_grad for p in model.parameters())
    lrs = {g["name"]: g["lr"] for g in optimizer.param_groups}
    assert lrs["network"] == pytest.approx(0.0002) and lrs["color"] == 0.003


def test_preflight_names_every_missing_thing(tmp_path):
    cfg = Config()
    cfg.data.name, cfg.model.backbone = "image_folder", "convnext"
    problems = preflight(cfg)
    assert any("data.root is not set" in p for p in problems)
    assert any("model.convnext_path is not set" in p for p in problems)
    cfg.data.root = str(tmp_path / "cub")
    (tmp_path / "cub" / "train").mkdir(parents=True)
    problems = preflight(cfg)
    assert any(p.startswith(f"{tmp_path / 'cub' / 'test'} does not exist") for p in problems)
    assert any("cub_3parts" in p for p in problems)
