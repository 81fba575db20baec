"""A user's own image set (``shared/images.py``, adamcb's and qnbo's real rungs): IDX files in
the MNIST layout or one .npz, pixels on [0, 1] by the set's own range, and every bad input
refused naming the file and the array."""

from __future__ import annotations

import numpy as np
import pytest

from shared.images import ImageSetError, image_files, load_image_set
from tests.helpers import write_idx

IMAGES, LABELS = 2051, 2049


def write_idx_set(folder, n_train=60, n_test=20, side=6, classes=3, compress=False):
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(
            folder / f"{prefix}-images-idx3-ubyte",
            rng.integers(0, 256, (n, side, side)),
            IMAGES,
            compress,
        )
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", np.arange(n) % classes, LABELS, compress)


def test_idx_folder_in_the_mnist_layout(tmp_path):
    write_idx_set(tmp_path, compress=True)
    images = load_image_set("idx", tmp_path, 0.2, 0)
    assert images.x_train.shape == (60, 1, 6, 6) and images.x_test.shape == (20, 1, 6, 6)
    assert (
        images.x_train.dtype == np.float32
        and 0 <= images.x_train.min() <= images.x_train.max() <= 1
    )
    assert images.num_classes == 3 and len(image_files("idx", tmp_path)) == 4
    mean, std = images.channel_stats()
    assert mean == pytest.approx([images.x_train.mean()]) and std[0] > 0


def test_npz_is_split_by_its_own_seed_and_scaled_by_its_own_range(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(5.0, 2.0, size=(50, 4, 4, 3))  # float, channels last
    np.savez(tmp_path / "set.npz", x=x, y=np.arange(50) % 2)
    images = load_image_set("npz", tmp_path / "set.npz", 0.2, 7)
    assert images.x_train.shape == (40, 3, 4, 4) and images.x_test.shape == (10, 3, 4, 4)
    assert images.x_train.min() == 0.0 and images.x_train.max() == pytest.approx(1.0)
    again = load_image_set("npz", tmp_path / "set.npz", 0.2, 7)
    np.testing.assert_array_equal(images.y_test, again.y_test)  # the split is seeded
    np.savez(
        tmp_path / "given.npz", x=x[:40], y=np.arange(40) % 2, x_test=x[40:], y_test=[0, 1] * 5
    )
    given = load_image_set("npz", tmp_path / "given.npz", 0.2, 7)
    assert len(given.y_train) == 40 and list(given.y_test) == [0, 1] * 5


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x": np.zeros((10, 4, 4)), "y": np.arange(9)}, "the counts differ"),
        ({"x": np.zeros((10, 4, 4))}, r"no array\(s\) \['y'\]"),
        ({"x": np.zeros((10, 16)), "y": np.arange(10)}, r"expected \(N, H, W\)"),
        ({"x": np.ones((10, 4, 4)), "y": np.arange(10) - 1}, "a negative label"),
        ({"x": np.ones((10, 4, 4)), "y": np.arange(10) / 3}, "whole numbers"),
        ({"x": np.ones((10, 4, 4)), "y": np.zeros(10, int)}, "one class only"),
        ({"x": np.ones((10, 4, 4)), "y": np.arange(10) % 2}, "one value"),
        (
            {"x": np.zeros((10, 4, 4)), "y": np.arange(10), "x_test": np.zeros((2, 4, 4))},
            "come together",
        ),
    ],
    ids=["counts", "no y", "flat", "negative", "fractional", "one class", "constant", "test half"],
)
def test_a_bad_npz_is_refused_naming_the_file_and_array(tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ImageSetError, match=message) as refusal:
        load_image_set("npz", tmp_path / "bad.npz", 0.2, 0)
    assert str(tmp_path / "bad.npz") in str(refusal.value)


def test_a_bad_idx_folder_is_refused_naming_the_file(tmp_path):
    write_idx_set(tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.arange(19) % 3, LABELS)  # 19 for 20
    with pytest.raises(ImageSetError, match=r"t10k-labels-idx1-ubyte: .* for 20 images"):
        load_image_set("idx", tmp_path, 0.2, 0)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(ImageSetError, match="no t10k-labels-idx1-ubyte"):
        load_image_set("idx", tmp_path, 0.2, 0)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08")
    with pytest.raises(ImageSetError, match="header truncated|no IDX header"):
        load_image_set("idx", tmp_path, 0.2, 0)
    (tmp_path / "pickled.npz").write_bytes(b"not a zip")
    with pytest.raises(ImageSetError, match="not a readable .npz"):
        load_image_set("npz", tmp_path / "pickled.npz", 0.2, 0)
