"""AdamCB's loaders on tiny stand-ins of the real files, the paper's nets, and paper scale."""

from __future__ import annotations

import json
import pickle
import socket

import numpy as np
import pytest
import torch

from papers.adamcb import train
from papers.adamcb.data import (
    IDX_IMAGES_MAGIC,
    IDX_LABELS_MAGIC,
    load_paper_data,
    make_toy_data,
    read_idx,
)
from papers.adamcb.model import build_model
from shared.config import compose_dict, to_object
from shared.entry import execute
from shared.preflight import PreflightError
from tests.helpers import run_cli, write_idx


def make_mnist_standin(root, folder="MNIST", n_train=80, n_test=20, compress=False):
    rng = np.random.default_rng(0)
    raw = root / folder / "raw"
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28))
        labels = np.arange(n) % 10
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images, IDX_IMAGES_MAGIC, compress)
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels, IDX_LABELS_MAGIC, compress)


def make_cifar_standin(root, per_batch=8):
    rng = np.random.default_rng(0)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"data": rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8),
            b"labels": list(range(per_batch)),
        }
        with (folder / name).open("wb") as f:
            pickle.dump(batch, f)


def test_toy_data_is_the_briefs_subset():
    split = make_toy_data(300, subset_seed=0)
    assert split.x_train.shape == (300, 64) and split.x_test.shape == (1497, 64)
    assert float(split.x_train.max()) == 1.0 and float(split.x_train.min()) == 0.0
    assert split.num_classes == 10
    again = make_toy_data(300, subset_seed=0)
    assert torch.equal(split.x_train, again.x_train)


@pytest.mark.parametrize("compress", [False, True])
def test_idx_reader_round_trip(tmp_path, compress):
    array = np.arange(2 * 3 * 4).reshape(2, 3, 4) % 256
    write_idx(tmp_path / "x-idx3-ubyte", array, IDX_IMAGES_MAGIC, compress)
    np.testing.assert_array_equal(read_idx(tmp_path / "x-idx3-ubyte", IDX_IMAGES_MAGIC), array)
    with pytest.raises(ValueError, match="magic"):
        read_idx(tmp_path / "x-idx3-ubyte", IDX_LABELS_MAGIC)


@pytest.mark.parametrize(
    ("name", "folder"), [("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")]
)
def test_idx_sets_load_and_normalise(tmp_path, name, folder):
    make_mnist_standin(tmp_path, folder)
    split = load_paper_data(name, str(tmp_path), [0.1307], [0.3081])
    assert split.x_train.shape == (80, 1, 28, 28) and split.y_test.shape == (20,)
    raw = read_idx(tmp_path / folder / "raw" / "train-images-idx3-ubyte", IDX_IMAGES_MAGIC)
    expected = (raw[0, 0, 0] / 255.0 - 0.1307) / 0.3081
    assert split.x_train[0, 0, 0, 0].item() == pytest.approx(expected, rel=1e-6)
    subset = load_paper_data(name, str(tmp_path), [0.1307], [0.3081], n_train=10)
    assert subset.x_train.shape[0] == 10


def test_cifar_loads_and_refuses_foreign_pickles(tmp_path):
    make_cifar_standin(tmp_path)
    mean, std = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]
    split = load_paper_data("cifar10", str(tmp_path), mean, std)
    assert split.x_train.shape == (40, 3, 32, 32) and split.x_test.shape == (8, 3, 32, 32)

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    with (tmp_path / "cifar-10-batches-py" / "test_batch").open("wb") as f:
        pickle.dump({b"data": Evil(), b"labels": []}, f)
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_paper_data("cifar10", str(tmp_path), mean, std)


def test_missing_data_says_what_to_put_where(tmp_path):
    with pytest.raises(FileNotFoundError, match="data.root"):
        load_paper_data("mnist", None, [0.1307], [0.3081])
    with pytest.raises(FileNotFoundError, match="Nothing is downloaded"):
        load_paper_data("mnist", str(tmp_path), [0.1307], [0.3081])
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py"):
        load_paper_data("cifar10", str(tmp_path), [0.5] * 3, [0.25] * 3)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("in_shape", "blocks", "kernel", "head", "n_params"),
    [
        # The official models.py nets, parameter counts computed by hand.
        ((1, 28, 28), [[32], [64]], 5, [128, 64], 832 + 18496 + 401536 + 8256 + 650),
        (
            (3, 32, 32),
            [[64], [128], [256]],
            5,
            [512, 256],
            4864 + 73856 + 295168 + 2097664 + 131328 + 2570,
        ),
    ],
)
def test_paper_convnets_match_the_official_shapes(in_shape, blocks, kernel, head, n_params):
    model = build_model("convnet", in_shape, 10, [], blocks, kernel, head)
    assert sum(p.numel() for p in model.parameters()) == n_params
    assert model(torch.zeros(2, *in_shape)).shape == (2, 10)


def test_paper_mlp_matches_the_official_shape():
    model = build_model("mlp", (1, 28, 28), 10, [512, 256], [], 3, [])
    assert sum(p.numel() for p in model.parameters()) == 784 * 512 + 512 + 512 * 256 + 256 + 2570


@pytest.mark.smoke
def test_paper_scale_runs_on_a_standin(tmp_path):
    make_mnist_standin(tmp_path / "data", n_train=64, n_test=16)
    cfg = compose_dict(
        "adamcb",
        "paper",
        [
            f"data.root={tmp_path / 'data'}",
            "methods=[adamcb,adambs]",
            "seeds=[10]",
            "epochs=1",
            "sampler.batch_size=16",
            "sampler.per_sample_chunk=5",
            "data.n_eval_train=32",
            "data.n_eval_test=8",
            "loop.eval_every=4",
            "loop.checkpoint_every=4",
            "runtime.progress=false",
        ],
    )
    record = execute("adamcb", cfg, tmp_path / "run")
    assert record["scale"] == "paper"
    assert np.isfinite(record["metrics"]["adamcb"]["final_train_ce"]["mean"])
    assert record["claims"] == []  # the toy claim is not judged on other scales


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.smoke
def test_two_processes_match_one(tmp_path):
    """AdamCB's step under 2 gloo processes (K split, norms gathered) equals 1 process."""
    # one seed: the step's arithmetic is what differs between 1 and 2 processes, not the seed
    common = [
        "scale=smoke",
        "runtime.progress=false",
        "methods=[adamcb,adambs_corrected]",
        "seeds=[0]",
    ]
    outputs = {}
    for nproc in (1, 2):
        out_root = tmp_path / f"p{nproc}"
        proc = run_cli(
            [
                "-m",
                "torch.distributed.run",
                f"--nproc_per_node={nproc}",
                f"--master_port={_free_port()}",
                "-m",
                "papers.adamcb.train",
                *common,
                f"out_root={out_root}",
            ],
            cwd=tmp_path,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (result,) = out_root.rglob("result.json")
        outputs[nproc] = json.loads(result.read_text())["metrics"]
    for method, metrics in outputs[1].items():
        for name, stats in metrics.items():
            assert outputs[2][method][name]["mean"] == pytest.approx(stats["mean"], rel=1e-4)


# ----------------------------------------------------------------------------------------------
# Preflight: a paper-scale run names missing data on one line before any work
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "folder", "extra"),
    [
        ("mnist", "MNIST/raw", []),
        ("fashion_mnist", "FashionMNIST/raw", []),
        (
            "cifar10",
            "cifar-10-batches-py",
            ["data.mean=[0.5,0.5,0.5]", "data.std=[0.25,0.25,0.25]"],
        ),
    ],
)
def test_preflight_names_the_missing_data(tmp_path, name, folder, extra):
    out_dir = tmp_path / "run"
    unset = compose_dict("adamcb", "paper", [f"data.name={name}", *extra])
    with pytest.raises(PreflightError, match=r"data\.root is not set") as error:
        execute("adamcb", unset, out_dir)
    assert "\n" not in str(error.value) and "Nothing is downloaded" in str(error.value)

    missing = compose_dict(
        "adamcb", "paper", [f"data.name={name}", f"data.root={tmp_path}", *extra]
    )
    with pytest.raises(PreflightError) as error:
        execute("adamcb", missing, out_dir)
    assert str(tmp_path / folder) in str(error.value)
    assert not out_dir.exists()

    (tmp_path / folder).mkdir(parents=True)
    assert train.preflight(to_object(missing)) == []


def test_preflight_needs_nothing_for_the_bundled_digits():
    assert train.preflight(to_object(compose_dict("adamcb", "paper", ["data.name=digits"]))) == []
