"""A user's own image set for adamcb's and qnbo's real rungs (issue 53): IDX files in the
MNIST layout or one ``.npz``, read and checked at start, pixels put on [0, 1].

Two layouts, chosen by ``source``:

* ``idx``: a folder holding ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
  ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``), the
  names MNIST and Fashion-MNIST ship under, read by :func:`shared.idx.read_idx`.
* ``npz``: one file with arrays ``x`` (N, H, W) or (N, H, W, C) and ``y`` (N,), split into
  train and test by a seeded permutation, and optionally ``x_test`` / ``y_test`` (then used as
  the test split as given).

Images are grey (N, H, W) or channels-last colour (N, H, W, C); labels are integers
0..K-1 with K >= 2. Pixels of type uint8 are divided by 255, any other numeric type is
scaled by the training split's own range, so a user's set never borrows another set's
statistics. Every problem raises :class:`ImageSetError` naming the file (and the array).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shared.idx import IdxError, read_idx

IMAGE_SOURCES = ("idx", "npz")
IDX_NAMES = {  # split -> (images, labels), as MNIST ships them
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
UINT8_MAX = 255.0


class ImageSetError(ValueError):
    """A user's image file that cannot serve as an image set; the message names it."""


@dataclass
class ImageSet:
    """Train and test images, float32 in [0, 1], channels first: (N, C, H, W); labels int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    files: tuple[Path, ...]  # what was read, for the run record

    @property
    def num_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    def channel_stats(self) -> tuple[list[float], list[float]]:
        """Per-channel mean and std of the training images: the set's own normalisation."""
        mean = self.x_train.mean(axis=(0, 2, 3))
        std = self.x_train.std(axis=(0, 2, 3))
        if np.any(std == 0):
            raise ImageSetError(f"{self.files[0]}: a channel holds one value only (std 0)")
        return mean.tolist(), std.tolist()


def _idx_file(folder: Path, name: str) -> Path:
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise ImageSetError(f"{folder}: no {name} (or {name}.gz), the MNIST layout's file")


def image_files(source: str, path: str | Path) -> tuple[Path, ...]:
    """The files an image set is read from (for the run record), without reading them."""
    path = Path(path).expanduser()
    if source == "idx":
        return tuple(_idx_file(path, name) for pair in IDX_NAMES.values() for name in pair)
    return (path,)


def _checked_pair(images: np.ndarray, labels: np.ndarray, where_x: str, where_y: str):
    """Images (N, H, W[, C]) and labels (N,) of whole numbers, counts equal."""
    if images.ndim not in (3, 4):
        raise ImageSetError(f"{where_x}: shape {images.shape}, expected (N, H, W) or (N, H, W, C)")
    if not np.issubdtype(images.dtype, np.number):
        raise ImageSetError(f"{where_x}: values of type {images.dtype}, expected numbers")
    if labels.ndim != 1 or len(labels) != len(images):
        raise ImageSetError(
            f"{where_y}: {labels.shape} labels for {len(images)} images ({where_x}): the counts "
            "differ"
        )
    if not np.issubdtype(labels.dtype, np.integer):
        if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
            raise ImageSetError(f"{where_y}: labels must be whole numbers 0..K-1")
    if labels.size and labels.min() < 0:
        raise ImageSetError(f"{where_y}: a negative label ({labels.min()}); labels are 0..K-1")
    if not np.all(np.isfinite(images)):
        raise ImageSetError(f"{where_x}: NaN or inf pixels")
    return images, labels.astype(np.int64)


def _channels_first(images: np.ndarray) -> np.ndarray:
    return images[:, None] if images.ndim == 3 else np.moveaxis(images, -1, 1)


def load_image_set(
    source: str, path: str | Path, test_fraction: float, split_seed: int
) -> ImageSet:
    """A user's image set (``source`` idx or npz, see the module docstring).

    Args:
        source: ``idx`` (a folder in the MNIST layout) or ``npz`` (one file).
        path: the folder or the file.
        test_fraction: npz without ``x_test``: the share of ``x`` held out for testing.
        split_seed: npz without ``x_test``: the seed of that permutation.

    Raises:
        ImageSetError: naming the file and the array (a missing file or array, counts that
            differ, a label outside 0..K-1, one class only, too few images to split).
    """
    path = Path(path).expanduser()
    if source == "idx":
        if not path.is_dir():
            raise ImageSetError(f"{path}: no such folder (the MNIST layout's four files)")
        parts, files = {}, []
        for split, (image_name, label_name) in IDX_NAMES.items():
            image_file, label_file = _idx_file(path, image_name), _idx_file(path, label_name)
            try:
                images, labels = read_idx(image_file), read_idx(label_file)
            except IdxError as err:
                raise ImageSetError(str(err)) from err
            parts[split] = _checked_pair(images, labels, str(image_file), str(label_file))
            files += [image_file, label_file]
        (x_train, y_train), (x_test, y_test) = parts["train"], parts["test"]
    elif source == "npz":
        if not path.is_file():
            raise ImageSetError(f"{path}: no such file")
        try:
            with np.load(path, allow_pickle=False) as arrays:  # no pickled objects
                stored = {name: arrays[name] for name in arrays.files}
        except (OSError, ValueError, zipfile.BadZipFile) as err:
            raise ImageSetError(f"{path}: not a readable .npz ({err})") from err
        absent = [name for name in ("x", "y") if name not in stored]
        if absent:
            raise ImageSetError(f"{path}: no array(s) {absent}; holds {sorted(stored)}")
        x, y = _checked_pair(stored["x"], stored["y"], f"{path}[x]", f"{path}[y]")
        files = [path]
        if "x_test" in stored or "y_test" in stored:
            if not {"x_test", "y_test"} <= set(stored):
                raise ImageSetError(f"{path}: x_test and y_test come together")
            x_train, y_train = x, y
            x_test, y_test = _checked_pair(
                stored["x_test"], stored["y_test"], f"{path}[x_test]", f"{path}[y_test]"
            )
        else:
            n_test = round(test_fraction * len(y))
            if not 0 < n_test < len(y):
                raise ImageSetError(
                    f"{path}: {len(y)} images cannot be split with test_fraction={test_fraction}"
                )
            order = np.random.default_rng(split_seed).permutation(len(y))
            x_train, y_train = x[order[n_test:]], y[order[n_test:]]
            x_test, y_test = x[order[:n_test]], y[order[:n_test]]
    else:
        raise ImageSetError(f"unknown image source {source!r}: one of {IMAGE_SOURCES}")
    if x_train.shape[1:] != x_test.shape[1:]:
        raise ImageSetError(
            f"{files[0]}: training images {x_train.shape[1:]} and test images "
            f"{x_test.shape[1:]} differ in shape"
        )
    if len(np.unique(y_train)) < 2:
        raise ImageSetError(f"{files[0]}: the training labels hold one class only")
    if x_train.dtype == np.uint8:
        low, scale = 0.0, UINT8_MAX
    else:  # no fixed pixel range: the training split's own
        low, high = float(x_train.min()), float(x_train.max())
        if high == low:
            raise ImageSetError(f"{files[0]}: every training pixel holds one value")
        scale = high - low

    def unit(images: np.ndarray) -> np.ndarray:
        return _channels_first(((images.astype(np.float64) - low) / scale).astype(np.float32))

    return ImageSet(unit(x_train), y_train, unit(x_test), y_test, tuple(files))
