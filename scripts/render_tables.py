"""Regenerate the results tables in README.md and papers/<slug>/README.md from result files.

    python scripts/render_tables.py            # rewrite the tables in place
    python scripts/render_tables.py --check    # CI: fail if any README is out of date

Sources: ``configs/catalog.yaml`` (the 19 papers), ``papers/<slug>/results/toy.json`` and
``heldout.json`` (written by ``scripts/reproduce.py --write`` and ``--heldout --write``), the
real rung's ``real.json`` (``reproduce.py --scale real --write``) and the figures
``results/toy.png`` and ``results/real.png``. Tables sit between marker comments, so the prose
around them is never touched. ``--check`` also fails when a results file was made with package
versions that differ from the lock (``constraints.txt``): results must come from the locked
environment.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from shared.claims import DIAGNOSIS_MEANING, claims_summary, summary_tone  # noqa: E402
from shared.findings import all_findings, claim_status, paper_findings  # noqa: E402
from shared.tables import markdown_table, mean_std, verdict_table  # noqa: E402

CATALOG = REPO_ROOT / "configs" / "catalog.yaml"
LOCK = REPO_ROOT / "constraints.txt"
PAPERS_TABLE = ("<!-- papers-table:begin -->", "<!-- papers-table:end -->")
RESULTS_BLOCK = ("<!-- results:begin -->", "<!-- results:end -->")
REAL_BLOCK = ("<!-- real-results:begin -->", "<!-- real-results:end -->")
ASSETS_TABLE = ("<!-- assets-table:begin -->", "<!-- assets-table:end -->")
FINDINGS_TABLE = ("<!-- findings-table:begin -->", "<!-- findings-table:end -->")


def load_result(slug: str, name: str = "toy.json") -> dict | None:
    path = REPO_ROOT / "papers" / slug / "results" / name
    return json.loads(path.read_text()) if path.exists() else None


def _canonical(name: str) -> str:
    """PEP 503 name: case and runs of - _ . do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(lock: Path = LOCK) -> dict[str, str]:
    """``{canonical package name: version}`` pinned by the lock (``name==version`` lines)."""
    pins = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_canonical(name)] = version.strip()
    return pins


def version_mismatches(result: dict, pins: dict[str, str]) -> list[str]:
    """Packages a results file records at a version other than the lock's (local labels such
    as ``+cpu`` ignored; python and packages the lock does not pin are not compared)."""
    out = []
    for name, version in result.get("versions", {}).items():
        pinned = pins.get(_canonical(name))
        if pinned is not None and version.split("+", 1)[0] != pinned.split("+", 1)[0]:
            out.append(f"{name} {version} (lock: {pinned})")
    return out


_COMPARISON = re.compile(r"(<=|>=|<|>)\s*\S+")  # a claim statement's "op threshold"
_SYMBOL = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


def _key_number(result: dict) -> str:
    """The paper's first claim, its measured value and what it must reach: the key number."""
    claim = next(c for c in result["claims"] if c["role"] == "claim")
    comparison = _COMPARISON.findall(claim["statement"])
    need = f" (needs {_SYMBOL[comparison[-1]]} {claim['threshold']:.3g})" if comparison else ""
    return f"{claim['name']}: **{claim['measured']:.3g}**{need}"


def _status(result: dict, heldout: dict | None) -> str:
    """The claims' verdicts on the claim seeds, then on the held-out seeds, counted in the
    shared words (``3 PASS · held-out 2 PASS, 1 FAIL (fragile)``)."""
    status = claims_summary(result["claims"])
    if heldout is None:
        return status + " · held-out not run"
    fragile = " (fragile)" if summary_tone(heldout["claims"]) == "bad" else ""
    return f"{status} · held-out {claims_summary(heldout['claims'])}{fragile}"


def has_real_rung(slug: str) -> bool:
    return (REPO_ROOT / "configs" / slug / "real.yaml").is_file()


def real_status(slug: str) -> str:
    """The real-data column: the real claims' verdicts counted (:func:`claims_summary`), '-'
    without a real rung."""
    if not has_real_rung(slug):
        return "-"
    real = load_result(slug, "real.json")
    if real is None:
        return "not run yet"
    assets = ", ".join(a["name"] for a in real.get("assets", []))
    status = claim_status(real)
    return f"{status} ({assets})" if assets else status


def papers_table() -> str:
    """The top-level table: one short line per catalogued paper (the long text is in each
    paper's README and on the site)."""
    rows = []
    for paper in yaml.safe_load(CATALOG.read_text())["papers"]:
        slug = paper["slug"]
        result = load_result(slug)
        link = f"[`{slug}`](papers/{slug}/README.md)"
        if result is None:
            status, key = "no results file", "-"
        else:
            status = _status(result, load_result(slug, "heldout.json"))
            key = _key_number(result)
        rows.append([link, status, key, real_status(slug), paper["paper_key_number"]])
    header = ["paper", "claims (toy)", "key number (toy)", "real data", "paper's number"]
    return markdown_table(header, rows)


def metric_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """The results file's table metrics, and one row per method: its label, then mean ± std."""
    labels = result.get("labels", {})
    metrics = result["table_metrics"]
    rows = [
        [labels.get(m, m)] + [mean_std(result["metrics"][m].get(k)) for k in metrics]
        for m in result["metrics"]
    ]
    return metrics, rows


def results_block(result: dict, heldout: dict | None = None) -> str:
    """A paper's README block: per-method metrics, the claim verdicts on the claim seeds and on
    the held-out seeds, and the toy figure."""
    metrics, rows = metric_rows(result)
    held = {c["name"]: c for c in heldout["claims"]} if heldout else {}
    seeds_note = (
        f"held-out seeds {heldout['seeds']} (`{heldout['command']}`, "
        f"{heldout['wall_time_s']:.0f} s): **{claims_summary(heldout['claims'])}**"
        if heldout
        else "held-out seeds: not run yet (`python scripts/reproduce.py --heldout --write`)"
    )
    figure = REPO_ROOT / "papers" / result["paper"] / "results" / "toy.png"
    parts = [
        f"Toy scale, seeds {result['seeds']}, mean ± std over seeds "
        f"(`{result['command']}`, {result['wall_time_s']:.0f} s, "
        f"commit `{(result.get('git_commit') or 'unknown')[:12]}`); {seeds_note}.",
        markdown_table(["method", *metrics], rows),
        verdict_table(result["claims"], beside=held, beside_name="held-out"),
    ]
    if figure.is_file():
        parts.append(f"![toy result: {result['paper']}](results/toy.png)")
    return "\n\n".join(parts)


def real_block(result: dict) -> str:
    """A paper's README "Real data" block: the assets read (package, version, sha256), the
    per-method metrics, the real claims' verdicts and the figure, from ``results/real.json``."""
    metrics, rows = metric_rows(result)
    assets = markdown_table(
        ["asset", "package", "version", "files (sha256)", "licence"],
        [
            [
                a["name"],
                a["package"],
                a["version"],
                ", ".join(f"{name} (`{digest[:12]}`)" for name, digest in a["files"].items()),
                a["licence"],
            ]
            for a in result.get("assets", [])
        ],
    )
    cpu = result.get("cpu_time_s")
    cost = f"{result['wall_time_s']:.0f} s wall" + (f", {cpu:.0f} CPU s" if cpu else "")
    figure = REPO_ROOT / "papers" / result["paper"] / "results" / "real.png"
    parts = [
        f"Real data, seeds {result['seeds']}, mean ± std over seeds (`{result['command']}`, "
        f"{cost}, commit `{(result.get('git_commit') or 'unknown')[:12]}`): "
        f"**{claims_summary(result['claims'])}**.",
        assets,
        markdown_table(["method", *metrics], rows),
        verdict_table(result["claims"]),
    ]
    if figure.is_file():
        parts.append(f"![real data: {result['paper']}](results/real.png)")
    first = load_result(result["paper"], "real_first.json")
    if first:
        parts.append(first_protocol_block(first))
    diagnoses = diagnosis_table(result["paper"])
    if diagnoses:
        parts.append(diagnoses)
    return "\n\n".join(parts)


def first_protocol_block(first: dict) -> str:
    """The first real protocol's verdicts (``results/real_first.json``), kept beside the rerun
    at the paper's protocol: what changed is then read off two tables."""
    return "\n\n".join(
        [
            f"First protocol (`results/real_first.json`; seeds {first['seeds']}, commit "
            f"`{(first.get('git_commit') or 'unknown')[:12]}`, the config of that commit): "
            f"**{claims_summary(first['claims'])}**.",
            verdict_table(first["claims"]),
        ]
    )


def diagnosis_table(slug: str) -> str:
    """Why each failing real claim failed: the word, the reason with the experiment's numbers
    (``claims.REAL_DIAGNOSES`` and ``results/diagnosis.json``), and the official code's
    agreement; empty when the paper declares no diagnosis."""
    diagnoses = paper_findings(slug)["diagnoses"]
    if not diagnoses:
        return ""
    rows = [
        ["; ".join(d["claims"]), f"**{d['word']}**", d["reason"], d["official"] or "-"]
        for d in diagnoses
    ]
    commands = sorted({d["experiment"] for d in diagnoses})
    return "\n\n".join(
        [
            "Diagnosis of the failing real claims (`claims.REAL_DIAGNOSES`, numbers from "
            f"`results/diagnosis.json`, written by `{'`, `'.join(commands)}`):",
            markdown_table(["claims", "diagnosis", "why (measured)", "official code"], rows),
        ]
    )


def short_claim(name: str) -> str:
    """A claim's name without its parenthesised detail (the paper's README has it whole)."""
    return name.split(" (", 1)[0]


def findings_rows() -> list[dict]:
    """The findings, one dict per row: per paper with a real rung, the toy verdict, the real
    verdicts (first protocol, and the rerun at the paper's protocol where the first departed
    from it), then one row per diagnosis: its word, the reason with its number and the
    official code's agreement. The root README's table and the site's findings page."""
    rows = []
    for found in all_findings():
        slug = found["slug"]
        toy = load_result(slug)
        paper = {
            "slug": slug,
            "toy": _status(toy, load_result(slug, "heldout.json")) if toy else "-",
            "first": found["first_protocol"] or found["real"],
            "rerun": found["real"] if found["first_protocol"] else "(protocol unchanged)",
        }
        if not found["diagnoses"]:
            failing = "; ".join(map(short_claim, found["failing"]))
            why = f"{failing}: not diagnosed yet" if failing else "every real claim holds"
            rows.append({**paper, "word": "undiagnosed" if failing else "-", "why": why})
            rows[-1]["official"] = "-"
        for i, d in enumerate(found["diagnoses"]):
            cells = paper if i == 0 else dict.fromkeys(paper, "")
            why = f"{'; '.join(map(short_claim, d['claims']))}: {d['headline']}"
            official = d["official_headline"] or "-"
            rows.append({**cells, "word": d["word"], "why": why, "official": official})
    return rows


FINDINGS_COLUMNS = {
    "slug": "paper",
    "toy": "toy",
    "first": "real, first protocol",
    "rerun": "real, paper's protocol",
    "word": "diagnosis",
    "why": "failing claims: why (measured)",
    "official": "official code",
}


def findings_table() -> str:
    """:func:`findings_rows` as the root README's table, with the words' legend."""
    rows = []
    for row in findings_rows():
        cells = dict(row)
        if cells["slug"]:
            cells["slug"] = f"[`{row['slug']}`](papers/{row['slug']}/README.md)"
        if cells["word"] in DIAGNOSIS_MEANING:
            cells["word"] = f"**{row['word']}**"
        rows.append([cells[key] for key in FINDINGS_COLUMNS])
    legend = "; ".join(f"**{word}**: {meaning}" for word, meaning in DIAGNOSIS_MEANING.items())
    return markdown_table(list(FINDINGS_COLUMNS.values()), rows) + "\n\n" + legend + "."


def replace_between(text: str, markers: tuple[str, str], body: str, path: Path) -> str:
    begin, end = markers
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text, count=1)


def assets_table() -> str:
    """The README's table of real assets, from ``shared/assets.py:ASSETS``."""
    from shared.assets import ASSETS

    rows = [
        [
            f"`{a.name}`",
            f"{a.package} {a.version} ({a.source})",
            a.description,
            ", ".join(f"`{f.name}`" for f in a.files),
            f"{a.size / 1e6:.2f} MB",
            a.licence,
            ", ".join(a.papers),
        ]
        for a in ASSETS
    ]
    header = ["asset", "package (registry)", "what it is", "files", "size", "licence", "papers"]
    return markdown_table(header, rows)


def targets() -> list[tuple[Path, tuple[str, str], str]]:
    out = [
        (REPO_ROOT / "README.md", PAPERS_TABLE, papers_table()),
        (REPO_ROOT / "README.md", ASSETS_TABLE, assets_table()),
        (REPO_ROOT / "README.md", FINDINGS_TABLE, findings_table()),
    ]
    for readme in sorted((REPO_ROOT / "papers").glob("*/README.md")):
        result = load_result(readme.parent.name)
        body = (
            results_block(result, load_result(readme.parent.name, "heldout.json"))
            if result
            else "No results file yet: run "
            f"`python scripts/reproduce.py --paper {readme.parent.name} --write`."
        )
        out.append((readme, RESULTS_BLOCK, body))
        slug = readme.parent.name
        if has_real_rung(slug):
            real = load_result(slug, "real.json")
            body = (
                real_block(real)
                if real
                else "No real-data results yet: run `python scripts/fetch_assets.py`, then "
                f"`python scripts/reproduce.py --paper {slug} --scale real --write`."
            )
            out.append((readme, REAL_BLOCK, body))
    return out


def stale_environments() -> list[str]:
    """One line per results file whose recorded package versions differ from the lock."""
    pins = locked_versions()
    out = []
    for path in sorted((REPO_ROOT / "papers").glob("*/results/*.json")):
        mismatches = version_mismatches(json.loads(path.read_text()), pins)
        if mismatches:
            out.append(f"{path.relative_to(REPO_ROOT)}: {', '.join(mismatches)}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a README is out of date")
    args = parser.parse_args(argv)
    # Every block is rendered before any file is written: a missing marker leaves all as they were.
    texts: dict[Path, str] = {}
    for path, markers, body in targets():
        texts[path] = replace_between(texts.get(path) or path.read_text(), markers, body, path)
    stale = [p.relative_to(REPO_ROOT) for p, new in texts.items() if new != p.read_text()]
    if not args.check:
        for path in stale:
            (REPO_ROOT / path).write_text(texts[REPO_ROOT / path])
    if args.check and stale:
        print("out of date (run python scripts/render_tables.py):", *map(str, stale), sep="\n  ")
        return 1
    if args.check:
        unlocked = stale_environments()
        if unlocked:
            print(
                "results made outside the locked environment (constraints.txt); rerun "
                "python scripts/reproduce.py --paper <slug> --write (and --heldout --write):",
                *unlocked,
                sep="\n  ",
            )
            return 1
    print("updated: " + ", ".join(map(str, stale)) if stale else "README tables up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
