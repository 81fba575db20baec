"""Exact enumeration and win-rate identities of the toy (brief Sec. 5.3 and 7.6-7.7)."""

from __future__ import annotations

import pytest
import torch

from papers.spa.config import ModelConfig, WorldConfig
from papers.spa.data import PROMPT_LENGTH, all_responses, make_toy_world, sample_prompts
from papers.spa.method import sequence_log_probs
from papers.spa.metrics import exact_win_rate, expected_reward
from papers.spa.model import build_toy_policy, enumerate_log_probs, sample_toy_responses
from shared.seeding import numpy_rng, torch_generator


@pytest.fixture(scope="module")
def setup(one_thread):
    cfg = WorldConfig(eval_prompts=3)
    world = make_toy_world(cfg, 0)
    torch.manual_seed(0)
    model = build_toy_policy(ModelConfig(), world.vocab_size, cfg.response_length).eval()
    prompts = sample_prompts(cfg, 3, numpy_rng(0, 9))
    log_probs = enumerate_log_probs(model, world.prompt_ids(prompts), 8, 4)
    return world, model, prompts, log_probs


def test_enumeration_sums_to_one_and_matches_full_sequences(setup):
    world, model, prompts, log_probs = setup
    assert log_probs.shape == (3, 4096)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(3, dtype=torch.float64), atol=1e-5)
    responses = all_responses(8, 4)
    ids = torch.cat([world.prompt_ids(prompts[1:2]).expand(4096, -1), responses], dim=1)
    response_mask = torch.zeros_like(ids, dtype=torch.bool)
    response_mask[:, PROMPT_LENGTH:] = True
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    direct = sequence_log_probs(logits, ids, response_mask, world.response_tokens)
    assert torch.allclose(direct.double(), log_probs[1], atol=1e-5)


def test_sampler_draws_response_tokens_from_the_enumerated_distribution(setup):
    world, model, prompts, log_probs = setup
    ids = world.prompt_ids(prompts[:1]).repeat(4000, 1)
    samples = sample_toy_responses(model, ids, 8, 4, 1.0, torch_generator(0))
    assert samples.max() < 8 and samples.shape == (4000, 4)
    first = torch.bincount(samples[:, 0], minlength=8).double() / 4000
    exact = log_probs[0].exp().reshape(8, -1).sum(-1)
    assert torch.allclose(first, exact, atol=0.03)


def test_win_rate_of_a_model_against_itself_is_one_half(setup):
    world, _, prompts, log_probs = setup
    rewards = world.reward(prompts.repeat_interleave(4096, 0), all_responses(8, 4).repeat(3, 1))
    rewards = rewards.reshape(3, 4096)
    assert exact_win_rate(log_probs, log_probs, rewards) == pytest.approx(0.5, abs=1e-9)


def test_point_mass_on_the_best_response_wins_one_minus_half_its_init_mass(setup):
    world, _, prompts, log_probs = setup
    responses = all_responses(8, 4)
    rewards = world.reward(prompts.repeat_interleave(4096, 0), responses.repeat(3, 1))
    rewards = rewards.reshape(3, 4096)
    best = rewards.argmax(-1)  # all-same-token argmax of w[c]: unique
    assert all(len(set(responses[b].tolist())) == 1 for b in best)
    point = torch.full((3, 4096), -torch.inf, dtype=torch.float64)
    point[torch.arange(3), best] = 0.0
    init_mass = log_probs.exp()[torch.arange(3), best]
    expected = float((1 - 0.5 * init_mass).mean())
    assert exact_win_rate(point, log_probs, rewards) == pytest.approx(expected, abs=1e-9)
    assert expected_reward(point, rewards) == pytest.approx(float(rewards.max(-1).values.mean()))


def test_permutations_of_a_token_multiset_tie():
    world = make_toy_world(WorldConfig(), 3)
    prompt = torch.tensor([[2, 1, 0], [2, 1, 0]])
    pair = torch.tensor([[0, 1, 2, 3], [3, 2, 1, 0]])
    r = world.reward(prompt, pair)
    assert torch.round(r[0], decimals=6) == torch.round(r[1], decimals=6)
