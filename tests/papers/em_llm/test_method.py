"""The math of EM-LLM (brief Sec. 7): surprise, boundaries, events, graph metrics, retrieval."""

from __future__ import annotations

import networkx as nx
import pytest
import torch

from papers.em_llm.method import (
    boundary_f1,
    conductance,
    contiguity_split,
    evenly_spaced,
    event_conductances,
    form_events,
    modularity,
    nearest_capacity,
    refine_boundaries,
    representative_key,
    similarity_retrieval,
    split_scores,
    surprise_boundaries,
    token_surprise,
    update_contiguity_buffer,
)


def two_blocks() -> torch.Tensor:
    """Two 4x4 blocks of ones with zero diagonal (8 nodes)."""
    a = torch.zeros(8, 8, dtype=torch.float64)
    a[:4, :4] = 1
    a[4:, 4:] = 1
    return a.fill_diagonal_(0)


# ---------------------------------------------------------------- 1. surprise


def test_surprise_is_minus_log_softmax_of_the_previous_logits():
    torch.manual_seed(0)
    logits, ids = torch.randn(6, 11), torch.randint(0, 11, (6,))
    expected = [-torch.log_softmax(logits[t - 1], -1)[ids[t]] for t in range(1, 6)]
    assert torch.allclose(token_surprise(logits, ids), torch.stack(expected), atol=1e-6)


def test_boundaries_are_tokens_above_the_past_window_threshold():
    s = torch.tensor([float("nan"), 1.0, 1.2, 0.8, 1.0, 5.0, 1.1, 0.9, 4.0, 1.0])
    window, gamma = 4, 1.0
    expected = []
    for t in range(3, 10):  # tokens with >= 2 past values
        past = s[max(1, t - window) : t]
        if s[t] > past.mean() + gamma * past.std():
            expected.append(t)
    got = surprise_boundaries(s, 3, 10, gamma, window)
    assert got == expected == [5]  # token 8 sits in the shadow of 5 (in its window)
    # the threshold uses only the past: an outlier later in the chunk does not hide token 5
    s2 = s.clone()
    s2[7] = 100.0
    assert 5 in surprise_boundaries(s2, 3, 10, gamma, window)
    # official alignment: position t holds s_{t+1} (tests/papers/em_llm/test_official.py)
    shifted = torch.cat([s[1:], torch.tensor([float("nan")])])
    official = surprise_boundaries(s, 3, 10, gamma, window, official_shift=True)
    assert official == surprise_boundaries(shifted, 3, 10, gamma, window)


def test_per_chunk_threshold_uses_the_window_before_the_chunk():
    s = torch.tensor([float("nan"), 1.0, 2.0, 1.0, 2.0, 1.9, 1.0, 3.0])
    past = s[1:4]
    threshold = past.mean() + past.std()
    expected = [t for t in range(4, 8) if s[t] > threshold]
    assert surprise_boundaries(s, 4, 8, 1.0, 3, per_chunk=True) == expected


# ---------------------------------------------------------------- 2. block formation


def test_block_formation_min_max_rules_hand_case():
    events, rest = form_events(0, 40, [3, 5, 30], min_block=8, max_block=16)
    assert events == [(0, 16), (16, 30)] and rest == 30  # [30, 40) stays open


@pytest.mark.parametrize("seed", range(20))
def test_event_sizes_lie_within_min_and_max(seed):
    g = torch.Generator().manual_seed(seed)
    frontier = int(torch.randint(20, 200, (1,), generator=g))
    boundaries = sorted(set(torch.randint(1, frontier, (12,), generator=g).tolist()))
    events, rest = form_events(0, frontier, boundaries, min_block=4, max_block=16)
    assert all(4 <= e - b <= 16 for b, e in events)
    assert [b for b, _ in events[1:]] == [e for _, e in events[:-1]]  # contiguous
    assert frontier - rest < 16 + 4  # the open tail stays short


def test_infllm_mode_makes_events_of_exactly_max_block():
    events, rest = form_events(4, 70, [10, 13, 50], min_block=1, max_block=8, uniform=True)
    assert all(e - b == 8 for b, e in events) and events[0][0] == 4 and rest == 68


def test_surprise_with_infinite_gamma_is_infllm():
    s = torch.rand(64)
    assert surprise_boundaries(s, 32, 64, float("inf"), 32) == []
    assert form_events(4, 60, [], 8, 8) == form_events(4, 60, [20, 30], 8, 8, uniform=True)


# ---------------------------------------------------------------- 3-4. graph metrics


def test_modularity_of_two_blocks_and_networkx_factor():
    a = two_blocks()
    assert modularity(a, [4]) == pytest.approx(0.25)
    scores = split_scores(a, "modularity")
    assert int(scores[1:8].argmax()) + 1 == 4 and float(scores[4]) == pytest.approx(0.25)
    graph = nx.from_numpy_array(a.numpy())
    reference = nx.algorithms.community.modularity(graph, [set(range(4)), set(range(4, 8))])
    assert reference == pytest.approx(0.5) == pytest.approx(2 * modularity(a, [4]))


def test_modularity_matches_networkx_on_a_random_graph():
    torch.manual_seed(1)
    a = torch.rand(12, 12, dtype=torch.float64)
    a = (a + a.T) / 2
    graph = nx.from_numpy_array(a.numpy())
    communities = [set(range(0, 5)), set(range(5, 9)), set(range(9, 12))]
    reference = nx.algorithms.community.modularity(graph, communities)
    # networkx counts self-loops once in the degree; our A_ii enters like any entry
    a_no_loops = a.clone().fill_diagonal_(0)
    graph = nx.from_numpy_array(a_no_loops.numpy())
    reference = nx.algorithms.community.modularity(graph, communities)
    assert 2 * modularity(a_no_loops, [5, 9]) == pytest.approx(reference)


def test_conductance_of_the_block_split_is_zero():
    scores = split_scores(two_blocks(), "conductance")
    assert float(scores[4]) == 0.0 and all(float(scores[t]) > 0 for t in (2, 3, 5, 6))


def test_conductance_of_a_segmentation_is_the_minimum_over_its_events():
    # issue 51 (CI: "em_llm's metric on a fixed graph"): paper Eq. 4 / official similarity.py
    # L53 take the min over events; the first real protocol took the mean, which on this
    # structureless graph (all pairs alike) scores sizes 2, 4, 6 worse than 4, 4, 4 (8 / 3 > 2)
    # wherever the boundaries are. phi = cut / intra-volume = n (12 - n) / n^2 here.
    ones = torch.ones(12, 12, dtype=torch.float64)
    assert event_conductances(ones, [2, 6]).tolist() == pytest.approx([5.0, 2.0, 1.0])
    assert conductance(ones, [2, 6]) == pytest.approx(1.0)
    assert conductance(ones, [4, 8]) == pytest.approx(2.0)
    # on the block graph the events that keep to the blocks have zero conductance
    assert event_conductances(two_blocks(), [2, 4]).tolist() == pytest.approx([2.0, 2.0, 0.0])
    assert conductance(two_blocks(), [2, 4]) == 0.0


def test_conductance_uses_the_official_complement_volume():
    # vol(S-bar) = sum_ij A_ij - vol(S) (official similarity.py L38), not the complement's own
    # intra-volume: a 10-token event of a 12-token constant graph has min(100, 144 - 100) = 44
    ones = torch.ones(12, 12, dtype=torch.float64)
    assert event_conductances(ones, [10]).tolist() == pytest.approx([20 / 44, 20 / 4])


@pytest.mark.parametrize("metric", ["modularity", "conductance"])
def test_refinement_moves_a_misplaced_boundary_back(metric):
    assert refine_boundaries(two_blocks(), [6], min_block=2, metric=metric) == [4]


def test_refinement_keeps_the_number_of_boundaries():
    torch.manual_seed(0)
    k = torch.randn(1, 2, 60, 8)
    a = torch.einsum("lhid,lhjd->ij", k, k).double()
    boundaries = [10, 22, 35, 47]
    refined = refine_boundaries(a, boundaries, min_block=4)
    assert len(refined) == len(boundaries) and refined == sorted(refined)


# ---------------------------------------------------------------- 6. retrieval


def test_nearest_capacity_rule_hand_case():
    sizes = [10, 8, 6, 4]
    # 10 + 8 = 18; adding 6 gives 24 vs capacity 20: |24 - 20| = 4 > |18 - 20| = 2 -> dropped
    assert nearest_capacity([0, 1, 2, 3], sizes, 20) == [0, 1]
    # capacity 23: 24 is closer (1) than 18 (5) -> kept, then stop
    assert nearest_capacity([0, 1, 2, 3], sizes, 23) == [0, 1, 2]


def test_similarity_retrieval_ranks_by_dot_product_and_takes_all_when_they_fit():
    reps = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-1.0, 0.0]])
    query = torch.tensor([1.0, 0.1])
    sizes = [4, 4, 4, 4]
    assert similarity_retrieval(query, reps, sizes, 8) == [0, 2]
    assert similarity_retrieval(query, reps, sizes, 16) == [0, 1, 2, 3]


def test_contiguity_buffer_adds_neighbours_without_duplicates():
    sizes = [4] * 6
    assert contiguity_split(64, 0.3) == (44, 20)
    buffer = update_contiguity_buffer([], [2, 3], sizes, capacity=8)
    assert buffer == [4, 1] or sorted(buffer) == [1, 4]
    assert not set(buffer) & {2, 3}
    buffer = update_contiguity_buffer(buffer, [0], sizes, capacity=8)
    assert (
        len(buffer) == len(set(buffer)) and 0 not in buffer and sum(sizes[e] for e in buffer) <= 8
    )


# ---------------------------------------------------------------- 7. representative key


def test_representative_key_is_the_mean_of_the_topk_scored_keys():
    keys = torch.arange(2 * 5 * 3, dtype=torch.float32).view(2, 5, 3)
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.2, 0.8], [1.0, 0.0, 0.0, 0.0, 0.5]])
    rep = representative_key(keys, scores, topk=2)
    expected = torch.cat([keys[0, [1, 4]].mean(0), keys[1, [0, 4]].mean(0)])
    assert torch.equal(rep, expected)


# ---------------------------------------------------------------- analysis


def test_boundary_f1_with_tolerance_and_even_spacing():
    assert boundary_f1([10, 21, 40], [10, 20, 30], tolerance=1) == pytest.approx(2 / 3)
    assert boundary_f1([], [5]) == 0.0
    assert evenly_spaced(0, 100, 3) == [25, 50, 75]
