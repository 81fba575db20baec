"""BM25 through bm25s against the brief's formula (Sec. 7.1-7.2), the toy world, the pointer
policy's features, that every loss sees the zero-shot input (Sec. 7.8), and what each LeReT
variant samples with (prompts vs the temperature-only ablation)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from papers.leret.collection import Environment, HopState, collect_iteration, evaluate
from papers.leret.config import WorldConfig
from papers.leret.data import make_toy_task
from papers.leret.method import average_precision, plackett_luce_log_prob, recall
from papers.leret.model import N_FEATURES, Featurizer, PointerPolicy, ScoreNet
from papers.leret.retrieval import TextRetriever, ToyRetriever, top_k_by_score
from papers.leret.train import sampling_plan
from shared.config import compose

K1, B = 1.5, 0.75


def bm25_by_hand(docs: list[list[str]], query: list[str]) -> list[float]:
    """The brief's formula, written out: idf(t) = ln(1 + (N - df + 0.5)/(df + 0.5)),
    tf (k1 + 1) / (tf + k1 (1 - b + b dl/avgdl)), summed over the query's distinct terms."""
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    out = []
    for doc in docs:
        score = 0.0
        for term in set(query):
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / avgdl))
        out.append(score)
    return out


# d0 = [a, b], d1 = [a, a, c]: tokens a=0, b=1, c=2
DOCS = [["a", "b"], ["a", "a", "c"]]
IDS = [[0, 1], [0, 0, 2]]


def test_bm25_hand_case():
    assert bm25_by_hand(DOCS, ["c"])[0] == 0.0
    assert math.log(1 + (2 - 1 + 0.5) / (1 + 0.5)) == pytest.approx(0.693147, abs=1e-6)
    assert bm25_by_hand(DOCS, ["a"]) == pytest.approx([0.200353, 0.244727], abs=1e-5)
    # The brief lists 0.930399 for score(d1, [c]) and 1.175126 for [a, c]: that is idf(c)
    # times the tf part of tf = 2 (a's count in d1), an arithmetic slip; c occurs once in d1.
    assert bm25_by_hand(DOCS, ["c"])[1] == pytest.approx(0.635915, abs=1e-5)
    assert bm25_by_hand(DOCS, ["a", "c"])[1] == pytest.approx(0.880642, abs=1e-5)


def test_bm25s_times_k1_plus_1_is_the_formula_and_queries_are_sets():
    retriever = ToyRetriever(IDS, vocab_size=3, k1=K1, b=B)
    for query, names in (([2], ["c"]), ([0], ["a"]), ([0, 2], ["a", "c"])):
        expected = bm25_by_hand(DOCS, names)
        assert retriever.scores([query])[0] == pytest.approx(expected, abs=1e-9)
    assert np.array_equal(retriever.scores([[2, 0, 0]]), retriever.scores([[0, 2]]))
    assert retriever.top_k([[2, 0], [1], []], 1) == [[1], [0], []]


def test_bm25s_ranks_like_the_formula_on_the_toy_corpus():
    task = make_toy_task(WorldConfig(), seed=0)
    retriever = ToyRetriever(task.documents, len(task.vocab), K1, B)
    docs = [[str(t) for t in d] for d in task.documents]
    rng = np.random.default_rng(0)
    for _ in range(5):
        query = rng.choice(len(task.vocab), size=3, replace=False).tolist()
        expected = np.asarray(bm25_by_hand(docs, [str(t) for t in query]))
        assert retriever.scores([query])[0] == pytest.approx(expected, abs=1e-9)
        assert (top_k_by_score(expected[None], 5) == np.asarray(retriever.top_k([query], 5))).all()


def test_text_retriever_tokenises_queries_like_passages():
    passages = ["Paris | capital of France", "Berlin | capital of Germany", "Rome | Italy"]
    retriever = TextRetriever(passages, K1, B)
    assert retriever.top_k(["germany capital?", "the of", ""], 2)[0][0] == 1
    assert retriever.top_k(["the of"], 2) == [[]]  # stop words only: malformed, no documents
    assert retriever.query_terms("Capital capital of ROME") == ["capital", "rome"]


def test_toy_world_follows_the_brief():
    cfg = WorldConfig()
    task = make_toy_task(cfg, seed=0)
    assert len(task.documents) == 300 and all(len(d) == 17 for d in task.documents)
    assert len(task.vocab) == 8 + 300 + 10 + 150
    entity0 = task.vocab.index("E0")
    assert all(d[0] == d[1] == entity0 + i for i, d in enumerate(task.documents))
    forms = [q.form for q in task.questions]
    assert 0.4 < forms.count("bridge") / len(forms) < 0.6
    for q in task.questions[:200]:
        a = q.habit_query[0] - entity0
        assert a in q.gold and len(q.gold) == 2
        if q.form == "bridge":  # A -r1-> B: B is in A's document right after r1
            (b_,) = q.gold - {a}
            doc = task.documents[a]
            assert any(
                doc[i] == q.habit_query[1] and doc[i + 1] == entity0 + b_
                for i in range(len(doc) - 1)
            )
    s = task.splits
    parts = [s.demo, s.validation, s.test, *s.iterations, s.habit]
    assert [len(p) for p in parts[:5]] == [100, 100, 300, 200, 200]
    assert sorted(sum(parts, [])) == list(range(cfg.n_questions))  # disjoint, complete
    again = make_toy_task(cfg, seed=0)
    assert again.documents == task.documents and again.splits.test == s.test
    assert make_toy_task(cfg, seed=1).documents != task.documents


@pytest.fixture(scope="module")
def toy():
    task = make_toy_task(WorldConfig(), seed=0)
    env = Environment(task, ToyRetriever(task.documents, len(task.vocab), K1, B), 2, 2)
    torch.manual_seed(0)
    policy = PointerPolicy(ScoreNet(32), Featurizer(task, 2), m=2, prior_weight=3.0)
    return task, env, policy


def test_features_of_a_bridge_question(toy):
    task, env, policy = toy
    q = next(i for i, q in enumerate(task.questions) if q.form == "bridge")
    a_token, r1 = task.questions[q].habit_query
    a = a_token - task.vocab.index("E0")
    (b_,) = task.questions[q].gold - {a}
    b_token = b_ + task.vocab.index("E0")
    cands = policy.featurizer(HopState(q, (a,), 1))
    assert cands.features.shape == (len(cands.tokens), N_FEATURES)
    assert all(task.kinds[t] != 0 for t in cands.tokens)  # no function words
    phi = dict(zip(cands.tokens, cands.features, strict=True))
    assert phi[b_token][8] == 1.0 and phi[b_token][14] == 1.0  # follows r1, at hop 2
    assert phi[b_token][0] == 0.0 and phi[b_token][5] == 1.0  # not in question, doc rank 1
    assert phi[a_token][9] == 1.0  # the title of a retrieved document
    assert phi[r1][3] == 1.0 and phi[r1][13] == 1.0
    assert (cands.features[:, 15] == 1).all() and (cands.features[:, 16] == 0).all()


def test_training_inputs_are_zero_shot(toy):
    """Queries sampled under a strong few-shot prior are trained at the zero-shot input."""
    task, env, policy = toy
    prior = np.zeros((2, N_FEATURES))
    prior[:, 4] = 50.0  # the prompt forces filler tokens
    data = collect_iteration(
        policy,
        env,
        task.splits.iterations[0][:40],
        [prior, prior * 0.5],
        2,
        1.0,
        0.5,
        np.random.default_rng(0),
    )
    assert data.sft_queries
    encoded = policy.encode(data.sft_states, data.sft_queries)
    for row, state in enumerate(data.sft_states):
        width = len(policy.featurizer(state).tokens)
        assert np.array_equal(
            encoded.features[row, :width].numpy(),
            policy.featurizer(state).features.astype(np.float32),
        )
    with torch.no_grad():
        logp = policy.sequence_log_probs(policy.module, encoded)
        zero_shot = plackett_luce_log_prob(
            policy.module(encoded.features), encoded.mask, encoded.positions
        )
        prior_t = torch.as_tensor(prior[0], dtype=torch.float32)
        prompted = plackett_luce_log_prob(
            policy.module(encoded.features) + encoded.features @ prior_t,
            encoded.mask,
            encoded.positions,
        )
    assert torch.equal(logp, zero_shot)
    assert not torch.allclose(logp, prompted)


def test_collection_produces_adjacent_level_pairs_with_better_ap(toy):
    task, env, policy = toy
    data = collect_iteration(
        policy, env, task.splits.iterations[0][:60], [None], 8, 1.0, 0.5, np.random.default_rng(1)
    )
    assert data.inputs >= 60 and len(data.sft_states) + data.skipped == data.inputs
    assert data.chosen and len(data.chosen) == len(data.rejected) == len(data.pair_states)
    hops = {s.hop for s in data.pair_states}
    assert hops <= {0, 1} and 1 in hops
    metrics = evaluate(policy, env, task.splits.test[:50])
    assert 0.0 <= metrics["ap"] <= metrics["recall"] <= 1.0


class SpyPolicy:
    """Records the (prompt, n, temperature) of every ``sample`` call of a wrapped policy."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def sample(self, states, prompt, n, temperature, rng):
        self.calls.append((prompt, n, temperature))
        return self.policy.sample(states, prompt, n, temperature, rng)


def test_temperature_only_samples_without_prompts_and_leret_with_every_prompt(toy):
    """Issue 31: the ablation must differ from LeReT in what it samples: zero-shot prompt only,
    the same 8 queries per input (toy.yaml), where LeReT draws 2 from each of its 4 prompts."""
    task, env, policy = toy
    c = compose("leret", "toy").collection
    few_shot = [np.full((2, N_FEATURES), float(i)) for i in (1, 2, 3)]
    prompts, n = sampling_plan("prompts", few_shot, c)
    assert prompts[0] is None and all(p is f for p, f in zip(prompts[1:], few_shot, strict=True))
    assert n == c.samples_per_prompt == 2
    assert sampling_plan("flipped", few_shot, c) == (prompts, n)
    assert sampling_plan("temperature", few_shot, c) == ([None], c.temperature_only_samples)
    assert c.temperature_only_samples == len(prompts) * n == 8  # same budget per input
    paper = compose("leret", "paper")
    budget = (1 + paper.prompts.n_few_shot) * paper.collection.samples_per_prompt
    assert paper.collection.temperature_only_samples == budget
    with pytest.raises(ValueError, match="variant"):
        sampling_plan("greedy", few_shot, c)

    questions = task.splits.iterations[0][:30]
    for variant in ("prompts", "temperature"):
        spy = SpyPolicy(policy)
        plan = sampling_plan(variant, few_shot, c)
        data = collect_iteration(
            spy, env, questions, *plan, c.temperature, 0.5, np.random.default_rng(0)
        )
        used = [p for p, _, _ in spy.calls]
        assert {(n_, t) for _, n_, t in spy.calls} == {(plan[1], c.temperature)}
        if variant == "temperature":
            assert all(p is None for p in used)  # no few-shot prior ever reaches the sampler
        else:  # every hop samples with the zero-shot prompt and each few-shot prompt, in order
            assert len(used) == 4 * len(data.best_rewards)
            assert all(a is b for a, b in zip(used, prompts * len(data.best_rewards), strict=True))


def test_best_sampled_ap_is_the_best_reward_of_each_hop_input(toy):
    task, env, policy = toy
    data = collect_iteration(
        policy, env, task.splits.iterations[0][:40], [None], 4, 1.0, 0.5, np.random.default_rng(2)
    )
    assert len(data.best_rewards) == 2 and len(data.best_rewards[0]) == 40
    assert sum(map(len, data.best_rewards)) == data.inputs
    # hop 1 re-derived: the best AP over the same 4 draws of the same generator
    rng = np.random.default_rng(2)
    states = [HopState(q, (), 0) for q in task.splits.iterations[0][:40]]
    drawn = policy.sample(states, None, 4, 1.0, rng)
    best = [
        max(average_precision(c, env.gold(s.question)) for c in env.step([s] * len(qs), qs))
        for s, qs in zip(states, drawn, strict=True)
    ]
    assert data.best_rewards[0] == best
    assert data.best_sampled_ap(0) == pytest.approx(np.mean(best))
    assert math.isnan(data.best_sampled_ap(5))


def test_hop1_recall_ceiling_is_structural():
    """Issue 31: hop-1 recall is the same for every trained policy because it sits at a
    ceiling of the toy world, not because hop 1 is untrained. A bridge question never names
    its second gold document (B), so no hop-1 query from the question's tokens can reach
    recall 1; a comparison question names both (A, A2) and [A, A2] retrieves both."""
    task = make_toy_task(WorldConfig(), seed=0)
    env = Environment(task, ToyRetriever(task.documents, len(task.vocab), K1, B), 2, 2)
    featurizer = Featurizer(task, 2)
    e0 = task.vocab.index("E0")
    best = {"bridge": [], "comparison": []}
    for q in task.splits.test[:80]:
        question = task.questions[q]
        state = HopState(q, (), 0)
        queries = list(itertools.combinations(featurizer(state).tokens, 2))
        reached = [recall(c, env.gold(q)) for c in env.step([state] * len(queries), queries)]
        best[question.form].append(max(reached))
        if question.form == "bridge":
            (b_,) = question.gold - {question.habit_query[0] - e0}
            assert b_ + e0 not in question.text
        else:  # "does A or A2 have the same r1 ...": both gold titles are in the question
            assert {question.text[1] - e0, question.text[3] - e0} == question.gold
    assert best["bridge"] and max(best["bridge"]) == 0.5
    assert np.mean(best["comparison"]) > 0.9
