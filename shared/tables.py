"""Plain-text/markdown tables of results and claim verdicts (console, README, reproduce)."""

from __future__ import annotations

from typing import Any

from shared.claims import claim_label, claim_verdict


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-markdown table, column-aligned so it also reads well in a terminal."""
    header = [_escape(c) for c in header]
    rows = [[_escape(c) for c in row] for row in rows]
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _escape(cell: object) -> str:
    """A cell's text with pipes escaped, so it cannot split a markdown column."""
    return str(cell).replace("|", "\\|")


def results_table(
    summary: dict[str, dict[str, dict[str, Any]]],
    metrics: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> str:
    """Methods as rows, ``metric mean ± std`` as columns."""
    labels = labels or {}
    methods = list(summary)
    if metrics is None:
        metrics = list(next(iter(summary.values()))) if summary else []
    rows = [[labels.get(m, m)] + [mean_std(summary[m].get(k)) for k in metrics] for m in methods]
    return markdown_table(["method", *metrics], rows)


def mean_std(stats: dict[str, Any] | None) -> str:
    """``mean ± std`` of a summarised metric, or a dash where a method lacks it."""
    if stats is None or stats["mean"] is None:
        return "-"
    return f"{stats['mean']:.4f} ± {stats['std']:.4f}"


def verdict_table(
    claims: list[dict], beside: dict[str, dict] | None = None, beside_name: str = ""
) -> str:
    """The claims of a record (``result.json``'s ``claims``) with their verdicts in the shared
    words (:func:`shared.claims.claim_verdict`): the train command's console table,
    ``scripts/reproduce.py``, the claim tests and the README blocks. ``beside`` (claim name ->
    claim of another record: the held-out seeds, the committed file) adds its measured value
    and verdict as two more columns named ``beside_name``."""
    header = ["claim", "role", "statement", "measured", "verdict"]
    if beside is not None:
        header += [f"{beside_name} measured", f"{beside_name} verdict"]
    rows = []
    for claim in claims:
        row = [
            claim_label(claim["name"], claim["role"]),
            claim["role"],
            claim["statement"],
            f"{claim['measured']:.4g}",
            claim_verdict(claim),
        ]
        if beside is not None:
            other = beside.get(claim["name"])
            row += [f"{other['measured']:.4g}" if other else "-", claim_verdict(other)]
        rows.append(row)
    return markdown_table(header, rows)
