"""Toy data, the k-means tokenizer (round trip), edge F1 hand cases and input checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from papers.controlar.config import ModelConfig
from papers.controlar.data import PALETTE, CodeFolder, edge_map, make_rectangle_images
from papers.controlar.metrics import edge_f1
from papers.controlar.model import ToyControlAR, check_control_maps
from papers.controlar.tokenizer import KMeansTokenizer, patchify, unpatchify


def test_rectangles_use_the_palette_and_are_reproducible():
    a = make_rectangle_images(20, np.random.default_rng(0))
    b = make_rectangle_images(20, np.random.default_rng(0))
    assert np.array_equal(a, b) and a.shape == (20, 32, 32, 3)
    colours = np.unique(a.reshape(-1, 3), axis=0)
    assert all((np.abs(PALETTE - c).sum(1) < 1e-6).any() for c in colours)


def test_edge_map_hand_case():
    image = np.zeros((1, 4, 4, 3), np.float32)
    image[0, 1:3, 1:3] = 1.0  # a 2x2 white square
    edges = edge_map(image)[0]
    expected = np.zeros((4, 4), bool)
    expected[1, 1:3] = expected[1:3, 1] = True  # entering the square from above / the left
    expected[3, 1:3] = expected[1:3, 3] = True  # leaving it below / to the right
    assert np.array_equal(edges, expected)
    assert not edge_map(image, threshold=3.0).any()  # L1 difference 3 is not > 3


def test_patchify_round_trip():
    images = np.random.default_rng(0).random((3, 8, 8, 3)).astype(np.float32)
    assert np.array_equal(unpatchify(patchify(images, 4), 4, 2), images)


def test_tokenizer_round_trip_on_codebook_images():
    """An image made of codebook patches encodes to its codes and decodes exactly (Sec. 7)."""
    images = make_rectangle_images(50, np.random.default_rng(1), size=16)
    tokenizer = KMeansTokenizer.fit(images, 4, 16, 5, seed=0)
    codes = np.random.default_rng(2).integers(0, 16, (4, 16))
    built = tokenizer.decode(codes)
    assert np.array_equal(tokenizer.encode(built), codes)
    assert np.array_equal(tokenizer.decode(tokenizer.encode(built)), built)


def test_edge_f1_cases():
    edges = np.zeros((1, 10, 10), bool)
    edges[0, 5, 2:8] = True  # a horizontal line
    assert edge_f1(edges, edges)[0] == 1.0
    assert edge_f1(np.zeros_like(edges), edges)[0] == 0.0
    shifted = np.roll(edges, 1, axis=1)  # one pixel down
    assert edge_f1(shifted, edges, tolerance=1)[0] == 1.0
    assert edge_f1(shifted, edges, tolerance=0)[0] < 1.0
    far = np.roll(edges, 3, axis=1)
    assert edge_f1(far, edges, tolerance=1)[0] == 0.0
    with pytest.raises(ValueError, match="edge maps"):
        edge_f1(edges[0], edges[0])


def test_control_map_of_wrong_size_or_dtype_names_the_grid():
    model = ToyControlAR(ModelConfig(), "cond")
    with pytest.raises(ValueError, match="8x8 image-token grid"):
        model.control_tokens(torch.zeros(2, 28, 28))
    with pytest.raises(TypeError, match="8x8 image-token grid"):
        model.control_tokens(torch.zeros(2, 32, 32, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"\(B, 1, 32, 32\)"):
        check_control_maps(torch.zeros(2, 3, 32, 32), 32, 4)
    assert check_control_maps(torch.ones(2, 32, 32), 32, 4).shape == (2, 1, 32, 32)


def test_control_token_t_depends_only_on_its_patch_and_border():
    """The local encoder: changing a pixel far from patch t leaves c_t unchanged."""
    torch.manual_seed(0)
    encoder = ToyControlAR(ModelConfig(), "cond").encoder
    maps = torch.rand(1, 1, 32, 32)
    changed = maps.clone()
    changed[0, 0, 20, 20] += 1.0  # inside patch (5, 5) = token 45
    delta = (encoder(changed) - encoder(maps)).abs().amax(-1)[0]  # (64,)
    assert delta[45] > 0 and delta[0] == 0 and delta[63] == 0


def test_code_folder_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="codes"):
        CodeFolder.open(tmp_path)
    (tmp_path / "codes").mkdir()
    (tmp_path / "controls").mkdir()
    np.save(tmp_path / "codes" / "a.npy", np.arange(4).reshape(2, 2))
    np.save(tmp_path / "controls" / "a.npy", np.full((32, 32), 255, np.uint8))
    folder = CodeFolder.open(tmp_path)
    codes, control, label = folder.item(0)
    assert codes.tolist() == [0, 1, 2, 3] and control.max() == 1.0 and label == 0
