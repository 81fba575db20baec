"""AdamCB on a user's own image set (issue 53): ``data.source=idx`` (a folder in the MNIST
layout) or ``npz``, normalised by the set's own statistics, read at start (a bad file stops
the run in one line naming it, before the run folder exists), recorded with its sha256."""

from __future__ import annotations

import numpy as np
import pytest

from papers.adamcb.data import load_own_data
from papers.adamcb.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, write_idx

SHRINK = (  # a few steps on the tiny set
    "epochs=1",
    "seeds=[10]",
    "methods=[adam,adamcb]",
    "sampler.batch_size=32",
    "data.n_eval_train=64",
    "data.n_eval_test=32",
    "loop.eval_every=4",
    "loop.checkpoint_every=4",
)


def write_set(folder, n_train=256, n_test=64, side=8):
    """Bright-left versus bright-right 8 x 8 images, two classes, in the MNIST layout."""
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = np.arange(n) % 2
        images = rng.integers(0, 100, (n, side, side))
        images[labels == 0, :, : side // 2] += 150
        images[labels == 1, :, side // 2 :] += 150
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images, 2051, compress=True)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels, 2049, compress=True)


def test_own_images_are_normalised_by_their_own_statistics(tmp_path):
    write_set(tmp_path)
    split = load_own_data("idx", str(tmp_path), 1 / 7)
    assert split.x_train.shape == (256, 1, 8, 8) and split.num_classes == 2
    assert float(split.x_train.mean()) == pytest.approx(0.0, abs=1e-5)
    assert float(split.x_train.std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)


def test_the_config_refuses_what_a_users_set_would_ignore(tmp_path):
    with pytest.raises(ConfigError, match=r"^data\.path=None: data\.source=idx needs"):
        compose("adamcb", "real", ["data.source=idx"])
    with pytest.raises(ConfigError, match=r"^data\.mean=\[0\.5\]: .* does not read it"):
        compose("adamcb", "real", ["data.source=npz", "data.path=s.npz", "data.mean=[0.5]"])
    with pytest.raises(ConfigError, match=r"^data\.path='s\.npz': .* does not read it"):
        compose("adamcb", "real", ["data.path=s.npz"])
    assert real_assets(compose("adamcb", "real")) == ("fashion_mnist",)
    assert real_assets(compose("adamcb", "real", ["data.source=npz", "data.path=s.npz"])) == ()


def test_a_bad_set_is_refused_at_start(tmp_path):
    np.savez(tmp_path / "bad.npz", x=np.zeros((100, 8, 8)), y=np.arange(99) % 2)
    overrides = ["data.source=npz", f"data.path={tmp_path / 'bad.npz'}", *SHRINK]
    message = refused_at_start("adamcb", "real", overrides, tmp_path / "run")
    assert message.startswith("papers.adamcb scale=real cannot start: data.path: ")
    assert f"{tmp_path / 'bad.npz'}[y]: (99,) labels for 100 images" in message
    write_set(tmp_path / "small", n_train=16)
    overrides = ["data.source=idx", f"data.path={tmp_path / 'small'}", *SHRINK]
    message = refused_at_start("adamcb", "real", overrides, tmp_path / "run")
    assert "16 training images, fewer than sampler.batch_size=32" in message


@pytest.mark.smoke
def test_one_run_on_a_users_idx_folder_needs_no_asset(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    write_set(tmp_path / "set")
    overrides = ["data.source=idx", f"data.path={tmp_path / 'set'}", *SHRINK]
    files = user_files(compose("adamcb", "real", overrides))
    assert len(files) == 4 and all(path.endswith(".gz") for path in files.values())
    record = execute(
        "adamcb",
        compose_dict("adamcb", "real", [*overrides, "runtime.progress=false"]),
        tmp_path / "run",
    )
    for method in ("adam", "adamcb"):
        assert np.isfinite(record["metrics"][method]["final_train_ce"]["mean"])
    assert "assets" not in record and record["claims"] == []
    recorded = {r["key"]: r["sha256"] for r in record["user_files"]}
    image_file = tmp_path / "set" / "train-images-idx3-ubyte.gz"
    assert recorded["data.path (train-images-idx3-ubyte.gz)"] == sha256_of(image_file)
