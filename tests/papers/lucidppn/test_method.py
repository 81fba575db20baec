"""LucidPPN's core math (brief Sec. 7): shapes, stop-gradient, per-pixel ColorNet, hue
invariance of ShapeTexNet, luma, the BCE closed form, L_D on the true class only, the
prediction rule, the colour cube."""

from __future__ import annotations

import math

import pytest
import torch

from papers.lucidppn.method import (
    colour_cube,
    colour_prototype,
    colour_twin_gaps,
    downscale,
    explain,
    fuse,
    grayscale_input,
    localisation_ratio,
    lucid_loss,
    luma,
    part_alignment_loss,
    part_alignment_scores,
    per_part_bce,
    predict,
    resemblance,
    rotate_hue,
)
from papers.lucidppn.model import ColorNet, LucidPPN, RGBPrototypeNet, toy_backbone

K, M = 3, 4


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    return None


def tiny_lucid(seed: int = 0) -> LucidPPN:
    torch.manual_seed(seed)
    return LucidPPN(
        toy_backbone(1, [8, 8], [2, 1]), 8, ColorNet([8], K, M), K, M, 0.3, 0.2, 1, "area"
    )


def images(b: int = 4, size: int = 16, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, size, size, generator=g) * 0.8 + 0.1


# ---------------------------------------------------------------------------- 1. shapes
def test_shapes_and_ranges():
    out = tiny_lucid()(images())
    for z in (out.z_shape, out.z_color, out.z):
        assert z.shape == (4, K, M, 8, 8)
    assert out.r_shape.shape == out.r.shape == (4, K, M)
    assert out.p.shape == out.p_shape.shape == (4, M)
    assert ((out.p > 0) & (out.p < 1)).all()
    base = RGBPrototypeNet(toy_backbone(3, [8], [2]), 8, K, M, [0.3] * 3, [0.2] * 3)
    assert base(images()).z.shape == (4, K, M, 8, 8)


# ---------------------------------------------------------------------- 2. stop-gradient
def _grads(model: LucidPPN, loss: torch.Tensor):
    model.zero_grad(set_to_none=True)
    loss.backward()
    shape = [p.grad for p in model.network_parameters()]
    color = [p.grad for p in model.colornet.parameters()]
    return shape, color


def _is_zero(grad) -> bool:
    return grad is None or bool((grad == 0).all())


def test_colour_loss_trains_only_colornet_and_shape_loss_only_shapetexnet():
    model = tiny_lucid()
    y = torch.tensor([0, 1, 2, 3])
    out = model(images())
    shape, color = _grads(model, per_part_bce(out.r, y))  # L_C alone
    assert all(_is_zero(g) for g in shape)
    assert all(not _is_zero(g) for g in color)
    out = model(images())
    shape, color = _grads(model, per_part_bce(out.r_shape, y))  # L_S alone
    assert all(_is_zero(g) for g in color)
    assert any(not _is_zero(g) for g in shape)


def test_fuse_is_the_product_with_a_detached_shape_map():
    z_c = torch.rand(2, K, M, 3, 3, requires_grad=True)
    z_s = torch.rand(2, K, M, 3, 3, requires_grad=True)
    fused = fuse(z_c, z_s)
    torch.testing.assert_close(fused, z_c * z_s)
    fused.sum().backward()
    assert z_s.grad is None
    torch.testing.assert_close(z_c.grad, z_s.detach())


# ------------------------------------------------------------------ 3. per-pixel ColorNet
def test_colornet_commutes_with_pixel_permutations():
    torch.manual_seed(0)
    net = ColorNet([16, 16], K, M)
    x = torch.rand(2, 3, 5, 5)
    perm = torch.randperm(25)
    permuted = x.flatten(2)[:, :, perm].view(2, 3, 5, 5)
    out, out_perm = net(x), net(permuted)
    torch.testing.assert_close(out.flatten(3)[..., perm], out_perm.flatten(3))


def test_same_colour_histogram_different_layout_gives_the_same_sorted_scores():
    torch.manual_seed(0)
    net = ColorNet([16], K, M)
    red, blue = torch.tensor([0.9, 0.1, 0.1]), torch.tensor([0.1, 0.2, 0.9])
    left = torch.zeros(1, 3, 4, 4)
    left[..., :2], left[..., 2:] = red.view(1, 3, 1, 1), blue.view(1, 3, 1, 1)
    checker = torch.zeros(1, 3, 4, 4)
    mask = (torch.arange(4).view(4, 1) + torch.arange(4).view(1, 4)) % 2 == 0
    checker[:] = torch.where(mask, red.view(3, 1, 1), blue.view(3, 1, 1))
    a, b = net(left).flatten(3).sort(-1).values, net(checker).flatten(3).sort(-1).values
    torch.testing.assert_close(a, b)


# --------------------------------------------------------------- 4. hue invariance of r^S
def test_luminance_preserving_hue_rotation_keeps_luma_and_changes_colour():
    x = images(2, 8)
    rotated = rotate_hue(x, 2.0)
    torch.testing.assert_close(luma(rotated), luma(x), atol=1e-6, rtol=0)
    assert (rotated - x).abs().max() > 0.05
    torch.testing.assert_close(rotate_hue(x, 0.0), x, atol=1e-6, rtol=0)
    torch.testing.assert_close(rotate_hue(x, 2 * math.pi), x, atol=1e-6, rtol=0)
    torch.testing.assert_close(rotate_hue(rotate_hue(x, 1.3), -1.3), x, atol=1e-6, rtol=0)


def test_shapetexnet_is_blind_to_the_hue_rotation_but_colornet_is_not():
    model = tiny_lucid().eval()
    x = images()
    with torch.no_grad():
        out, rotated = model(x), model(rotate_hue(x, 2.0))
    assert (out.r_shape - rotated.r_shape).abs().max() < 1e-5
    assert (out.z_color - rotated.z_color).abs().max() > 1e-3


# ----------------------------------------------------------------------------- 5. luma
def test_luma_of_primaries_linearity_and_replication():
    primaries = torch.eye(3).view(3, 3, 1, 1)
    torch.testing.assert_close(luma(primaries).flatten(), torch.tensor([0.299, 0.587, 0.114]))
    a, b = images(2, 4, 1), images(2, 4, 2)
    torch.testing.assert_close(luma(2 * a - 0.5 * b), 2 * luma(a) - 0.5 * luma(b))
    x_s = grayscale_input(a, 0.445, 0.269, 3)
    assert x_s.shape == (2, 3, 4, 4)
    torch.testing.assert_close(x_s[:, 0], x_s[:, 2])
    torch.testing.assert_close(x_s[:, :1], (luma(a) - 0.445) / 0.269)
    with pytest.raises(ValueError, match="RGB"):
        luma(torch.rand(1, 4, 2, 2))


def test_iso_luminant_colours_differ_in_channel_mean_but_not_in_luma():
    """Why luma, not the channel mean (brief 3.8 item 5): the toy's two body colours."""
    from papers.lucidppn.data import toy_colours

    c = toy_colours()
    a, b = (torch.tensor(c[k], dtype=torch.float32).view(1, 3, 1, 1) for k in ("body_a", "body_b"))
    assert abs(float(luma(a) - luma(b))) < 1e-6
    assert abs(float(a.mean() - b.mean())) > 0.03


# ------------------------------------------------------------------- 6. BCE closed form
def test_per_part_bce_closed_form():
    r = torch.tensor([[[0.8, 0.1]]])  # K = 1, M = 2
    loss = per_part_bce(r, torch.tensor([0]))
    assert abs(float(loss) - 0.16425) < 1e-4
    assert abs(float(loss) + (math.log(0.8) + math.log(0.9)) / 2) < 1e-6


def test_per_part_bce_averages_over_parts():
    r = torch.tensor([[[0.8, 0.1], [0.6, 0.3]]])  # K = 2
    y = torch.tensor([0])
    expected = (per_part_bce(r[:, :1], y) + per_part_bce(r[:, 1:], y)) / 2
    torch.testing.assert_close(per_part_bce(r, y), expected)


# ------------------------------------------------------------- 7. L_D on the true class
def test_alignment_loss_reads_only_the_true_class_channel():
    torch.manual_seed(0)
    z = torch.rand(2, K, M, 4, 4) * 0.98 + 0.01
    masks = (torch.rand(2, K, 4, 4) > 0.5).float()
    y = torch.tensor([1, 3])
    loss = part_alignment_loss(z, masks, y)
    changed = z.clone()
    for i, yi in enumerate(y.tolist()):
        for m in range(M):
            if m != yi:
                changed[i, :, m] = torch.rand(K, 4, 4) * 0.98 + 0.01
    torch.testing.assert_close(part_alignment_loss(changed, masks, y), loss)
    changed[0, 0, 1] = 0.5  # the true class's channel of image 0, part 0
    assert not torch.allclose(part_alignment_loss(changed, masks, y), loss)
    manual = torch.stack(
        [
            torch.nn.functional.binary_cross_entropy(z[i, k, y[i]], masks[i, k])
            for i in range(2)
            for k in range(K)
        ]
    ).mean()
    torch.testing.assert_close(loss, manual)
    with pytest.raises(ValueError, match="do not match"):
        part_alignment_loss(z, masks[:, :2], y)


def test_total_loss_weights_and_ablation():
    torch.manual_seed(0)
    z = torch.rand(2, K, M, 4, 4) * 0.98 + 0.01
    r_s, r = resemblance(z), resemblance(z) * 0.5
    masks, y = torch.rand(2, K, 4, 4), torch.tensor([0, 2])
    terms = lucid_loss(r_s, r, z, masks, y, 1.4, 1.0, 1.0)
    expected = 1.4 * part_alignment_loss(z, masks, y) + per_part_bce(r_s, y) + per_part_bce(r, y)
    torch.testing.assert_close(terms.total, expected)
    ablated = lucid_loss(r_s, r, z, masks, y, 0.0, 1.0, 1.0)
    torch.testing.assert_close(ablated.total, per_part_bce(r_s, y) + per_part_bce(r, y))
    baseline = lucid_loss(r_s, None, z, masks, y, 1.4, 1.0, 1.0)
    assert float(baseline.color) == 0.0


# -------------------------------------------------------------------- 8. prediction rule
def test_prediction_is_the_mean_over_parts_of_max_pooled_maps():
    z = torch.zeros(1, 2, 3, 4, 4)  # K = 2, M = 3
    hot = {(0, 0): 0.9, (0, 1): 0.2, (0, 2): 0.4, (1, 0): 0.3, (1, 1): 0.8, (1, 2): 0.1}
    for (k, m), value in hot.items():
        z[0, k, m, (k + m) % 4, (2 * m) % 4] = value
    p = predict(resemblance(z))
    expected = torch.tensor([[(0.9 + 0.3) / 2, (0.2 + 0.8) / 2, (0.4 + 0.1) / 2]])
    torch.testing.assert_close(p, expected)
    assert int(p.argmax()) == 0


def test_explanation_points_at_the_strongest_location_of_the_predicted_class():
    z_s = torch.zeros(2, 3, 4, 4)
    z_s[0, 1, 2, 3], z_s[1, 1, 0, 1] = 0.9, 0.7
    r_s = resemblance(z_s.unsqueeze(0))[0]
    r = r_s * 0.5
    m_hat, evidence = explain(z_s, r_s, r)
    assert m_hat == 1
    assert [e.location for e in evidence] == [(2, 3), (0, 1)]
    assert evidence[0].shape_score == pytest.approx(0.9)
    assert evidence[0].fused_score == pytest.approx(0.45)


# ----------------------------------------------------------------------- 9. colour cube
def test_colour_cube_and_prototype_cut():
    cube = colour_cube(5)
    assert cube.shape == (125, 3) and cube.min() == 0 and cube.max() == 1
    assert len({tuple(c.tolist()) for c in cube}) == 125
    torch.manual_seed(0)
    with torch.no_grad():
        scores = ColorNet([8], 1, 1)(cube.view(-1, 3, 1, 1)).flatten()
    proto = colour_prototype(scores, cube, 0.7)
    assert proto.colours.shape == (125, 3)
    assert (proto.scores[:-1] >= proto.scores[1:]).all()
    assert 1 <= proto.n_kept <= 125
    total = float(proto.scores.sum())
    assert float(proto.scores[: proto.n_kept].sum()) >= 0.7 * total - 1e-6
    assert float(proto.scores[: proto.n_kept - 1].sum()) < 0.7 * total
    one_hot = torch.zeros(125)
    one_hot[17] = 1.0
    sharp = colour_prototype(one_hot, cube, 0.7)
    assert sharp.n_kept == 1 and torch.equal(sharp.colours[0], cube[17])


# ----------------------------------------------------------------- evaluation outputs
def test_colour_twin_gaps_and_localisation_ratio():
    r = torch.zeros(2, 3, 4)
    r[0, :, 0], r[0, :, 1] = torch.tensor([0.5, 0.9, 0.5]), torch.tensor([0.5, 0.3, 0.4])
    r[1, :, 3], r[1, :, 2] = torch.tensor([0.6, 0.8, 0.6]), torch.tensor([0.6, 0.4, 0.6])
    gaps = colour_twin_gaps(r, torch.tensor([0, 3]))
    torch.testing.assert_close(gaps, torch.tensor([0.0, 0.5, 0.05]))
    assert localisation_ratio(gaps, 1, 0.01) == pytest.approx(10.0)
    assert localisation_ratio(torch.tensor([0.0, 0.5, 0.0]), 1, 0.01) == pytest.approx(50.0)


def test_part_alignment_scores_hand_case():
    z = torch.zeros(1, 1, 2, 2, 2)  # K = 1, M = 2, 2 x 2 maps
    z[0, 0, 1] = torch.tensor([[0.9, 0.9], [0.1, 0.1]])  # class 1 wins, predicts the top row
    z[0, 0, 0] = torch.tensor([[0.1, 0.1], [0.9, 0.2]])
    r = resemblance(z)
    r[0, 0, 1] = 1.0
    masks = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]])  # the left column
    scores = part_alignment_scores(z, r, masks)
    assert float(scores["iou"][0, 0]) == pytest.approx(1 / 3)
    assert float(scores["iop"][0, 0]) == pytest.approx(1 / 2)
    assert float(scores["iot"][0, 0]) == pytest.approx(1 / 2)
    empty = part_alignment_scores(z * 0, r, masks * 0)
    assert torch.isnan(empty["iou"]).all()


def test_downscale_area_is_average_pooling():
    x = torch.rand(2, 3, 32, 32)
    torch.testing.assert_close(downscale(x, (8, 8), "area"), torch.nn.functional.avg_pool2d(x, 4))
    assert downscale(x, (26, 26), "bilinear").shape == (2, 3, 26, 26)
    with pytest.raises(ValueError, match="resize"):
        downscale(x, (8, 8), "nearest")
