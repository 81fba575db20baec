"""The toy birds (brief Sec. 5) and the paper-scale image tree: layout checks, the shared
geometric augmentation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from papers.lucidppn.data import (
    BODY,
    CLIP_GUARD,
    apply_geometry,
    augmentation_matrix,
    index_image_folder,
    make_toy_birds,
    part_root,
    toy_colours,
)
from papers.lucidppn.method import luma


def test_toy_birds_are_a_pure_function_of_the_seed():
    a, b, c = make_toy_birds(50, 0), make_toy_birds(50, 0), make_toy_birds(50, 1)
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and torch.equal(a.masks, b.masks)
    assert not torch.equal(a.x, c.x)
    assert a.x.shape == (50, 3, 32, 32) and a.masks.shape == (50, 3, 32, 32)
    assert a.x.min() >= 0 and a.x.max() <= 1 and set(a.y.tolist()) <= set(range(8))


def test_parts_are_disjoint_and_present():
    data = make_toy_birds(200, 3)
    assert data.masks.sum(1).max() <= 1  # body takes precedence over head and tail
    assert (data.masks.flatten(2).sum(-1) > 5).all()  # every part visible in every image


def test_colours_are_iso_luminant_and_never_clipped():
    colours = toy_colours()
    lumas = {k: float(np.asarray(v) @ np.array([0.299, 0.587, 0.114])) for k, v in colours.items()}
    assert lumas["body_a"] == pytest.approx(0.45) and lumas["body_b"] == pytest.approx(0.45)
    assert lumas["head"] == pytest.approx(0.30) and lumas["tail"] == pytest.approx(0.60)
    assert max(float(v.max()) for v in colours.values()) * 1.1 <= CLIP_GUARD


def test_body_luma_does_not_tell_colour_twins_apart():
    """The body's mean luma is the same for both body colours (up to brightness and noise),
    while its mean colour differs: only a colour-seeing branch can split twins."""
    data = make_toy_birds(400, 5)
    body = data.masks[:, BODY] > 0
    y_luma = luma(data.x)[:, 0]
    mean_luma = torch.stack([y_luma[i][body[i]].mean() for i in range(len(data.y))])
    red = torch.stack([data.x[i, 0][body[i]].mean() for i in range(len(data.y))])
    colour_b = data.y % 2 == 1
    assert abs(float(mean_luma[colour_b].mean() - mean_luma[~colour_b].mean())) < 0.01
    assert float(red[~colour_b].mean() - red[colour_b].mean()) > 0.4


def test_colour_twins_share_shape_and_shape_twins_share_colour():
    data = make_toy_birds(300, 7)
    for c in range(0, 8, 2):  # classes c and c + 1: same shape configuration
        a, b = data.masks[data.y == c], data.masks[data.y == c + 1]
        # the mean mask area of each part agrees between twins (same shapes, same jitter law)
        assert torch.allclose(a.sum((2, 3)).mean(0), b.sum((2, 3)).mean(0), rtol=0.1)


# -------------------------------------------------------------------- paper-scale layout
def _image(path, size=(12, 10), mode="RGB"):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    rng = np.random.default_rng(len(str(path)))
    array = rng.integers(0, 255, (size[1], size[0], channels), dtype=np.uint8)
    Image.fromarray(array[..., 0] if channels == 1 else array, mode).save(path)


def _tree(root, num_parts=2, classes=("a", "b")):
    for split in ("train", "test"):
        for name in classes:
            for i in range(2):
                _image(root / split / name / f"img{i}.jpg")
                for k in range(num_parts):
                    _image(
                        part_root(root, num_parts) / split / str(k) / name / f"img{i}.png", mode="L"
                    )


def test_index_finds_images_and_their_part_maps(tmp_path):
    root = tmp_path / "cub"
    _tree(root)
    samples, classes = index_image_folder(root, "train", 2)
    assert classes == ["a", "b"] and len(samples) == 4
    assert samples[0].masks[1] == tmp_path / "cub_2parts" / "train" / "1" / "a" / "img0.png"


def test_wrong_channel_count_names_the_file(tmp_path):
    root = tmp_path / "cub"
    _tree(root)
    _image(root / "train" / "b" / "gray.png", mode="L")
    with pytest.raises(ValueError, match=r"gray\.png: 1 channel"):
        index_image_folder(root, "train", 2)


def test_part_map_of_another_size_names_both_files(tmp_path):
    root = tmp_path / "cub"
    _tree(root)
    _image(part_root(root, 2) / "train" / "1" / "a" / "img1.png", size=(5, 5), mode="L")
    with pytest.raises(ValueError, match=r"1/a/img1\.png .* does not match its image .*img1\.jpg"):
        index_image_folder(root, "train", 2)


def test_missing_part_map_names_the_expected_path(tmp_path):
    root = tmp_path / "cub"
    _tree(root)
    (part_root(root, 2) / "test" / "0" / "b" / "img0.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"no part map 0 for .*img0\.jpg"):
        index_image_folder(root, "test", 2)


def test_one_warp_moves_image_and_masks_together():
    torch.manual_seed(0)
    image = torch.rand(3, 40, 40)
    mask = (image[:1] > 0.5).float()  # a mask that is a function of the image
    stacked = torch.cat([image, mask, image[1:2]])
    rng = np.random.default_rng(3)
    for _ in range(5):
        out = apply_geometry(stacked, augmentation_matrix(rng, 40, 32, (0.95, 1.0)), 32)
        assert out.shape == (5, 32, 32)
        torch.testing.assert_close(out[4], out[1])  # same plane, same warp, same pixels
    identity = apply_geometry(stacked, np.eye(3), 40)
    torch.testing.assert_close(identity, stacked, atol=1e-5, rtol=0)
