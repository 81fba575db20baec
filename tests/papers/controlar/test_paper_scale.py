"""Paper scale with tiny stand-ins: a random LlamaGen GPT checkpoint, a random VQ-16 decoder
checkpoint, a tiny ViT saved with ``save_pretrained`` and a fake folder of codes and control
maps; one training step and a sampled image per variant through ``scale=paper``."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from papers.controlar.config import PaperModelConfig
from papers.controlar.llamagen import LlamaGenControlAR, apply_rope, rope_2d
from papers.controlar.method import SamplingSettings, generate, teacher_forced_logits
from papers.controlar.vq16 import VQ16Decoder
from shared.config import compose_dict
from shared.entry import execute

TINY = PaperModelConfig(
    dim=32, n_layers=3, n_heads=2, vocab_size=64, num_classes=4, image_size=64, downsample=16,
    token_dropout=0.0, resid_dropout=0.0, ffn_dropout=0.0, vq_channels=32, vq_z_channels=32,
)  # fmt: skip
GRID, N = 4, 16


def tiny_vit(path=None):
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=64, patch_size=16, hidden_size=24, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=48,
    )  # fmt: skip
    model = ViTModel(config, add_pooling_layer=False)
    if path is not None:
        model.save_pretrained(path)
    return model


def tiny_gpt(variant: str) -> LlamaGenControlAR:
    torch.manual_seed(1)
    encoder = None if variant == "none" else tiny_vit()
    return LlamaGenControlAR(TINY, variant, encoder).eval()


def test_rope_2d_rotates_by_row_then_column():
    table = rope_2d(GRID, head_dim=8, base=10000.0)  # (16, 4, 2): 2 row pairs, 2 column pairs
    assert table.shape == (N, 4, 2)
    angle = torch.atan2(table[..., 1], table[..., 0]).view(GRID, GRID, 4)
    assert torch.allclose(angle[:, 0, :2], angle[:, 3, :2])  # row pairs ignore the column
    assert torch.allclose(angle[0, :, 2:], angle[3, :, 2:])  # column pairs ignore the row
    assert torch.allclose(angle[1, 0, 0], torch.tensor(1.0))  # row 1, frequency 1
    assert torch.allclose(angle[0, 2, 3], torch.tensor(2.0 / 10000 ** (2 / 4)))


def test_zero_rotation_zeroes_the_prefix_vectors():
    x = torch.randn(1, 2, 1, 8)
    table = torch.stack([rope_2d(GRID, 8, 1e4)[5], torch.zeros(4, 2)])
    out = apply_rope(x, table)
    assert not out[:, 1].any() and out[:, 0].norm() == pytest.approx(
        x[:, 0].norm().item(), rel=1e-5
    )


@pytest.mark.parametrize("variant", ["cond", "prefill", "none"])
def test_llamagen_cached_decoding_equals_the_uncached_forward(variant):
    model = tiny_gpt(variant)
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, TINY.vocab_size, (2, N), generator=g)
    labels = torch.tensor([1, 3])
    control = None
    if variant != "none":
        control = model.control_tokens((torch.rand(2, 64, 64, generator=g) > 0.8).float())
    with torch.no_grad():
        full = teacher_forced_logits(model, codes, control, labels)
        _, cached = generate(
            model, control, N, SamplingSettings(), condition=labels, forced=codes, batch=2
        )
        _, guided = generate(
            model, control, N, SamplingSettings(cfg_scale=4.0), condition=labels, forced=codes,
            batch=2,
        )  # fmt: skip
    assert full.shape == (2, N, TINY.vocab_size)
    assert (cached - full).abs().max() < 1e-5
    assert torch.isfinite(guided).all()


def test_llamagen_alignment_only_from_x_t_on():
    model = tiny_gpt("cond")
    codes, labels = torch.randint(0, TINY.vocab_size, (1, N)), torch.tensor([2])
    control = torch.zeros(1, N, TINY.dim)
    base = teacher_forced_logits(model, codes, control, labels)
    control[:, 5] = torch.randn(TINY.dim)
    moved = teacher_forced_logits(model, codes, control, labels)
    assert torch.equal(moved[:, :5], base[:, :5]) and (moved[:, 5] - base[:, 5]).abs().max() > 0


def test_llamagen_checkpoint_round_trip_leaves_only_new_modules(tmp_path):
    path = tmp_path / "gpt.pt"
    torch.save({"model": tiny_gpt("none").state_dict()}, path)
    model = tiny_gpt("cond")
    missing = model.load_gpt(str(path))
    assert missing and all(
        k.split(".")[0] in ("adapter_mlp", "condition_mlp", "condition_layers", "adapter")
        for k in missing
    )
    assert torch.equal(model.output.weight, tiny_gpt("none").output.weight)


def test_feed_forward_width_is_two_thirds_of_four_times_rounded_to_256():
    model = LlamaGenControlAR(replace(TINY, dim=1024, n_layers=3, n_heads=16), "none")
    assert model.layers[0].feed_forward.w1.out_features == 2816 == 256 * math.ceil(2730 / 256)


def test_control_map_of_the_wrong_size_names_the_grid():
    model = tiny_gpt("cond")
    with pytest.raises(ValueError, match="4x4 image-token grid"):
        model.control_tokens(torch.zeros(1, 32, 32))


def make_stand_ins(tmp_path):
    """Checkpoints, encoder folder and data folder in LlamaGen / ControlAR's formats."""
    torch.save({"model": tiny_gpt("none").state_dict()}, tmp_path / "gpt.pt")
    torch.manual_seed(2)
    vq = VQ16Decoder(TINY.vocab_size, TINY.code_dim, 32, 32, [1, 1, 2, 2, 4], 2)
    state = {**vq.state_dict(), "encoder.conv_in.weight": torch.zeros(1)}  # skipped on load
    torch.save({"model": state}, tmp_path / "vq.pt")
    tiny_vit(tmp_path / "vit")
    data = tmp_path / "data"
    (data / "codes").mkdir(parents=True)
    (data / "controls").mkdir()
    rng = np.random.default_rng(0)
    for i in range(6):
        np.save(data / "codes" / f"{i:03d}.npy", rng.integers(0, TINY.vocab_size, (GRID, GRID)))
        edges = np.zeros((64, 64), np.uint8)
        edges[rng.integers(8, 56), 8:56] = 255
        np.save(data / "controls" / f"{i:03d}.npy", edges)
    np.save(data / "labels.npy", rng.integers(0, TINY.num_classes, 6))
    return data


def test_paper_scale_trains_and_samples_through_tiny_stand_ins(tmp_path):
    pytest.importorskip("cv2")
    data = make_stand_ins(tmp_path)
    overrides = [
        "runtime.progress=false",
        "methods=[cond,prefill,none]",
        f"data.root={data}",
        "data.image_size=64",
        f"paper_model.gpt_checkpoint={tmp_path / 'gpt.pt'}",
        f"paper_model.vq_checkpoint={tmp_path / 'vq.pt'}",
        f"paper_model.control_encoder={tmp_path / 'vit'}",
        *(f"paper_model.{k}={getattr(TINY, k)}" for k in (
            "dim", "n_layers", "n_heads", "vocab_size", "num_classes", "image_size",
            "vq_channels", "vq_z_channels")),
        "train.steps=1",
        "train.batch_size=2",
        "sampling.top_k=8",
        "sampling.n_show=2",
        "loop.checkpoint_every=1",
    ]  # fmt: skip
    record = execute("controlar", compose_dict("controlar", "paper", overrides), tmp_path / "run")
    metrics = record["metrics"]
    assert set(metrics) == {"cond", "prefill", "none"}
    assert (
        metrics["cond"]["seq_len"]["mean"] == N and metrics["prefill"]["seq_len"]["mean"] == 2 * N
    )
    assert all(
        math.isfinite(m["nll"]["mean"]) and 0 <= m["f1"]["mean"] <= 1 for m in metrics.values()
    )
    samples = np.load(tmp_path / "run" / "runs" / "cond-s0" / "samples.npy")
    assert samples.shape == (2, 64, 64, 3) and samples.min() >= 0 and samples.max() <= 1
    assert (tmp_path / "run" / "samples.png").is_file()
    assert (tmp_path / "run" / "runs" / "cond-s0" / "checkpoint.pt").is_file()
