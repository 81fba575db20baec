"""qNBO's real rung: the Fashion-MNIST loader on the real files (skipped, naming the fetch
command, when the asset is absent), its errors on bad copies, the hyper-cleaning problem built
from it, the new metrics (corruption-detection AUC, accuracies), the real config's options and
the scaled upper step."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest
import torch

from papers.qnbo import claims
from papers.qnbo.data import (
    DTYPE,
    FASHION_FILES,
    FashionMNISTError,
    HyperCleaning,
    load_fashion_mnist,
    make_hyper_cleaning,
)
from papers.qnbo.train import real_preflight
from shared.config import ConfigError, compose
from shared.idx import IdxError
from tests.helpers import require_assets

TRAIN_IMAGES, TRAIN_LABELS = FASHION_FILES["train"]
TEST_IMAGES, TEST_LABELS = FASHION_FILES["test"]


@pytest.fixture(scope="module")
def files():
    return require_assets("fashion_mnist")["fashion_mnist"]  # verified by sha256


@pytest.fixture(scope="module")
def splits(files):
    return load_fashion_mnist(files)


# ---------------------------------------------------------------- the loader on the real files
def test_fashion_mnist_shapes_classes_and_pixels(splits):
    (train_x, train_y), (test_x, test_y) = splits["train"], splits["test"]
    assert train_x.shape == (60000, 784) and train_y.shape == (60000,)
    assert test_x.shape == (10000, 784) and test_y.shape == (10000,)
    assert train_x.dtype == np.uint8 and train_y.dtype == np.int64
    # ten balanced classes: 6000 per class in train, 1000 in test
    assert np.bincount(train_y).tolist() == [6000] * 10
    assert np.bincount(test_y).tolist() == [1000] * 10
    assert train_x.min() == 0 and train_x.max() == 255
    # the first training image is an ankle boot (class 9), the first test image too
    assert train_y[0] == 9 and test_y[0] == 9


def test_default_loader_reads_the_asset(files, splits):
    again = load_fashion_mnist()  # default: shared.assets.require("fashion_mnist")
    assert np.array_equal(again["test"][1], splits["test"][1])


# ---------------------------------------------------------------- bad copies name the file
def copy_all(files, tmp_path) -> dict:
    out = {}
    for name, path in files.items():
        if name in (TEST_IMAGES, TEST_LABELS, TRAIN_LABELS):
            out[name] = tmp_path / name
            shutil.copy(path, out[name])
        else:  # the 26 MB training images: keep the verified file
            out[name] = path
    return out


def test_truncated_labels_file_raises_naming_it(files, tmp_path):
    copy = copy_all(files, tmp_path)
    raw = gzip.decompress(copy[TEST_LABELS].read_bytes())
    copy[TEST_LABELS].write_bytes(gzip.compress(raw[:-10]))
    with pytest.raises(IdxError, match=TEST_LABELS):
        load_fashion_mnist(copy)


def test_truncated_gzip_raises_naming_it(files, tmp_path):
    copy = copy_all(files, tmp_path)
    data = copy[TEST_IMAGES].read_bytes()
    copy[TEST_IMAGES].write_bytes(data[: len(data) // 2])
    with pytest.raises(IdxError, match=TEST_IMAGES):
        load_fashion_mnist(copy)


def test_corrupted_header_raises_naming_it(files, tmp_path):
    copy = copy_all(files, tmp_path)
    raw = bytearray(gzip.decompress(copy[TRAIN_LABELS].read_bytes()))
    raw[0] = 7
    copy[TRAIN_LABELS].write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(IdxError, match=TRAIN_LABELS):
        load_fashion_mnist(copy)


def test_label_count_mismatch_and_bad_classes_raise_naming_the_file(files, tmp_path):
    copy = copy_all(files, tmp_path)
    copy[TEST_LABELS] = copy[TRAIN_LABELS]  # 60000 labels for 10000 images
    with pytest.raises(FashionMNISTError, match=TRAIN_LABELS):
        load_fashion_mnist(copy)
    copy = copy_all(files, tmp_path)
    raw = bytearray(gzip.decompress(copy[TEST_LABELS].read_bytes()))
    raw[8] = 10  # the first label becomes class 10
    copy[TEST_LABELS].write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(FashionMNISTError, match=TEST_LABELS):
        load_fashion_mnist(copy)


def test_images_in_place_of_labels_raise_naming_the_file(files, tmp_path):
    copy = copy_all(files, tmp_path)
    copy[TEST_IMAGES] = copy[TEST_LABELS]  # a 1-d array where images belong
    with pytest.raises(FashionMNISTError, match=TEST_LABELS):
        load_fashion_mnist(copy)


def test_missing_file_is_named(files):
    partial = {k: v for k, v in files.items() if k != TEST_LABELS}
    with pytest.raises(FashionMNISTError, match=TEST_LABELS):
        load_fashion_mnist(partial)


# ---------------------------------------------------------------- the hyper-cleaning problem
@pytest.fixture(scope="module")
def problem(files):
    return make_hyper_cleaning(0, 400, 150, 0.5, 1e-2, source="fashion_mnist", n_test=300)


def test_fashion_hyper_cleaning_shapes_scaling_and_corruption(problem):
    assert problem.a_train.shape == (400, 785) and problem.a_val.shape == (150, 785)
    assert problem.a_test.shape == (300, 785) and problem.n_classes == 10
    assert problem.a_train.dtype == DTYPE
    for a in (problem.a_train, problem.a_val, problem.a_test):
        assert float(a[:, :784].min()) >= 0.0 and float(a[:, :784].max()) <= 1.0
        assert torch.equal(a[:, 784], torch.ones(len(a), dtype=DTYPE))  # bias column
    assert int(problem.corrupted.sum()) == 200
    # a random class equals the true one a tenth of the time: most corrupted labels changed
    assert problem.y_train.min() >= 0 and problem.y_train.max() <= 9


def test_fashion_hyper_cleaning_is_seeded_and_splits_are_disjoint(problem, files):
    again = make_hyper_cleaning(0, 400, 150, 0.5, 1e-2, source="fashion_mnist", n_test=300)
    assert torch.equal(again.a_train, problem.a_train)
    assert torch.equal(again.y_train, problem.y_train)
    other = make_hyper_cleaning(1, 400, 150, 0.5, 1e-2, source="fashion_mnist", n_test=300)
    assert not torch.equal(other.a_train, problem.a_train)
    # no validation image is also a training image (they come from one permutation)
    train = {row.numpy().tobytes() for row in problem.a_train}
    assert sum(row.numpy().tobytes() in train for row in problem.a_val) <= 1  # duplicates exist


def test_too_many_examples_and_unknown_source_are_refused(files):
    with pytest.raises(ValueError, match="60000"):
        make_hyper_cleaning(0, 59500, 1000, 0.5, 1e-2, source="fashion_mnist")
    with pytest.raises(ValueError, match="source"):
        make_hyper_cleaning(0, 100, 50, 0.5, 1e-2, source="mnist")


def test_new_metrics_on_the_problem(problem):
    w = torch.zeros(785 * 10, dtype=DTYPE)
    assert problem.test_ce(w) == pytest.approx(np.log(10.0))
    assert 0.0 <= problem.validation_accuracy(w) <= 1.0


# ---------------------------------------------------------------- corruption-detection AUC
def toy_problem(corrupted: list[bool]) -> HyperCleaning:
    z = torch.zeros(len(corrupted), 2, dtype=DTYPE)
    y = torch.zeros(len(corrupted), dtype=torch.long)
    return HyperCleaning(z, y, z, y, z, y, torch.tensor(corrupted), 0.0, 2)


def test_corruption_auc_is_one_zero_and_half():
    data = toy_problem([True, True, False, False, False])
    perfect = torch.tensor([-2.0, -1.0, 0.5, 1.0, 3.0], dtype=DTYPE)
    assert data.corruption_auc(perfect) == 1.0
    assert data.corruption_auc(-perfect) == 0.0
    assert data.corruption_auc(torch.zeros(5, dtype=DTYPE)) == 0.5  # ties count half
    # one of six (corrupted, clean) pairs misordered
    assert data.corruption_auc(torch.tensor([-2.0, 0.7, 0.5, 1.0, 3.0], dtype=DTYPE)) == (
        pytest.approx(5 / 6)
    )
    assert np.isnan(toy_problem([False, False]).corruption_auc(torch.zeros(2, dtype=DTYPE)))


# ---------------------------------------------------------------- the real config
def test_real_config_and_preflight():
    cfg = compose("qnbo", "real")
    h = cfg.hyper_cleaning
    assert h.source == "fashion_mnist" and h.track_accuracy and list(cfg.toys) == ["hyper_cleaning"]
    assert h.alpha_per_example * h.n_train == pytest.approx(200.0)
    assert list(cfg.seeds) == claims.REAL_SEEDS
    assert real_preflight(cfg) == []
    # the data set's sizes and names are refused when the config is composed (Config.validate)
    with pytest.raises(ConfigError, match=r"^hyper_cleaning\.n_train=60000: .*60000"):
        compose("qnbo", "real", ["hyper_cleaning.n_train=60000"])
    with pytest.raises(ConfigError, match=r"^hyper_cleaning\.source='mnist'"):
        compose("qnbo", "real", ["hyper_cleaning.source=mnist"])
