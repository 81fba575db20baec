"""AdamCB's real rung: Fashion-MNIST from the pinned asset (shared/assets.py), its loader's
checks on bad files, the real config and its preflight, and the smoke overrides end to end.

Every test that reads the real files skips (naming the fetch command) when the asset is absent.
"""

from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest
import torch

from papers.adamcb import claims, train
from papers.adamcb.data import _read_asset_pair, load_asset_data
from shared.assets import asset
from shared.config import ConfigError, compose_dict, to_object
from shared.entry import execute
from shared.idx import IdxError
from shared.preflight import PreflightError
from tests.helpers import require_assets

FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
MEAN, STD = [0.2860], [0.3530]


@pytest.fixture(scope="module")
def files():
    return require_assets("fashion_mnist")["fashion_mnist"]


@pytest.fixture(scope="module")
def split(files):
    return load_asset_data("fashion_mnist", MEAN, STD)


def test_asset_files_match_the_pinned_checksums(files):
    assert sorted(files) == sorted(FILES)
    pinned = {f.name: f.sha256 for f in asset("fashion_mnist").files}
    for name in ("train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):  # the small ones
        assert hashlib.sha256(files[name].read_bytes()).hexdigest() == pinned[name]


def test_real_fashion_mnist_shapes_classes_and_normalisation(split):
    assert split.x_train.shape == (60000, 1, 28, 28) and split.x_train.dtype == torch.float32
    assert split.x_test.shape == (10000, 1, 28, 28)
    assert split.y_train.dtype == torch.int64 and split.num_classes == 10
    # Fashion-MNIST is balanced: 6000 training and 1000 test images per class
    assert torch.bincount(split.y_train).tolist() == [6000] * 10
    assert torch.bincount(split.y_test).tolist() == [1000] * 10
    # real.yaml's mean/std are the training pixels' own: standardised to ~(0, 1)
    assert abs(float(split.x_train.mean())) < 1e-3
    assert abs(float(split.x_train.std()) - 1.0) < 1e-3


def test_subset_is_seeded_and_fixed(files):
    a = load_asset_data("fashion_mnist", MEAN, STD, n_train=256, subset_seed=0)
    b = load_asset_data("fashion_mnist", MEAN, STD, n_train=256, subset_seed=0)
    assert a.x_train.shape == (256, 1, 28, 28) and torch.equal(a.y_train, b.y_train)
    assert a.x_test.shape == (10000, 1, 28, 28)  # the test set is never subset


def test_truncated_image_file_names_the_file(files, tmp_path):
    bad = dict(files)
    raw = files["t10k-images-idx3-ubyte.gz"].read_bytes()
    bad["t10k-images-idx3-ubyte.gz"] = tmp_path / "t10k-images-idx3-ubyte.gz"
    bad["t10k-images-idx3-ubyte.gz"].write_bytes(raw[: len(raw) // 2])
    with pytest.raises(IdxError, match="t10k-images-idx3-ubyte.gz"):
        _read_asset_pair(bad, "t10k")


def test_corrupt_gzip_names_the_file(files, tmp_path):
    bad = dict(files)
    raw = bytearray(files["t10k-labels-idx1-ubyte.gz"].read_bytes())
    raw[20:60] = b"\x00" * 40  # damage the deflate stream
    bad["t10k-labels-idx1-ubyte.gz"] = tmp_path / "t10k-labels-idx1-ubyte.gz"
    bad["t10k-labels-idx1-ubyte.gz"].write_bytes(bytes(raw))
    with pytest.raises(IdxError, match="t10k-labels-idx1-ubyte.gz"):
        _read_asset_pair(bad, "t10k")


def _idx_bytes(array: np.ndarray) -> bytes:
    """A whole IDX (uint8) file of ``array``, gzip-compressed."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, dtype=">u4").tobytes()
    return gzip.compress(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (np.full(10000, 12), "label 12 outside"),  # a label out of 0..9
        (np.zeros(9999), "expected 10000 uint8 labels"),  # one label short of the images
        (np.zeros((10000, 2)), "expected 10000 uint8 labels"),  # wrong rank
    ],
)
def test_inconsistent_labels_name_the_file(files, tmp_path, labels, message):
    bad = dict(files)
    bad["t10k-labels-idx1-ubyte.gz"] = tmp_path / "t10k-labels-idx1-ubyte.gz"
    bad["t10k-labels-idx1-ubyte.gz"].write_bytes(_idx_bytes(labels))
    with pytest.raises(ValueError, match=message) as err:
        _read_asset_pair(bad, "t10k")
    assert "t10k-labels-idx1-ubyte.gz" in str(err.value)


def test_wrong_image_shape_names_the_file(files, tmp_path):
    bad = dict(files)
    bad["t10k-images-idx3-ubyte.gz"] = tmp_path / "t10k-images-idx3-ubyte.gz"
    bad["t10k-images-idx3-ubyte.gz"].write_bytes(_idx_bytes(np.zeros((4, 32, 32))))
    with pytest.raises(ValueError, match=r"t10k-images-idx3-ubyte.gz: expected uint8 images"):
        _read_asset_pair(bad, "t10k")


def test_a_set_without_an_asset_is_refused():
    with pytest.raises(ValueError, match="no asset for data.name='mnist'"):
        load_asset_data("mnist", [0.1307], [0.3081])


def test_real_config_is_the_papers_setting_on_fashion_mnist():
    cfg = to_object(compose_dict("adamcb", "real"))
    assert cfg.scale == "real" and cfg.data.name == "fashion_mnist"
    assert cfg.data.source == "asset" and cfg.data.n_train is None
    assert cfg.model.hidden == [512, 256] and cfg.sampler.batch_size == 128
    assert (cfg.optim.lr, cfg.optim.beta1, cfg.optim.beta2) == (1e-3, 0.9, 0.999)
    assert cfg.sampler.gamma == 0.4 and cfg.sampler.alpha_p is None
    assert cfg.seeds == claims.REAL_SEEDS and cfg.methods == claims.REAL_METHODS
    assert train.real_preflight(cfg) == []


def test_real_preflight_refuses_a_folder_source(tmp_path):
    cfg = compose_dict("adamcb", "real", ["data.source=folder", f"data.root={tmp_path}"])
    assert any("data.source=asset" in p for p in train.real_preflight(to_object(cfg)))
    with pytest.raises(PreflightError, match="data.source=asset"):
        execute("adamcb", cfg, tmp_path / "run")


def test_paper_scale_can_read_the_asset_too():
    cfg = compose_dict("adamcb", "paper", ["data.name=fashion_mnist", "data.source=asset"])
    assert train.preflight(to_object(cfg)) == []  # no data.root needed
    unknown = compose_dict("adamcb", "paper", ["data.name=mnist", "data.source=asset"])
    assert "ships only" in train.preflight(to_object(unknown))[0]
    typo = compose_dict("adamcb", "paper", ["data.name=mnist", "data.source=web"])
    with pytest.raises(ConfigError, match="data.source='web': choose one of folder, asset"):
        to_object(typo)  # refused when the config is built, before preflight
