"""The real-asset table and its fetch: checksums refused when they differ, nothing half-written,
one clear line per missing or corrupt file (shared/assets.py, scripts/fetch_assets.py).

The fetch tests use a stand-in package built here (a wheel, an sdist and a .deb of a few
bytes), so they need no network; ``tests/test_real.py`` covers the real files."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from shared import assets
from shared.config import available_papers
from shared.idx import IdxError, read_idx
from tests.helpers import run_cli

PAYLOAD = {"data/table.csv": b"x,y\n1,2\n3,4\n", "data/notes.txt": b"kept\n"}


def _sha(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def _wheel(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zipped:
        for member, blob in PAYLOAD.items():
            zipped.writestr(f"pkg/{member}", blob)
        zipped.writestr("pkg/unrelated.py", b"import heavy_dependency\n")


def _tar_gz(path: Path, prefix: str = "pkg-1.0/") -> None:
    with tarfile.open(path, "w:gz") as tar:
        for member, blob in PAYLOAD.items():
            info = tarfile.TarInfo(prefix + member)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))


def _deb(path: Path) -> None:
    """A .deb: an ar archive of debian-binary, control.tar.xz and data.tar.xz."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for member, blob in PAYLOAD.items():
            info = tarfile.TarInfo(f"./usr/share/{member}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    members = [
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", b""),
        ("data.tar.xz", data.getvalue()),
    ]
    out = bytearray(b"!<arch>\n")
    for name, blob in members:
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(blob):<10}`\n"
        out += header.encode() + blob + (b"\n" if len(blob) % 2 else b"")
    path.write_bytes(bytes(out))


def _fake(tmp_path: Path, monkeypatch, kind: str = "whl", archive_sha: str | None = None):
    """Put a stand-in asset in the table whose 'download' copies a local archive."""
    source = tmp_path / "registry"
    source.mkdir()
    archive = source / {"whl": "pkg-1.0-py3-none-any.whl", "tgz": "pkg-1.0.tar.gz"}.get(
        kind, "pkg_1.0_all.deb"
    )
    {"whl": _wheel, "tgz": _tar_gz, "deb": _deb}[kind](archive)
    prefix = {"whl": "pkg/", "tgz": "pkg-1.0/", "deb": "./usr/share/"}[kind]
    entry = assets.Asset(
        name="standin",
        source="debian" if kind == "deb" else "pypi",
        package="pkg",
        version="1.0",
        archive=archive.name,
        archive_sha256=archive_sha or _sha(archive.read_bytes()),
        files=tuple(
            assets.AssetFile(prefix + member, _sha(blob), len(blob))
            for member, blob in PAYLOAD.items()
        ),
        licence="MIT",
        papers=("adamcb",),
        description="a stand-in",
    )
    monkeypatch.setattr(assets, "ASSETS", (*assets.ASSETS, entry))

    def download(asset, folder):
        target = folder / asset.archive
        target.write_bytes(archive.read_bytes())
        return target

    monkeypatch.setattr(assets, "_download", download)
    root = tmp_path / "cache"
    monkeypatch.setenv(assets.ENV_VARIABLE, str(root))
    return entry, root


# ------------------------------------------------------------------------------ the table
def test_table_is_well_formed():
    names = [a.name for a in assets.ASSETS]
    assert len(names) == len(set(names))
    for entry in assets.ASSETS:
        assert entry.source in ("pypi", "debian", "installed"), entry.name
        assert set(entry.papers) <= set(available_papers()), entry.name
        assert entry.licence and entry.description and entry.version
        if entry.source != "installed":
            assert re.fullmatch(r"[0-9a-f]{64}", entry.archive_sha256), entry.name
            assert entry.archive.startswith(entry.package.replace("-", "_")) or (
                entry.archive.startswith(entry.package)
            )
        for spec in entry.files:
            assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256), (entry.name, spec.member)
            assert spec.size > 0
        assert len({f.name for f in entry.everything}) == len(entry.everything), entry.name
        assert bool(entry.convert) == bool(entry.derived), entry.name
        for spec in entry.derived:
            assert spec.member.startswith(assets.DERIVED_FOLDER + "/"), (entry.name, spec.member)
            assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256) and spec.size > 0, spec.member


def test_unknown_asset_is_named():
    with pytest.raises(assets.AssetError, match="no_such_asset.*known: fashion_mnist"):
        assets.require("no_such_asset")


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(assets.ENV_VARIABLE, str(tmp_path / "here"))
    assert assets.cache_root() == tmp_path / "here"
    monkeypatch.delenv(assets.ENV_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert assets.cache_root() == tmp_path / "xdg" / "iclr25-repro" / "assets"


# ------------------------------------------------------------------------------ fetching
@pytest.mark.parametrize("kind", ["whl", "tgz", "deb"])
def test_fetch_unpacks_only_the_named_files_and_verifies_them(tmp_path, monkeypatch, kind):
    entry, root = _fake(tmp_path, monkeypatch, kind)
    assert (
        assets.missing(["standin"]) and "fetch_assets.py standin" in assets.missing(["standin"])[0]
    )
    assert assets.fetch("standin") == "fetched"
    paths = assets.require("standin")
    assert {p.name for p in (root / "standin" / "1.0").iterdir()} == {"table.csv", "notes.txt"}
    assert paths["table.csv"].read_bytes() == PAYLOAD["data/table.csv"]
    assert assets.fetch("standin") == "present"
    assert not [p for p in (root / "standin").iterdir() if p.name.startswith(".")]  # no scratch


def test_archive_with_another_checksum_is_refused_and_nothing_lands(tmp_path, monkeypatch):
    _fake(tmp_path, monkeypatch, archive_sha="0" * 64)
    with pytest.raises(assets.AssetError, match="sha256 .*pins 0000.*refused"):
        assets.fetch("standin")
    assert not (tmp_path / "cache" / "standin" / "1.0").exists()
    assert not [p for p in (tmp_path / "cache" / "standin").iterdir()]  # scratch removed


def test_member_with_another_checksum_is_refused(tmp_path, monkeypatch):
    entry, _ = _fake(tmp_path, monkeypatch)
    bad = dataclasses.replace(entry.files[0], sha256="f" * 64)
    monkeypatch.setattr(
        assets, "ASSETS", (*assets.ASSETS[:-1], dataclasses.replace(entry, files=(bad,)))
    )
    with pytest.raises(assets.AssetError, match="table.csv has sha256.*corrupt.*refused"):
        assets.fetch("standin")
    assert not (tmp_path / "cache" / "standin" / "1.0").exists()


def test_corrupt_or_truncated_file_names_it_and_the_fix(tmp_path, monkeypatch):
    _, root = _fake(tmp_path, monkeypatch)
    assets.fetch("standin")
    target = root / "standin" / "1.0" / "table.csv"
    blob = target.read_bytes()
    target.write_bytes(blob[:-1] + b"!")  # same size, other bytes
    with pytest.raises(assets.AssetError, match=r"table\.csv has sha256.*corrupt.*fetch_assets"):
        assets.require("standin")
    target.write_bytes(blob[:5])  # truncated
    with pytest.raises(assets.AssetError, match=r"table\.csv has 5 bytes, expected .*truncated"):
        assets.require("standin")
    target.unlink()
    with pytest.raises(assets.AssetError, match=r"table\.csv is missing.*fetch_assets.py standin"):
        assets.require("standin")
    assert assets.fetch("standin") == "fetched"  # a refetch repairs it
    assert target.read_bytes() == blob


def test_installed_asset_checks_the_package_version(monkeypatch):
    entry = assets.asset("diabetes")
    monkeypatch.setattr(
        assets,
        "ASSETS",
        tuple(dataclasses.replace(a, version="0.0") if a is entry else a for a in assets.ASSETS),
    )
    with pytest.raises(assets.AssetError, match="scikit-learn .* is installed, the table pins 0.0"):
        assets.require("diabetes")


def test_fetch_command_lists_the_table(tmp_path):
    proc = run_cli(["scripts/fetch_assets.py", "--list", "--cache", str(tmp_path)], cwd=Path.cwd())
    assert proc.returncode == 0, proc.stderr
    for entry in assets.ASSETS:
        assert entry.name in proc.stdout
    assert "missing" in proc.stdout and "present" in proc.stdout  # fetched vs installed assets


# ------------------------------------------------------------------------------ IDX reader
def _idx(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape
    )
    return gzip.compress(header + array.astype(np.uint8).tobytes())


def test_idx_round_trip_and_bad_files(tmp_path):
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / "a-idx3-ubyte.gz"
    path.write_bytes(_idx(array))
    np.testing.assert_array_equal(read_idx(path), array)
    path.write_bytes(_idx(array)[:-8])  # truncated gzip stream
    with pytest.raises(IdxError, match="a-idx3-ubyte.gz"):
        read_idx(path)
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x03" + (2).to_bytes(4, "big") * 3 + b"\x01"))
    with pytest.raises(IdxError, match="an array of shape"):
        read_idx(path)
    path.write_bytes(b"not an idx file at all")
    with pytest.raises(IdxError, match="no IDX header"):
        read_idx(path)


# ------------------------------------------------------------------------------ conversion
DERIVED = b"X,Y\n1,2\n3,4\n"  # what the stand-in conversion writes: table.csv upper-cased


def upper_case_table(files: Path, out: Path) -> None:
    """The stand-in conversion (named by ``Asset.convert``): one derived file."""
    out.mkdir()
    (out / "TABLE.csv").write_bytes((files / "table.csv").read_bytes().upper())


def _converting(entry: assets.Asset, monkeypatch, derived_sha: str) -> assets.Asset:
    converting = dataclasses.replace(
        entry,
        convert=f"{__name__}:upper_case_table",
        derived=(
            assets.AssetFile(f"{assets.DERIVED_FOLDER}/TABLE.csv", derived_sha, len(DERIVED)),
        ),
    )
    monkeypatch.setattr(assets, "ASSETS", (*assets.ASSETS[:-1], converting))
    return converting


def test_fetch_converts_once_and_pins_the_derived_files(tmp_path, monkeypatch):
    entry, root = _fake(tmp_path, monkeypatch)
    entry = _converting(entry, monkeypatch, _sha(DERIVED))
    assert assets.fetch("standin") == "fetched"
    paths = assets.require("standin")
    assert paths["TABLE.csv"] == assets.asset_dir(entry, root) / "transformers" / "TABLE.csv"
    assert paths["TABLE.csv"].read_bytes() == DERIVED
    assert assets.record(["standin"])[0]["files"]["TABLE.csv"] == _sha(DERIVED)
    paths["TABLE.csv"].unlink()  # a converted file gone: named, with the fetch command
    with pytest.raises(assets.AssetError, match="TABLE.csv is missing.*fetch_assets.py standin"):
        assets.require("standin")


def test_a_conversion_that_writes_other_files_is_refused_and_nothing_lands(tmp_path, monkeypatch):
    entry, root = _fake(tmp_path, monkeypatch)
    entry = _converting(entry, monkeypatch, "0" * 64)
    with pytest.raises(assets.AssetError, match="TABLE.csv has sha256.*conversion.*refused"):
        assets.fetch("standin")
    assert not assets.asset_dir(entry, root).exists()
