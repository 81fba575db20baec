"""PPI-ATE on a user's own experiment (issue 53): a CSV named in ``settings.own`` goes through
the same split study as the shipped experiments, checked column by column at start (a bad file
stops the run in one line naming the file and the column, before the run folder exists), and
the run records the file's sha256 instead of an asset."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from papers.ppi_ate.config import is_off
from papers.ppi_ate.data import difference_in_means, load_experiment_csv
from papers.ppi_ate.train import real_assets, user_files
from shared import assets
from shared.config import REAL_SCALE, ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start

SHIPPED_OFF = ["settings.politicians=null", "settings.hiv=null", "settings.lalonde=null"]


def write_trial(path, n: int = 400, seed: int = 0) -> pd.DataFrame:
    """A randomised experiment: Y = 1 + x1 + (1 + x2) T + noise, T ~ Bernoulli(1/2)."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.uniform(-1, 1, size=n)
    t = rng.integers(0, 2, size=n)
    y = 1.0 + x1 + (1.0 + x2) * t + 0.5 * rng.normal(size=n)
    frame = pd.DataFrame({"arm": t, "y": y, "x1": x1, "x2": x2, "note": "ok"})
    frame.to_csv(path, index=False)
    return frame


def own(path, *extra: str) -> list[str]:
    return [
        *SHIPPED_OFF,
        f"settings.own.path={path}",
        "settings.own.treatment=arm",
        "settings.own.outcome=y",
        "settings.own.covariates=[x1,x2]",
        *extra,
    ]


def test_the_loader_reads_the_named_columns(tmp_path):
    frame = write_trial(tmp_path / "trial.csv")
    data = load_experiment_csv(tmp_path / "trial.csv", "arm", "y", ["x1", "x2"])
    assert data.name == "trial.csv" and data.columns == ("x1", "x2") and data.external is None
    np.testing.assert_array_equal(data.experiment.x, frame[["x1", "x2"]].to_numpy())
    np.testing.assert_array_equal(data.experiment.a, frame["arm"].to_numpy())
    assert data.reference == difference_in_means(frame["arm"].to_numpy(), frame["y"].to_numpy())


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda f: f.drop(columns="x2"), r"missing column\(s\) \['x2'\]"),
        (lambda f: f.assign(x1=f.x1.astype(object).where(f.index != 3, "ten")), "'x1' is not nu"),
        (lambda f: f.assign(y=f.y.where(f.index % 50 != 0)), r"in column\(s\) 'y' \(8\)"),
        (lambda f: f.assign(arm=f.arm * 2), "treatment column 'arm' is not binary"),
        (lambda f: f.assign(arm=1), "treatment column 'arm' holds one arm only"),
    ],
    ids=["missing column", "text value", "gaps", "non-binary treatment", "one arm"],
)
def test_a_bad_file_is_refused_at_start_naming_file_and_column(tmp_path, spoil, message):
    path = tmp_path / "trial.csv"
    spoil(write_trial(path)).to_csv(path, index=False)
    refusal = refused_at_start("ppi_ate", REAL_SCALE, own(path), tmp_path / "run")
    assert refusal.startswith("papers.ppi_ate scale=real cannot start: settings.own.path: ")
    assert str(path) in refusal
    assert re.search(message, refusal), refusal


def test_a_file_that_is_not_utf8_or_absent_is_refused(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("arm,y,x1,x2\n1,2,3,caf\xe9\n".encode("latin-1"))
    refusal = refused_at_start("ppi_ate", REAL_SCALE, own(path), tmp_path / "run")
    assert f"{path}: cannot read it as a CSV (UnicodeDecodeError)" in refusal
    refusal = refused_at_start("ppi_ate", REAL_SCALE, own(tmp_path / "none.csv"), tmp_path / "run")
    assert f"{tmp_path / 'none.csv'}: no such file" in refusal


def test_too_few_rows_for_d1_and_d2_are_refused_at_start(tmp_path):
    path = tmp_path / "small.csv"
    write_trial(path, n=120)
    refusal = refused_at_start("ppi_ate", REAL_SCALE, own(path), tmp_path / "run")
    assert "settings.own.n_d1=300: must lie in [1, 116]: small.csv has 120 usable units" in refusal


def test_the_config_names_the_columns_and_refuses_what_it_would_ignore(tmp_path):
    cfg = compose("ppi_ate", REAL_SCALE)
    assert is_off(cfg.settings["own"]) and real_assets(cfg) == ("causaldata",)
    with pytest.raises(ConfigError, match=r"^settings\.own\.treatment=None: .*treatment"):
        compose("ppi_ate", REAL_SCALE, [*SHIPPED_OFF, f"settings.own.path={tmp_path}/t.csv"])
    with pytest.raises(ConfigError, match=r"^settings\.own\.covariates=.*each column plays one"):
        compose("ppi_ate", REAL_SCALE, own("t.csv", "settings.own.covariates=[x1,y]"))
    with pytest.raises(ConfigError, match=r"^settings\.own\.hidden_covariate='age': .*x1, x2"):
        compose("ppi_ate", REAL_SCALE, own("t.csv", "settings.own.hidden_covariate=age"))
    # the slot without its file runs nothing, so its keys are refused, not ignored
    with pytest.raises(ConfigError, match=r"^settings\.own\.n_d1=50: .* does not read it"):
        compose("ppi_ate", REAL_SCALE, ["settings.own.n_d1=50"])
    # and a shipped experiment's setting reads no CSV columns
    with pytest.raises(ConfigError, match=r"^settings\.hiv\.outcome='y': .* does not read it"):
        compose("ppi_ate", REAL_SCALE, ["settings.hiv.outcome=y"])
    with_file = compose("ppi_ate", REAL_SCALE, own("t.csv"))
    assert real_assets(with_file) == () and user_files(with_file) == {"settings.own.path": "t.csv"}


def test_one_run_on_a_users_file_needs_no_asset_and_records_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))  # causaldata absent
    path = tmp_path / "trial.csv"
    write_trial(path)
    overrides = own(path, "settings.own.hidden_covariate=x2", "replications=4")
    cfg = compose_dict("ppi_ate", REAL_SCALE, [*overrides, "runtime.progress=false"])
    record = execute("ppi_ate", cfg, tmp_path / "run")
    metrics = record["metrics"]
    for method in ("aipw", "ppi", "d2_only"):
        assert metrics[f"own/{method}"]["half_width"]["mean"] > 0
    assert "assets" not in record and record["claims"] == []  # no shipped data, no claim
    [recorded] = record["user_files"]
    assert recorded["key"] == "settings.own.path" and recorded["path"] == str(path.resolve())
    assert recorded["sha256"] == assets.sha256_of(path)
    assert record["labels"]["own/ppi"] == "trial.csv: PPI (D1 + D2)"
    assert (tmp_path / "run" / "intervals.png").is_file()
