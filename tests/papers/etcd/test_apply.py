"""``python -m papers.etcd.apply`` (issue 53): ETCD's graph of one user's data set, or the
AssumptionInvalid it raises, named in the data's own variables, with the sample-size caveat;
bad input stops in one line, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from papers.etcd import apply
from papers.etcd.config import ApplyConfig
from papers.etcd.data import indicator_graph, sample_weights, simulate
from shared.apply import ANSWER_NAME, run_apply
from tests.helpers import apply_refusal

NAMES = [f"x{i + 1}" for i in range(6)]


def write(path, n: int) -> None:
    """Two correlated latents, three pure indicators each (ETCD's assumptions hold)."""
    rng = np.random.default_rng(0)
    X = simulate(sample_weights(indicator_graph(2, 3), rng), n, rng)
    pd.DataFrame(X.T, columns=NAMES).assign(id=range(n)).to_csv(path, index=False)


def args(tmp_path, *extra: str) -> list[str]:
    columns = ",".join(NAMES)
    return [f"data={tmp_path / 'm.csv'}", f"columns=[{columns}]", f"out={tmp_path / 'a'}", *extra]


def test_graph_answer_names_latents_edges_and_clusters():
    adjacency = np.zeros((4, 4))  # x1, x2, x3 observed; latent L1 = 3
    adjacency[0, 3] = adjacency[1, 3] = 1.0  # L1 -> x1, L1 -> x2
    adjacency[2, 1] = 0.5  # x2 -> x3
    graph = apply.graph_answer(adjacency, ["a", "b", "c"], [3, 2])
    assert graph["latents"] == ["L1"]
    assert {(e["cause"], e["effect"]) for e in graph["edges"]} == {
        ("L1", "a"),
        ("L1", "b"),
        ("b", "c"),
    }
    assert graph["measures"] == {"a": "L1", "b": "L1", "c": "L1"} and graph["order"] == ["L1", "c"]


def test_one_answer_for_one_data_set(tmp_path, capsys):
    write(tmp_path / "m.csv", 1500)
    record = run_apply("etcd", ApplyConfig, apply.answer_for, args(tmp_path))
    answer = record["answer"]
    graph = answer["graph"] if "graph" in answer else answer["graph_it_would_return"]
    assert answer["raised_assumption_invalid"] == ("graph" not in answer)
    assert answer["n_rows"] == 1500 and answer["n_variables"] == 6
    assert set(graph["measures"]) == set(NAMES)
    assert any("5000" in note for note in record["notes"])  # the sample-size caveat
    assert json.loads((tmp_path / "a" / ANSWER_NAME).read_text())["answer"] == answer
    assert "ETCD" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("rows", "extra", "message"),
    [
        (60, (), "60 rows, ETCD's independence tests need at least min_samples=100"),
        (300, ("columns=[x1,x9]",), r"missing column(s) ['x9']"),
        (300, ("min_samples=1",), "min_samples=1: must be >= 2"),
    ],
    ids=["too few rows", "missing column", "bound"],
)
def test_bad_input_stops_in_one_line_writing_nothing(tmp_path, rows, extra, message):
    write(tmp_path / "m.csv", rows)
    refusal = apply_refusal(apply, args(tmp_path, *extra), tmp_path / "a")
    assert message.replace("\\", "") in refusal, refusal
