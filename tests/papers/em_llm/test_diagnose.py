"""The pieces of EM-LLM's issue-51 diagnosis (papers/em_llm/diagnose.py) on hand graphs: the
size-matched null, the structureless graph's size effect, the per-document experiment."""

from __future__ import annotations

import pytest
import torch

from papers.em_llm.diagnose import (
    aggregate,
    document_experiment,
    event_sizes,
    parse_args,
    size_matched_starts,
    starts_from_sizes,
    structureless_experiment,
    summarise,
)


def blocks(*sizes: int) -> torch.Tensor:
    """Block-diagonal graph of ones with the given community sizes."""
    return torch.block_diag(*[torch.ones(n, n, dtype=torch.float64) for n in sizes])


def test_sizes_and_starts_round_trip():
    assert event_sizes([3, 10], 16) == [3, 7, 6]
    assert starts_from_sizes([3, 7, 6]) == [3, 10]


def test_size_matched_null_keeps_the_sizes_and_moves_the_boundaries():
    generator = torch.Generator().manual_seed(0)
    starts = [2, 10, 13, 30]
    draws = size_matched_starts(starts, 40, 50, generator)
    assert all(sorted(event_sizes(d, 40)) == sorted(event_sizes(starts, 40)) for d in draws)
    assert any(d != starts for d in draws)


def test_mean_over_events_penalises_variable_sizes_on_a_structureless_graph():
    generator = torch.Generator().manual_seed(0)
    result = structureless_experiment([8, 8, 64, 16, 32, 8, 24], generator)
    variable, equal = result["variable"], result["equal"]
    assert variable["mean"] > 1.3 * equal["mean"]  # Jensen: mean(1/n) > 1 / mean(n)
    assert variable["min"] < 0.5 * equal["min"]  # the min favours the largest event instead
    predicted = result["mean_predicted"]
    assert variable["mean"] == pytest.approx(predicted["variable"], rel=0.05)
    assert equal["mean"] == pytest.approx(predicted["equal"], rel=0.05)


def test_true_events_beat_their_size_matched_null_and_summaries_hold_every_key():
    sizes = [6, 10, 4, 12]
    graph = blocks(*sizes) + 0.01
    true = starts_from_sizes(sizes)
    partitions = {"S": true, "SM": true, "fixed": [8, 16, 24]}
    generator = torch.Generator().manual_seed(0)
    row = document_experiment(graph, partitions, 40, generator)
    for how in ("mean", "min"):
        assert row["null_S"][how]["mean"] > row["S"][how]
        assert row["S"][how] < row["fixed"][how]
    numbers = summarise([row, row])
    assert numbers["documents"] == 2
    assert numbers["mean_null_S_margin"] > 0 and numbers["min_margin_S"] > 0
    assert numbers["mean_S"] == pytest.approx(row["S"]["mean"])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(torch.ones(3), "median")
    with pytest.raises(SystemExit):
        parse_args(["--permutations", "0"])
