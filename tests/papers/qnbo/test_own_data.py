"""qNBO's data hyper-cleaning on a user's own image set (issue 53): ``hyper_cleaning.source``
idx (the MNIST layout) or npz, pixels on [0, 1] by the set's own range, sized against
n_train / n_val / n_test at start, recorded with the files' sha256, no shipped asset needed."""

from __future__ import annotations

import numpy as np
import pytest

from papers.qnbo.data import image_splits
from papers.qnbo.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start

SHRINK = (
    "seeds=[0]",
    "hyper_cleaning.n_train=120",
    "hyper_cleaning.n_val=40",
    "hyper_cleaning.n_test=null",
    "hyper_cleaning.budget.outer_steps=4",
    "hyper_cleaning.budget.report_at=2",
)


def write_npz(path, n=240, side=5):
    """Three classes of 5 x 5 float images, each a brighter band of rows."""
    rng = np.random.default_rng(0)
    y = np.arange(n) % 3
    x = rng.normal(size=(n, side, side))
    for c in range(3):
        x[y == c, c, :] += 3.0
    np.savez(path, x=x, y=y)


def own(path, *extra: str) -> list[str]:
    return ["hyper_cleaning.source=npz", f"hyper_cleaning.path={path}", *SHRINK, *extra]


def test_own_images_are_flat_pixels_on_the_unit_interval(tmp_path):
    write_npz(tmp_path / "s.npz")
    (train_x, train_y), (test_x, _), name = image_splits("npz", tmp_path / "s.npz", 0.25, 0)
    assert train_x.shape == (180, 25) and test_x.shape == (60, 25) and name.endswith("s.npz")
    assert train_x.min() == 0.0 and train_x.max() == pytest.approx(1.0)
    assert set(np.unique(train_y)) == {0, 1, 2}


def test_the_config_and_the_start_checks(tmp_path):
    with pytest.raises(ConfigError, match=r"^hyper_cleaning\.path=None: .* needs"):
        compose("qnbo", "real", ["hyper_cleaning.source=idx"])
    with pytest.raises(ConfigError, match=r"^hyper_cleaning\.split_seed=1: .* does not read it"):
        compose("qnbo", "real", ["hyper_cleaning.split_seed=1"])
    assert real_assets(compose("qnbo", "real")) == ("fashion_mnist",)
    assert real_assets(compose("qnbo", "real", own("s.npz"))) == ()
    write_npz(tmp_path / "s.npz", n=120)
    message = refused_at_start("qnbo", "real", own(tmp_path / "s.npz"), tmp_path / "run")
    assert "hyper_cleaning.n_train=120: + n_val (40) exceeds the 103 training images" in message
    np.savez(tmp_path / "bad.npz", x=np.zeros((10, 3, 3)), y=np.arange(9))
    message = refused_at_start("qnbo", "real", own(tmp_path / "bad.npz"), tmp_path / "run")
    assert message.startswith("papers.qnbo scale=real cannot start: hyper_cleaning.path: ")
    assert "the counts differ" in message


@pytest.mark.smoke
def test_one_run_on_a_users_npz_needs_no_asset(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    write_npz(tmp_path / "s.npz")
    overrides = own(tmp_path / "s.npz")
    assert user_files(compose("qnbo", "real", overrides)) == {
        "hyper_cleaning.path (s.npz)": str(tmp_path / "s.npz")
    }
    record = execute(
        "qnbo", compose_dict("qnbo", "real", [*overrides, "runtime.progress=false"]), tmp_path / "r"
    )
    assert np.isfinite(record["metrics"]["hyper_cleaning/qnbo"]["val_ce_at_report"]["mean"])
    assert "assets" not in record and record["claims"] == []
    assert record["user_files"][0]["sha256"] == sha256_of(tmp_path / "s.npz")
