"""The core math of LeReT (brief Sec. 7): AP and recall, Plackett-Luce, the pair builder,
next-hop selection, the IPO / DPO identities and the zero-shot training inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from papers.leret.method import (
    average_precision,
    build_preference_pairs,
    choose_next_trajectory,
    dpo_loss,
    extend_context,
    ipo_loss,
    next_hop_level_weights,
    plackett_luce_greedy,
    plackett_luce_log_prob,
    plackett_luce_sample,
    preference_margin,
    recall,
    sft_loss,
)

# ------------------------------------------------------------------ 7.3 AP and recall


def test_average_precision_hand_cases():
    gold = {"g1", "g2"}
    assert average_precision(["g1", "x", "g2"], gold) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision(["x", "g1"], gold) == pytest.approx(0.25)
    assert average_precision(["x", "y"], gold) == 0.0
    assert average_precision(["g2", "g1"], gold) == 1.0


def test_recall_and_context_merge():
    assert recall(["g1", "x"], {"g1", "g2"}) == 0.5
    assert recall([], {"g1"}) == 0.0
    # hop order, duplicates dropped, new documents in rank order
    assert extend_context((3, 1), [1, 7, 3, 5]) == (3, 1, 7, 5)
    with pytest.raises(ValueError, match="gold"):
        average_precision([1], set())


# ------------------------------------------------------------------ 7.4 Plackett-Luce


def test_plackett_luce_normalises_over_all_ordered_pairs():
    torch.manual_seed(0)
    scores = torch.randn(1, 4, dtype=torch.float64)
    mask = torch.ones(1, 4, dtype=torch.bool)
    pairs = torch.tensor(list(itertools.permutations(range(4), 2)))  # 12 ordered pairs
    log_p = plackett_luce_log_prob(scores.expand(12, 4), mask.expand(12, 4), pairs)
    assert log_p.exp().sum().item() == pytest.approx(1.0, abs=1e-6)
    # padding never receives mass
    padded = torch.cat([scores, torch.full((1, 2), 50.0, dtype=torch.float64)], dim=1)
    pad_mask = torch.tensor([[True] * 4 + [False] * 2])
    log_q = plackett_luce_log_prob(padded.expand(12, 6), pad_mask.expand(12, 6), pairs)
    assert torch.allclose(log_p, log_q)


def test_greedy_is_the_top_two_in_order_and_sampling_follows_the_distribution():
    scores = torch.tensor([[0.1, 2.0, -1.0, 1.5]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    assert plackett_luce_greedy(scores, mask, 2).tolist() == [[1, 3]]
    rng = np.random.default_rng(0)
    draws = plackett_luce_sample(scores.double(), mask, 2, 20000, 1.0, rng)[0]  # (n, m)
    assert (draws[:, 0] != draws[:, 1]).all()
    first = torch.bincount(draws[:, 0], minlength=4).double() / len(draws)
    assert torch.allclose(first, torch.softmax(scores[0].double(), -1), atol=0.01)
    pair = ((draws[:, 0] == 1) & (draws[:, 1] == 3)).double().mean()
    expected = plackett_luce_log_prob(scores, mask, torch.tensor([[1, 3]])).exp()
    assert pair.item() == pytest.approx(expected.item(), abs=0.01)


# ------------------------------------------------------------------ 7.5 pair builder


def test_pairs_only_between_adjacent_levels_with_duplicates_dropped():
    q1, q2, q3, q4, q5 = ("a", "b"), ("c", "d"), ("e", "f"), ("g", "h"), ("b", "a")
    prefs = build_preference_pairs([q1, q2, q3, q4, q5], [0.5, 0.5, 1.0, 0.0, 0.5], key=frozenset)
    assert sorted(prefs.pairs) == sorted([(q3, q1), (q3, q2), (q1, q4), (q2, q4)])
    assert prefs.sft_target == q3


def test_all_tied_input_is_skipped_and_malformed_queries_dropped():
    prefs = build_preference_pairs([("a",), ("b",), ("c",)], [0.5, 0.5, 0.5])
    assert prefs.pairs == [] and prefs.sft_target is None
    # the only query at another level is malformed: the rest tie -> skipped
    prefs = build_preference_pairs(
        ["good", "", "also good"], [0.5, 1.0, 0.5], is_valid=lambda q: bool(q)
    )
    assert prefs.pairs == [] and prefs.sft_target is None


# ------------------------------------------------------------------ 7.6 next hop


def test_next_hop_weights_and_selection():
    assert next_hop_level_weights([0.0, 0.5], 0.5).tolist() == [0.0, 1.0]
    assert next_hop_level_weights([0.0], 0.5).tolist() == [0.5]  # AP 0 on top still carries
    rng = np.random.default_rng(0)
    rewards = [0.0, 0.5, 0.0, 0.5, 1.0]
    picks = {choose_next_trajectory(rewards, rng, 0.5) for _ in range(200)}
    assert picks == {1, 3}  # level 0.5 always; AP = 1 dropped; uniform within the level
    assert choose_next_trajectory([1.0, 1.0], rng, 0.5) is None  # every trajectory done: stop
    # proportional to value (+0.5 on top): levels 0.25 and 0.5 -> weights 0.25 : 1.0
    draws = [choose_next_trajectory([0.25, 0.5], rng, 0.5) for _ in range(5000)]
    assert np.mean(np.asarray(draws) == 0) == pytest.approx(0.2, abs=0.02)


# ------------------------------------------------------------------ 7.7 IPO and DPO


def test_ipo_identities_and_gradient_direction():
    beta = 0.05
    target = 1 / (2 * beta)
    assert ipo_loss(torch.tensor(target), beta).item() == 0.0
    same = torch.tensor(-3.2)  # policy = reference: h = 0
    h = preference_margin(same, same - 1.0, same, same - 1.0)
    assert h.item() == 0.0
    assert ipo_loss(h, beta).item() == pytest.approx(target**2)
    h = torch.tensor(4.0, requires_grad=True)
    ipo_loss(h, beta).backward()
    assert h.grad.item() < 0  # descent raises h toward 1/(2 beta)
    h = torch.tensor(12.0, requires_grad=True)
    ipo_loss(h, beta).backward()
    assert h.grad.item() > 0  # and lowers it from above: a squared loss, not a hinge
    assert dpo_loss(torch.tensor(0.0), beta).item() == pytest.approx(math.log(2))
    assert sft_loss(torch.tensor([-1.0, -3.0])).item() == 2.0
