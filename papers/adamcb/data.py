"""Data for AdamCB: the toy set (scikit-learn's bundled digits) and the paper's image sets.

Paper-scale sets are read from a local folder only, in the layout torchvision's downloaders
leave (so an existing ``data/`` folder works as is); nothing is ever downloaded:

* MNIST:         ``<root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``
* Fashion-MNIST: ``<root>/FashionMNIST/raw/`` with the same file names
* CIFAR-10:      ``<root>/cifar-10-batches-py/{data_batch_1..5,test_batch}``

The real rung (``data.source=asset``) reads Fashion-MNIST's four IDX files out of the pinned
asset cache instead (``shared.assets.require("fashion_mnist")``: the Debian package
``dataset-fashion-mnist``, fetched once by ``python scripts/fetch_assets.py``), with the shared
IDX reader ``shared.idx.read_idx``; it never downloads either.

The readers are written here rather than taken from torchvision because PyPI's torchvision
does not import beside the CPU torch build this repository pins.
"""

from __future__ import annotations

import gzip
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits

from shared.images import load_image_set

IDX_IMAGES_MAGIC = 2051
IDX_LABELS_MAGIC = 2049
PIXEL_MAX = 255.0
DIGITS_PIXEL_MAX = 16.0  # load_digits pixels are integers in [0, 16]
CIFAR_SHAPE = (3, 32, 32)
CIFAR_TRAIN_BATCHES = 5
IDX_FOLDERS = {"mnist": "MNIST", "fashion_mnist": "FashionMNIST"}
# data.name -> the asset (shared/assets.py) that ships it, for data.source=asset
ASSET_SETS = {"fashion_mnist": "fashion_mnist"}
IMAGE_SIDE = 28  # MNIST-format images are 28 x 28
NUM_CLASSES = 10


@dataclass
class Split:
    """Train and test tensors: x (N, ...) float32, y (N,) int64."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def num_classes(self) -> int:
        return int(self.y_train.max()) + 1


def make_toy_data(n_train: int | None, subset_seed: int) -> Split:
    """scikit-learn's bundled 8x8 digits, pixels / 16, as in the brief's toy (Sec. 5).

    The first ``n_train`` examples of ``default_rng(subset_seed).permutation(1797)`` train;
    the remaining examples form the test set.
    """
    digits = load_digits()
    x = torch.tensor(digits.data / DIGITS_PIXEL_MAX, dtype=torch.float32)  # (1797, 64)
    y = torch.tensor(digits.target, dtype=torch.int64)  # (1797,)
    order = torch.from_numpy(np.random.default_rng(subset_seed).permutation(len(y)))
    n_train = len(y) if n_train is None else n_train
    if not 0 < n_train < len(y):
        raise ValueError(f"data.n_train must be in (0, {len(y)}) for digits, got {n_train}")
    train, test = order[:n_train], order[n_train:]
    return Split(x[train], y[train], x[test], y[test])


def dataset_folder(name: str, root: str | Path) -> Path:
    """The folder under ``root`` that holds data set ``name`` (the layout in this docstring)."""
    root_path = Path(root).expanduser()
    if name in IDX_FOLDERS:
        return root_path / IDX_FOLDERS[name] / "raw"
    if name == "cifar10":
        return root_path / "cifar-10-batches-py"
    raise ValueError(f"unknown data.name {name!r}: digits, mnist, fashion_mnist or cifar10")


def load_paper_data(
    name: str,
    root: str | None,
    mean: list[float],
    std: list[float],
    n_train: int | None = None,
    subset_seed: int = 0,
) -> Split:
    """MNIST, Fashion-MNIST or CIFAR-10 from ``root`` (no download), normalised per channel."""
    if root is None:
        raise FileNotFoundError(
            f"data.root is not set for data.name={name}. Put the data set under a local folder "
            f"and pass data.root=/path/to/that/folder (layout: papers/adamcb/data.py docstring)."
        )
    folder = dataset_folder(name, root)
    split = _read_cifar10(folder) if name == "cifar10" else _read_idx_split(folder)
    return _normalise_and_subset(split, name, mean, std, n_train, subset_seed)


def load_asset_data(
    name: str,
    mean: list[float],
    std: list[float],
    n_train: int | None = None,
    subset_seed: int = 0,
) -> Split:
    """``name`` (Fashion-MNIST) from the verified asset cache, normalised, optionally subset.

    Raises:
        shared.assets.AssetError: the asset is missing or corrupt (names the fetch command).
        ValueError: a file is not the IDX array it should be, naming the file.
    """
    from shared.assets import require

    if name not in ASSET_SETS:
        raise ValueError(
            f"data.source=asset has no asset for data.name={name!r}; "
            f"assets: {sorted(ASSET_SETS)} (else use data.source=folder with data.root)"
        )
    files = require(ASSET_SETS[name])  # {file name: verified Path}
    split = Split(
        *_read_asset_pair(files, "train"),
        *_read_asset_pair(files, "t10k"),
    )
    return _normalise_and_subset(split, name, mean, std, n_train, subset_seed)


def load_own_data(
    source: str, path: str, test_fraction: float, n_train: int | None = None, subset_seed: int = 0
) -> Split:
    """A user's image set (``data.source`` idx or npz, :func:`shared.images.load_image_set`),
    normalised per channel by its own training images' mean and std, optionally subset."""
    images = load_image_set(source, path, test_fraction, subset_seed)
    mean, std = images.channel_stats()
    split = Split(
        *(
            torch.from_numpy(a)
            for a in (images.x_train, images.y_train, images.x_test, images.y_test)
        )
    )
    return _normalise_and_subset(split, str(path), mean, std, n_train, subset_seed)


def _read_asset_pair(files: dict[str, Path], prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The images (N, 1, 28, 28) in [0, 1] and labels (N,) of one split of an IDX asset,
    each file checked for its shape, dtype and label range (errors name the file)."""
    from shared.idx import read_idx as read_idx_file

    image_path = files[f"{prefix}-images-idx3-ubyte.gz"]
    label_path = files[f"{prefix}-labels-idx1-ubyte.gz"]
    images = read_idx_file(image_path)  # (N, 28, 28) uint8
    labels = read_idx_file(label_path)  # (N,) uint8
    if images.dtype != np.uint8 or images.shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
        raise ValueError(
            f"{image_path}: expected uint8 images of shape (N, {IMAGE_SIDE}, {IMAGE_SIDE}), "
            f"got {images.dtype} {images.shape}"
        )
    if labels.dtype != np.uint8 or labels.ndim != 1 or len(labels) != len(images):
        raise ValueError(
            f"{label_path}: expected {len(images)} uint8 labels (one per image of "
            f"{image_path.name}), got {labels.dtype} {labels.shape}"
        )
    if labels.size and int(labels.max()) >= NUM_CLASSES:
        raise ValueError(f"{label_path}: label {int(labels.max())} outside 0..{NUM_CLASSES - 1}")
    x = torch.from_numpy(images.astype(np.float32) / PIXEL_MAX).unsqueeze(1)  # (N, 1, 28, 28)
    return x, torch.from_numpy(labels.astype(np.int64))


def _normalise_and_subset(
    split: Split,
    name: str,
    mean: list[float],
    std: list[float],
    n_train: int | None,
    subset_seed: int,
) -> Split:
    """Per-channel ``(x - mean) / std`` on both splits; then, if ``n_train`` is set, the first
    ``n_train`` of ``default_rng(subset_seed).permutation`` of the training set."""
    channels = split.x_train.shape[1]
    if len(mean) != channels or len(std) != channels:
        raise ValueError(f"data.mean/std need {channels} values for {name}, got {mean}, {std}")
    m = torch.tensor(mean).view(1, -1, 1, 1)
    s = torch.tensor(std).view(1, -1, 1, 1)
    split.x_train = (split.x_train - m) / s
    split.x_test = (split.x_test - m) / s
    if n_train is not None:
        order = torch.from_numpy(np.random.default_rng(subset_seed).permutation(len(split.y_train)))
        keep = order[:n_train]
        split.x_train, split.y_train = split.x_train[keep], split.y_train[keep]
    return split


def _missing(path: Path, what: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"{what} not found at {path}. Copy the data set there (the layout torchvision's "
        "downloaders leave; see papers/adamcb/data.py) or point data.root at the folder that "
        "holds it. Nothing is downloaded."
    )


def _open_maybe_gz(path: Path):
    if path.exists():
        return path.open("rb")
    gz = path.with_name(path.name + ".gz")
    if gz.exists():
        return gzip.open(gz, "rb")
    raise _missing(path, path.name)


def read_idx(path: Path, magic: int) -> np.ndarray:
    """Read an IDX file (the MNIST format): big-endian int32 header, then uint8 data."""
    with _open_maybe_gz(path) as f:
        raw = f.read()
    header = np.frombuffer(raw[:4], dtype=">i4")[0]
    if header != magic:
        raise ValueError(f"{path}: IDX magic {header}, expected {magic}")
    ndim = magic % 256
    dims = np.frombuffer(raw[4 : 4 + 4 * ndim], dtype=">i4").astype(int)
    return np.frombuffer(raw[4 + 4 * ndim :], dtype=np.uint8).reshape(dims)


def _read_idx_split(raw_dir: Path) -> Split:
    if not raw_dir.is_dir():
        raise _missing(raw_dir, "the IDX folder")

    def images(prefix: str) -> torch.Tensor:
        arr = read_idx(raw_dir / f"{prefix}-images-idx3-ubyte", IDX_IMAGES_MAGIC)
        return torch.tensor(arr / PIXEL_MAX, dtype=torch.float32).unsqueeze(1)  # (N, 1, H, W)

    def labels(prefix: str) -> torch.Tensor:
        arr = read_idx(raw_dir / f"{prefix}-labels-idx1-ubyte", IDX_LABELS_MAGIC)
        return torch.tensor(arr, dtype=torch.int64)

    return Split(images("train"), labels("train"), images("t10k"), labels("t10k"))


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """CIFAR-10's batches are pickles; allow only what they contain (numpy arrays)."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")
        return super().find_class(module, name)


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.exists():
        raise _missing(path, path.name)
    with path.open("rb") as f:
        batch = _ArrayOnlyUnpickler(f, encoding="bytes").load()
    data = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, *CIFAR_SHAPE)
    return data, np.asarray(batch[b"labels"], dtype=np.int64)


def _read_cifar10(folder: Path) -> Split:
    if not folder.is_dir():
        raise _missing(folder, "the cifar-10-batches-py folder")
    parts = [
        _read_cifar_batch(folder / f"data_batch_{i}") for i in range(1, CIFAR_TRAIN_BATCHES + 1)
    ]
    x_test, y_test = _read_cifar_batch(folder / "test_batch")
    x_train = np.concatenate([p[0] for p in parts])
    y_train = np.concatenate([p[1] for p in parts])

    def scale(x: np.ndarray) -> torch.Tensor:
        return torch.tensor(x / PIXEL_MAX, dtype=torch.float32)

    return Split(scale(x_train), torch.from_numpy(y_train), scale(x_test), torch.from_numpy(y_test))
