"""Every paper has its files, README sections and configs; no paper imports another."""

from __future__ import annotations

import ast
import graphlib
import importlib

import pytest
from omegaconf import OmegaConf

from shared.config import CONFIG_DIR, PAPERS_DIR, SCALES, compose, compose_dict
from shared.entry import reproduce_only
from tests.cpu_units import CLAIM_CEILING_UNITS
from tests.helpers import PAPERS

PAPER_FILES = ("README.md", "__init__.py", "config.py", "train.py", "claims.py", "data.py")
README_SECTIONS = (
    "## Idea",
    "## Reading order",
    "## Symbols",
    "## Equations to code",
    "## Run",
    "## Claim and results",
    "## Deviations",
    "## Citation",
)
CLAIM_ATTRS = (
    "SCALE",
    "SEEDS",
    "CI_SEEDS",
    "METHODS",
    "CLAIMS",
    "PRIMARY",
    "TABLE_METRICS",
    "LABELS",
    "CPU_BUDGET_UNITS",
    "HELDOUT_SEEDS",
    "PLOT",
)


def test_there_are_papers():
    assert PAPERS, "no paper identity cards in configs/paper/"


@pytest.mark.parametrize("name", PAPER_FILES)
def test_paper_files(slug, name):
    assert (PAPERS_DIR / slug / name).is_file(), f"papers/{slug}/{name} is missing"


def test_paper_has_unit_tests(slug):
    tests = list((PAPERS_DIR.parent / "tests" / "papers" / slug).glob("test_*.py"))
    assert tests, f"tests/papers/{slug}/ has no unit tests"


def test_readme_sections(slug):
    text = (PAPERS_DIR / slug / "README.md").read_text()
    missing = [s for s in README_SECTIONS if s not in text]
    assert not missing, f"papers/{slug}/README.md lacks sections {missing}"
    assert "<!-- results:begin -->" in text and "<!-- results:end -->" in text


@pytest.mark.parametrize("scale", SCALES)
def test_scale_configs_exist_and_open_with_a_command(slug, scale):
    path = CONFIG_DIR / slug / f"{scale}.yaml"
    assert path.is_file(), f"configs/{slug}/{scale}.yaml is missing"
    head = path.read_text().lstrip()
    assert head.startswith("#") and "python -m papers." in head.split("\n\n")[0], (
        f"configs/{slug}/{scale}.yaml must open with a comment giving its command"
    )


def test_claims_module_declares_everything(slug):
    claims = importlib.import_module(f"papers.{slug}.claims")
    missing = [a for a in CLAIM_ATTRS if not hasattr(claims, a)]
    assert not missing, f"papers/{slug}/claims.py lacks {missing}"
    assert set(claims.CI_SEEDS) <= set(claims.SEEDS)
    assert len(claims.HELDOUT_SEEDS) == len(claims.SEEDS), "held-out set: as many seeds"
    assert not set(claims.HELDOUT_SEEDS) & set(claims.SEEDS), "held-out seeds must be unused"
    assert 0 < claims.CPU_BUDGET_UNITS <= CLAIM_CEILING_UNITS, (
        f"a CI claim budget is at most {CLAIM_CEILING_UNITS:.0f} units (tests/cpu_units.py)"
    )
    assert any(c.role == "claim" for c in claims.CLAIMS)
    optional = reproduce_only(claims)
    claim_names = {c.name for c in claims.CLAIMS if c.role == "claim"}
    assert set(optional) <= claim_names, "REPRODUCE_ONLY names claims of CLAIMS"
    assert all(isinstance(why, str) and why.strip() for why in optional.values())
    assert claim_names - set(optional), "CI gates at least one claim"
    if hasattr(claims, "CI_METHODS"):  # CI may leave out only what controls need
        assert set(claims.CI_METHODS) <= set(claims.METHODS)
        for claim in claims.CLAIMS:
            if claim.role == "claim" and claim.name not in optional:
                # results of setting grids are keyed "<setting>/<method>"
                needed = {m.rsplit("/", 1)[-1] for m in claim.comparator.methods_needed()}
                assert needed <= set(claims.CI_METHODS), claim.name
    if hasattr(claims, "CI_OVERRIDES"):  # CI's lighter protocol is a config that composes
        compose(slug, claims.SCALE, list(claims.CI_OVERRIDES))


@pytest.mark.parametrize("scale", ("smoke", "toy"))
def test_runnable_scales_have_no_missing_values(slug, scale):
    cfg = compose_dict(slug, scale)
    assert not OmegaConf.missing_keys(cfg), f"{slug}/{scale} leaves {OmegaConf.missing_keys(cfg)}"


def _imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_paper_imports_another(slug):
    others = {p.name for p in PAPERS_DIR.iterdir() if p.is_dir() and p.name != slug}
    for path in (PAPERS_DIR / slug).rglob("*.py"):
        for module in _imported_modules(path):
            parts = module.split(".")
            if parts[0] == "papers" and len(parts) > 1:
                assert parts[1] not in others, f"{path} imports papers.{parts[1]}"


def _own_imports(slug: str, path) -> set[str]:
    """The modules of ``papers.<slug>`` that ``path`` imports, at the top or inside a function
    (``from papers.x import method`` names the module ``papers.x.method``)."""
    package, own = f"papers.{slug}", set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == package:
                own.update(f"{package}.{alias.name}" for alias in node.names)
            elif node.module.startswith(package + "."):
                own.add(node.module)
    return own


def test_no_import_circle_inside_a_paper(slug):
    """Each paper reads one way (data -> model/env -> method -> train): no module imports,
    directly or through others, a module that imports it."""
    root = PAPERS_DIR / slug
    graph = {
        ".".join(("papers", slug, *path.relative_to(root).with_suffix("").parts)): _own_imports(
            slug, path
        )
        for path in root.rglob("*.py")
    }
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail(f"import circle in papers/{slug}: {' -> '.join(err.args[1])}")


def test_shared_imports_no_paper():
    for path in (PAPERS_DIR.parent / "shared").rglob("*.py"):
        for module in _imported_modules(path):
            assert not module.startswith("papers."), f"{path} imports {module}"


RESULT_FILES = ("toy.json", "heldout.json", "toy.png")
MAX_FIGURE_BYTES = 150_000  # README figures stay small in the repository


def test_results_files_are_committed(slug):
    results = PAPERS_DIR / slug / "results"
    missing = [n for n in RESULT_FILES if not (results / n).is_file()]
    assert not missing, (
        f"papers/{slug}/results lacks {missing}: run "
        f"python scripts/reproduce.py --paper {slug} --write (and --heldout --write)"
    )
    assert (results / "toy.png").stat().st_size <= MAX_FIGURE_BYTES
    readme = (PAPERS_DIR / slug / "README.md").read_text()
    assert "results/toy.png" in readme, f"papers/{slug}/README.md does not show its toy figure"
