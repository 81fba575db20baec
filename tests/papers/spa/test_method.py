"""SPA's losses, judge and flagging against the brief's Sec. 7 hand checks."""

from __future__ import annotations

import math

import pytest
import torch

from papers.spa.method import (
    RollingThreshold,
    distinct_pairs,
    dpo_loss,
    dpo_margin,
    extrapolated_logits,
    flag_lowest_margins,
    implicit_reward,
    in_warmup,
    judge_pairs,
    label_accuracy,
    preference_probability,
    self_refinement_loss,
    sequence_log_probs,
    token_log_probs,
)

BETA = 0.1


def test_dpo_at_policy_equal_reference_is_log2_with_gradient_minus_beta_half():
    log_p = torch.randn(5, 2)
    h = dpo_margin(log_p[:, 0], log_p[:, 1], log_p[:, 0], log_p[:, 1]).requires_grad_(True)
    loss = dpo_loss(h, BETA)
    assert torch.allclose(loss, torch.full((5,), math.log(2.0)))
    loss.sum().backward()
    assert torch.allclose(h.grad, torch.full((5,), -BETA / 2))


def test_sr_loss_at_alpha_zero_is_dpo_exactly():
    h = torch.randn(16) * 5
    flagged = torch.rand(16) > 0.5
    assert torch.equal(self_refinement_loss(h, flagged, BETA, 0.0), dpo_loss(h, BETA))


def test_sr_loss_on_a_flagged_pair_at_alpha_half_is_symmetric_and_flat_at_zero():
    h = torch.linspace(-3, 3, 7)
    flagged = torch.ones(7, dtype=torch.bool)
    loss = self_refinement_loss(h, flagged, BETA, 0.5)
    assert torch.allclose(loss, loss.flip(0))
    zero = torch.zeros(1, requires_grad=True)
    self_refinement_loss(zero, torch.ones(1, dtype=torch.bool), BETA, 0.5).sum().backward()
    assert abs(float(zero.grad)) < 1e-12


def test_sr_loss_leaves_unflagged_pairs_as_dpo():
    h = torch.randn(6)
    flagged = torch.tensor([True, False, False, True, False, False])
    loss = self_refinement_loss(h, flagged, BETA, 0.1)
    assert torch.allclose(loss[~flagged], dpo_loss(h, BETA)[~flagged])
    assert not torch.allclose(loss[flagged], dpo_loss(h, BETA)[flagged])


def _margin_from_logits(z_policy, z_ref, ids, response):
    lp = sequence_log_probs(z_policy, ids, response)
    lr = sequence_log_probs(z_ref, ids, response)
    return dpo_margin(lp[0::2], lp[1::2], lr[0::2], lr[1::2])


def test_extrapolation_lambda_zero_is_h_and_policy_equal_reference_is_zero():
    torch.manual_seed(0)
    ids = torch.randint(0, 5, (4, 6))
    response = torch.zeros(4, 6, dtype=torch.bool)
    response[:, 3:] = True
    z_theta, z_ref = torch.randn(4, 6, 5), torch.randn(4, 6, 5)
    h = _margin_from_logits(z_theta, z_ref, ids, response)
    h_g0 = _margin_from_logits(extrapolated_logits(z_theta, z_ref, 0.0), z_ref, ids, response)
    assert torch.allclose(h, h_g0)
    for lam in (0.125, 0.5, 1.0):
        same = _margin_from_logits(extrapolated_logits(z_ref, z_ref, lam), z_ref, ids, response)
        assert torch.allclose(same, torch.zeros(2), atol=1e-6)


def test_extrapolation_by_hand_on_logits_not_log_probs():
    z_theta, z_ref = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0])
    assert torch.equal(extrapolated_logits(z_theta, z_ref, 1.0), torch.tensor([4.0, 0.0]))


def test_flagging_marks_exactly_the_lowest_margin_and_nothing_in_warmup():
    margins = torch.tensor([5.0, 4, 3, 2, 1, 0, -1, -2, -3, -4])
    flagged = flag_lowest_margins(margins, 0.1)
    assert flagged.tolist() == [False] * 9 + [True]
    assert not flag_lowest_margins(margins, 0.1, in_warmup=True).any()
    assert flag_lowest_margins(torch.tensor([1.0, 2.0]), 0.1).sum() == 1  # at least one


def test_warmup_covers_the_first_20_percent_of_steps():
    assert [in_warmup(s, 10, 0.2) for s in range(1, 11)] == [True, True] + [False] * 8


def test_rolling_threshold_is_zero_until_full_then_the_6th_and_7th_smallest():
    rolling = RollingThreshold(0.1, 50)
    first = rolling.flag(torch.tensor([1.0, -1.0, 2.0]))
    assert first.tolist() == [False, True, False]  # threshold 0 before 50 margins
    rolling.load_state_dict({"values": [float(v) for v in range(50)]})
    assert rolling.threshold() == 5.5  # mean of the 6th (5) and 7th (6) smallest
    flagged = rolling.flag(torch.tensor([5.0, 100.0]))
    assert flagged.tolist() == [True, False]
    assert rolling.state_dict()["values"][-1] == 100.0 and len(rolling.values) == 50


def test_judge_swap_shift_and_beta_invariances():
    torch.manual_seed(1)
    log_policy, log_init = torch.randn(20, 2) * 3, torch.randn(20, 2) * 3
    chosen, _ = judge_pairs(log_policy, log_init, BETA)
    swapped, _ = judge_pairs(log_policy.flip(-1), log_init.flip(-1), BETA)
    assert torch.equal(swapped, 1 - chosen)
    shifted, _ = judge_pairs(log_policy + 7.0, log_init - 3.0, BETA)
    assert torch.equal(shifted, chosen)
    for beta in (0.01, 1.0, 10.0):
        assert torch.equal(judge_pairs(log_policy, log_init, beta)[0], chosen)
    p = preference_probability(log_policy, log_init, BETA)
    assert torch.equal(p >= 0.5, chosen == 0)


def test_judge_uses_the_reference_it_is_given():
    """A sentinel reference decides the label: same policy, opposite reference, opposite label."""
    log_policy = torch.tensor([[-2.0, -2.0]])
    sentinel = torch.tensor([[-1.0, -5.0]])  # makes y_2's implicit reward larger
    assert judge_pairs(log_policy, sentinel, BETA)[0].item() == 1
    assert judge_pairs(log_policy, sentinel.flip(-1), BETA)[0].item() == 0
    assert torch.allclose(implicit_reward(log_policy, sentinel, BETA), torch.tensor([[-0.1, 0.3]]))


def test_sequence_log_prob_is_the_sum_of_response_token_log_softmax():
    torch.manual_seed(2)
    ids = torch.randint(0, 6, (3, 7))
    logits = torch.randn(3, 7, 6)
    response = torch.zeros(3, 7, dtype=torch.bool)
    response[:, 3:] = True
    expected = sum(
        torch.log_softmax(logits[:, t - 1], -1).gather(-1, ids[:, t : t + 1]).squeeze(-1)
        for t in range(3, 7)
    )
    assert torch.allclose(sequence_log_probs(logits, ids, response), expected)
    allowed = torch.tensor([True] * 4 + [False] * 2)
    ids[:, 3:] = ids[:, 3:] % 4  # responses use allowed tokens only; prompts may not
    masked = sequence_log_probs(logits, ids, response, allowed)
    assert torch.isfinite(masked).all()
    per_token = token_log_probs(logits, ids, allowed)
    assert torch.allclose(masked, per_token[:, 2:].sum(-1))


def test_identical_pair_filter_removes_exactly_identical_rows():
    responses = torch.tensor(
        [
            [[1, 2, 3], [1, 2, 3]],
            [[1, 2, 3], [1, 2, 4]],
            [[0, 0, 0], [0, 0, 0]],
            [[3, 2, 1], [1, 2, 3]],
        ]
    )
    assert distinct_pairs(responses).tolist() == [False, True, False, True]


def test_tie_aware_label_accuracy_by_hand():
    chosen = torch.tensor([3.0, 1.0, 2.0, 5.0, 1.0000000001])
    rejected = torch.tensor([1.0, 2.0, 2.0, 4.0, 1.0])
    accuracy, ties = label_accuracy(chosen, rejected)
    assert ties == 2  # exact tie and a tie up to rounding
    assert accuracy == pytest.approx(2 / 3)


def test_judge_reference_previous_is_pi_init_then_the_model_before_the_policy(
    tmp_path, monkeypatch
):
    """``spa.judge_reference=previous`` (paper Table 7): iteration 1 judges pi_0 against
    pi_init, iteration 2 judges pi_1 against pi_0 (the model pi_1 was trained from)."""
    from papers.spa import train
    from shared.config import compose_dict
    from shared.entry import execute

    seen = []  # (iteration, the judged policy's and the reference's first parameter)

    def spying_judge(method, task, policy, reference, pool, responses, seed, iteration):
        first = next(reference.parameters()).detach().clone()
        seen.append((iteration, next(policy.parameters()).detach().clone(), first))
        return judge(method, task, policy, reference, pool, responses, seed, iteration)

    judge = train.judge
    monkeypatch.setattr(train, "judge", spying_judge)
    overrides = ["methods=[dpo_seed,spa]", "spa.judge_reference=previous", "runtime.progress=false"]
    execute("spa", compose_dict("spa", "smoke", overrides), tmp_path / "run")
    (it1, pi_0, reference_1), (it2, pi_1, reference_2) = seen
    assert (it1, it2) == (1, 2)
    assert not torch.equal(reference_1, pi_0)  # pi_init, not the judged policy
    assert torch.equal(reference_2, pi_0)  # the previous iteration's model
    assert not torch.equal(pi_1, pi_0)
    assert train.judge_reference_model("none", "init", "before") is None
    assert train.judge_reference_model("init", "init", "before") == "init"
    with pytest.raises(ValueError, match="spa.judge_reference must be one of"):
        train.judge_reference_model("last", "init", "before")
