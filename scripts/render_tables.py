"""Regenerate the results tables in README.md and papers/<slug>/README.md from result files.

    python scripts/render_tables.py            # rewrite the tables in place
    python scripts/render_tables.py --check    # CI: fail if any README is out of date

Sources: ``configs/catalog.yaml`` (the 19 papers) and ``papers/<slug>/results/toy.json``
(written by ``scripts/reproduce.py --write``). Tables sit between marker comments, so the
prose around them is never touched.
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

from shared.tables import markdown_table, mean_std  # noqa: E402

CATALOG = REPO_ROOT / "configs" / "catalog.yaml"
PAPERS_TABLE = ("<!-- papers-table:begin -->", "<!-- papers-table:end -->")
RESULTS_BLOCK = ("<!-- results:begin -->", "<!-- results:end -->")


def load_result(slug: str) -> dict | None:
    path = REPO_ROOT / "papers" / slug / "results" / "toy.json"
    return json.loads(path.read_text()) if path.exists() else None


SUMMARY_CLAIMS = 3  # claim values shown in the top-level table (all are in the paper README)


def _claim_summary(result: dict) -> str:
    """``k/n claims pass`` and the first few claims' measured values, plus diagnostics."""
    claims = [c for c in result["claims"] if c["role"] == "claim"]
    passed = sum(c["passed"] for c in claims)
    shown = [f"{c['name']}: {c['measured']:.3g}" for c in claims[:SUMMARY_CLAIMS]]
    more = ["..."] if len(claims) > SUMMARY_CLAIMS else []
    diagnostics = [
        f"diagnostic, {c['name']}: {c['measured']:.3g}"
        for c in result["claims"]
        if c["role"] == "diagnostic"
    ]
    return f"{passed}/{len(claims)} claims pass ({'; '.join(shown + more)})" + "".join(
        f"; {d}" for d in diagnostics
    )


def papers_table() -> str:
    """The top-level table: one row per catalogued paper."""
    rows = []
    for paper in yaml.safe_load(CATALOG.read_text())["papers"]:
        slug = paper["slug"]
        result = load_result(slug)
        if (REPO_ROOT / "papers" / slug / "train.py").exists():
            if result is None:
                status = "implemented, no results file"
            else:
                status = "toy claim passes" if result["verdict"] == "pass" else "toy claim FAILS"
            link = f"[`{slug}`](papers/{slug}/README.md)"
        else:
            status, link = "planned", f"`{slug}`"
        rows.append(
            [
                link,
                paper["title"],
                status,
                paper["headline_claim"],
                _claim_summary(result) if result else "-",
                paper["paper_number"],
            ]
        )
    header = [
        "paper",
        "title",
        "status",
        "headline claim (toy)",
        "measured (toy)",
        "paper's number",
    ]
    return markdown_table(header, rows)


def results_block(result: dict) -> str:
    """A paper's README block: per-method metrics and the claim verdicts."""
    labels = result.get("labels", {})
    metrics = result["table_metrics"]
    rows = [
        [labels.get(m, m)] + [mean_std(result["metrics"][m].get(k)) for k in metrics]
        for m in result["metrics"]
    ]
    claims = [
        [
            c["name"],
            c["role"],
            c["statement"],
            f"{c['measured']:.4g}",
            ("holds" if c["holds"] else "does not hold")
            if c["role"] == "diagnostic"
            else ("PASS" if c["passed"] else "FAIL"),
        ]
        for c in result["claims"]
    ]
    return "\n\n".join(
        [
            f"Toy scale, seeds {result['seeds']}, mean ± std over seeds "
            f"(`{result['command']}`, {result['wall_time_s']:.0f} s, "
            f"commit `{(result.get('git_commit') or 'unknown')[:12]}`).",
            markdown_table(["method", *metrics], rows),
            markdown_table(["claim", "role", "statement", "measured", "verdict"], claims),
        ]
    )


def replace_between(text: str, markers: tuple[str, str], body: str, path: Path) -> str:
    begin, end = markers
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text, count=1)


def targets() -> list[tuple[Path, tuple[str, str], str]]:
    out = [(REPO_ROOT / "README.md", PAPERS_TABLE, papers_table())]
    for readme in sorted((REPO_ROOT / "papers").glob("*/README.md")):
        result = load_result(readme.parent.name)
        body = (
            results_block(result)
            if result
            else "No results file yet: run "
            f"`python scripts/reproduce.py --paper {readme.parent.name} --write`."
        )
        out.append((readme, RESULTS_BLOCK, body))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a README is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, markers, body in targets():
        text = path.read_text()
        new = replace_between(text, markers, body, path)
        if new != text:
            stale.append(path.relative_to(REPO_ROOT))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print("out of date (run python scripts/render_tables.py):", *map(str, stale), sep="\n  ")
        return 1
    print("updated: " + ", ".join(map(str, stale)) if stale else "README tables up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
