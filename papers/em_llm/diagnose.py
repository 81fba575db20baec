"""Issue 51: why the real rung's two conductance claims failed (README "Real data: diagnosis").

The first real protocol scored a segmentation by the **mean** over its events of
phi(S) = cut(S) / min(vol(S), vol(S-bar)) (intra-event volume, the official form), and the
surprise events (S, SM) lost to evenly spaced blocks (126.8 and 129.0 against 94.5). With
vol(S) the intra-event volume, phi(S) ~ (T - n) / n for an event of n tokens on *any* graph, so
a mean over events grows with mean(1/n) and variable sizes lose to equal ones wherever the
boundaries are. The paper's conductance (Eq. 4) is the **minimum** over the events, as the
official code reads it (``similarity.py`` L53, the refinement's ``segmentation.py`` L14). The
experiment, in three parts:

1. *Structureless graphs*: on a random symmetric similarity (every pair equally similar on
   average) variable event sizes against as many equal blocks, under both aggregations.
2. *The real LM's graphs* (SmolLM2-135M, ``configs/em_llm/real.yaml``, the docutils test
   documents the real rung segments): S, SM and fixed under both aggregations; the same sizes
   on the document's graph with its tokens shuffled (structure removed, degrees kept); and a
   **size-matched null**: S's (SM's) event sizes in random order over the same tokens, so a
   comparison with it measures where the boundaries are, not how large the events are.
3. *The official code* (optional, ``--official DIR``: an em-llm/EM-LLM-model checkout
   outside this repository): its ``conductance`` on the same graphs and partitions.

    python -m papers.em_llm.diagnose [--write] [--documents N] [--permutations K]
        [--official /tmp/official-em_llm]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from papers.em_llm.method import evenly_spaced, event_conductances
from papers.em_llm.model import attach_memory_attention
from papers.em_llm.real import segmentation_partitions
from shared import pretrained
from shared.config import compose
from shared.diagnosis import cpu_seconds, write_evidence

SLUG = "em_llm"
# the first real protocol's aggregation, and the paper's (Eq. 4; official similarity.py L53)
AGGREGATIONS = ("mean", "min")
PARTITIONS = ("S", "SM", "fixed")
# the partitions whose sizes the size-matched null permutes
NULL_OF = ("S", "SM")
OFFICIAL_SIMILARITY = Path("em_llm/attention/similarity_refinement/similarity.py")


def aggregate(phis: Tensor, how: str) -> float:
    """A segmentation's conductance from its events' phi: ``mean`` (first protocol) or
    ``min`` (paper Eq. 4)."""
    if how == "mean":
        return float(phis.mean())
    if how == "min":
        return float(phis.min())
    raise ValueError(f"unknown aggregation {how!r}; choose one of {AGGREGATIONS}")


def event_sizes(starts: list[int], n: int) -> list[int]:
    """Sizes of the contiguous events of [0, n) that start at 0 and at ``starts``."""
    edges = [0, *sorted(starts), n]
    return [hi - lo for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def starts_from_sizes(sizes: list[int]) -> list[int]:
    """Event starts (after the first at 0) of consecutive events of the given sizes."""
    return [int(s) for s in np.cumsum(sizes)[:-1]]


def size_matched_starts(
    starts: list[int], n: int, permutations: int, generator: torch.Generator
) -> list[list[int]]:
    """The size-matched null: ``permutations`` segmentations of [0, n) whose events have
    exactly the sizes of ``starts``' events, in uniformly random order."""
    sizes = torch.tensor(event_sizes(starts, n))
    return [
        starts_from_sizes(sizes[torch.randperm(len(sizes), generator=generator)].tolist())
        for _ in range(permutations)
    ]


def structureless_graph(n: int, generator: torch.Generator) -> Tensor:
    """A_ij = 1 + u_ij with u symmetric and uniform in [-1/2, 1/2]: a random similarity with
    no community structure (every pair equally similar on average; all entries positive, as
    the real key graphs' are on average)."""
    noise = torch.rand(n, n, generator=generator, dtype=torch.float64) - 0.5
    return 1.0 + (noise + noise.T) / 2


def shuffled_graph(adjacency: Tensor, generator: torch.Generator) -> Tensor:
    """The graph with its tokens in random order: the same degrees and similarity values, no
    sequential structure left for contiguous events to find."""
    order = torch.randperm(adjacency.shape[0], generator=generator)
    return adjacency[order][:, order]


def scores(adjacency: Tensor, starts: list[int]) -> dict[str, float]:
    phis = event_conductances(adjacency, starts)
    return {how: aggregate(phis, how) for how in AGGREGATIONS}


def structureless_experiment(sizes: list[int], generator: torch.Generator) -> dict:
    """Part 1: events of the given (variable) sizes against as many evenly spaced blocks on one
    structureless graph of their total length. On the constant graph phi(S) = (T - n) / n
    (for n <= T / sqrt 2), so the mean over events is T mean(1/n) - 1 against T / mean(n) - 1
    for equal blocks (Jensen: never smaller; ``mean_predicted``); the minimum is
    T / max(n) - 1, which favours the *largest* event instead."""
    n = int(sum(sizes))
    graph = structureless_graph(n, generator)
    inverse = float(np.mean([1 / s for s in sizes]))
    return {
        "variable": scores(graph, starts_from_sizes(sizes)),
        "equal": scores(graph, evenly_spaced(0, n, len(sizes) - 1)),
        "mean_predicted": {"variable": n * inverse - 1, "equal": len(sizes) - 1},
    }


def load_official(root: Path):
    """The official ``similarity`` module of an em-llm/EM-LLM-model checkout (run from where
    it lies, outside this repository; nothing of it is copied here)."""
    path = root / OFFICIAL_SIMILARITY
    if not path.is_file():
        raise FileNotFoundError(f"--official {root}: no {OFFICIAL_SIMILARITY} there")
    spec = importlib.util.spec_from_file_location("official_em_llm_similarity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def official_scores(official, adjacency: Tensor, starts: list[int]) -> dict[str, float]:
    """The official ``conductance(A, communities)`` (min, max, mean, per community) of the
    same partition, and its largest difference from our per-event phi."""
    n = adjacency.shape[0]
    edges = [0, *sorted(starts), n]
    communities = [list(range(lo, hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    low, _, mean, each = official.conductance(adjacency, communities)
    ours = event_conductances(adjacency, starts)
    return {
        "min": float(low),
        "mean": float(mean),
        "max_relative_difference": float(((each - ours).abs() / ours.abs()).max()),
    }


def document_experiment(
    adjacency: Tensor,
    partitions: dict[str, list[int]],
    permutations: int,
    generator: torch.Generator,
    official=None,
) -> dict:
    """Parts 1-3 on one document: its S sizes against equal blocks on a structureless graph of
    its length; every partition under both aggregations on its graph; the same sizes on the
    token-shuffled graph; the size-matched null of S and SM (its mean and
    the share of its draws at or below the partition: a one-sided p-value)."""
    n = adjacency.shape[0]
    row: dict = {
        "tokens": n,
        "events": len(partitions["S"]) + 1,
        "S_sizes": [min(event_sizes(partitions["S"], n)), max(event_sizes(partitions["S"], n))],
        **{name: scores(adjacency, starts) for name, starts in partitions.items()},
    }
    row["structureless"] = structureless_experiment(event_sizes(partitions["S"], n), generator)
    shuffled = shuffled_graph(adjacency, generator)
    row["shuffled"] = {name: scores(shuffled, partitions[name]) for name in ("S", "fixed")}
    for name in NULL_OF:
        draws = [
            scores(adjacency, starts)
            for starts in size_matched_starts(partitions[name], n, permutations, generator)
        ]
        row[f"null_{name}"] = {
            how: {
                "mean": float(np.mean([d[how] for d in draws])),
                "p_at_or_below": float(np.mean([d[how] <= row[name][how] for d in draws])),
            }
            for how in AGGREGATIONS
        }
    if official is not None:
        row["official"] = {
            name: official_scores(official, adjacency, starts)
            for name, starts in partitions.items()
        }
    return row


def summarise(rows: list[dict]) -> dict[str, float]:
    """The flat numbers the diagnoses quote: means over documents, as the real rung's
    metrics (``real.real_metrics``); ratios are ratios of those means, as the measured
    126.8 / 94.5."""

    def over(get) -> float:
        return float(np.mean([get(r) for r in rows]))

    numbers: dict[str, float] = {"documents": len(rows)}
    for how in AGGREGATIONS:
        for name in PARTITIONS:
            numbers[f"{how}_{name}"] = over(lambda r, n=name, h=how: r[n][h])
        for name in ("S", "SM"):
            numbers[f"{how}_margin_{name}"] = numbers[f"{how}_fixed"] - numbers[f"{how}_{name}"]
        numbers[f"{how}_ratio_S_fixed"] = numbers[f"{how}_S"] / numbers[f"{how}_fixed"]
        for graph, a, b in (("shuffled", "S", "fixed"), ("structureless", "variable", "equal")):
            numbers[f"{how}_{graph}_ratio_S_fixed"] = over(
                lambda r, g=graph, x=a, h=how: r[g][x][h]
            ) / over(lambda r, g=graph, x=b, h=how: r[g][x][h])
        for name in NULL_OF:
            null = f"null_{name}"
            numbers[f"{how}_{null}"] = over(lambda r, n=null, h=how: r[n][h]["mean"])
            numbers[f"{how}_{null}_margin"] = numbers[f"{how}_{null}"] - numbers[f"{how}_{name}"]
            numbers[f"{how}_{null}_p"] = over(lambda r, n=null, h=how: r[n][h]["p_at_or_below"])
    numbers["mean_predicted_ratio_S_fixed"] = over(
        lambda r: r["structureless"]["mean_predicted"]["variable"]
    ) / over(lambda r: r["structureless"]["mean_predicted"]["equal"])
    if "official" in rows[0]:
        for how in AGGREGATIONS:
            for name in PARTITIONS:
                numbers[f"official_{how}_{name}"] = over(
                    lambda r, n=name, h=how: r["official"][n][h]
                )
        numbers["official_max_relative_difference"] = max(
            r["official"][n]["max_relative_difference"] for r in rows for n in PARTITIONS
        )
    return numbers


def print_table(numbers: dict[str, float]) -> None:
    print(f"{'conductance':<34}{'mean over events':>18}{'min (paper Eq. 4)':>20}")
    rows = [
        ("S (surprise events)", "S"),
        ("SM (refined)", "SM"),
        ("fixed (evenly spaced)", "fixed"),
        ("size-matched null of S", "null_S"),
        ("size-matched null of SM", "null_SM"),
        ("claim margin fixed - S", "margin_S"),
        ("claim margin fixed - SM", "margin_SM"),
        ("null - S (> 0: S beats its null)", "null_S_margin"),
        ("null - SM", "null_SM_margin"),
        ("share of null draws <= S", "null_S_p"),
        ("share of null draws <= SM", "null_SM_p"),
        ("S / fixed", "ratio_S_fixed"),
        ("S / fixed, token-shuffled graph", "shuffled_ratio_S_fixed"),
        ("S / fixed sizes, structureless graph", "structureless_ratio_S_fixed"),
    ]
    for label, key in rows:
        print(f"{label:<34}{numbers[f'mean_{key}']:>18.4g}{numbers[f'min_{key}']:>20.4g}")
    print(
        "mean over events on the constant graph, T mean(1/n) - 1 against T / mean(n) - 1: "
        f"ratio {numbers['mean_predicted_ratio_S_fixed']:.3f}"
    )
    if "official_max_relative_difference" in numbers:
        print(
            "official conductance(): "
            + ", ".join(
                f"{how} {name} {numbers[f'official_{how}_{name}']:.4g}"
                for how in AGGREGATIONS
                for name in PARTITIONS
            )
            + "; largest relative difference of one event's phi from ours: "
            + f"{numbers['official_max_relative_difference']:.1e}"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    parser.add_argument(
        "--documents",
        type=int,
        default=-1,
        help="test documents to segment (-1: all 6, as real.yaml's segmentation_documents)",
    )
    parser.add_argument(
        "--permutations",
        type=int,
        default=200,
        help="size-matched null draws per document and partition (share resolution 0.005)",
    )
    parser.add_argument("--seed", type=int, default=0, help="draws of the nulls and graphs")
    parser.add_argument(
        "--official",
        type=Path,
        default=None,
        help="an em-llm/EM-LLM-model checkout (outside this repo) to score the same graphs",
    )
    args = parser.parse_args(argv)
    if args.permutations < 1:
        parser.error(f"--permutations must be >= 1, got {args.permutations}")
    if args.documents == 0 or args.documents < -1:
        parser.error(f"--documents must be -1 (all) or >= 1, got {args.documents}")
    return args


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())
    cfg = compose(SLUG, "real")
    torch.set_num_threads(cfg.runtime.num_threads)
    generator = torch.Generator().manual_seed(args.seed)
    official = None if args.official is None else load_official(args.official)
    model, tokenizer = pretrained.load_model()
    lm = attach_memory_attention(model.requires_grad_(False))
    texts = list(pretrained.corpus("test").values())
    texts = texts if args.documents < 0 else texts[: args.documents]
    rows = []
    for index, text in enumerate(texts):
        graph = segmentation_partitions(lm, tokenizer, text, cfg)
        if graph is None:
            print(f"document {index}: fewer than two events, skipped")
            continue
        row = document_experiment(*graph, args.permutations, generator, official)
        rows.append(row)
        print(
            f"document {index}: {row['tokens']} tokens, {row['events']} events; "
            + "  ".join(f"{n} {row[n]['mean']:.1f} / {row[n]['min']:.2f}" for n in PARTITIONS),
            flush=True,
        )
    if not rows:
        raise ValueError("no test document formed two events: nothing to diagnose")
    numbers = summarise(rows)
    print_table(numbers)
    if args.write:
        command = "python -m papers.em_llm.diagnose " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        path = write_evidence(
            SLUG,
            numbers,
            command.strip(),
            started,
            details={"documents": rows, "args": {k: str(v) for k, v in vars(args).items()}},
        )
        print(f"wrote {path}")
    return numbers


if __name__ == "__main__":
    main()
