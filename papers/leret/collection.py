"""LeReT's data collection and evaluation, for any query policy (brief Sec. 3.1, 3.3).

A query policy (the toy's pointer network in ``model.py``, a causal LM in ``lm_policy.py``)
offers: ``sample(states, prompt, n, T, rng)`` (n queries per hop input under a prompt),
``greedy(states, prompt)``, ``query_key`` / ``is_valid`` (duplicates and malformed queries),
``make_demo`` / ``make_prompt`` (few-shot prompts), and ``encode`` / ``sequence_log_probs``
(summed log-prob of a query given the *zero-shot* input, for the losses). ``prompt=None`` is the
zero-shot prompt. Everything here only calls that interface and the retriever.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from papers.leret.method import (
    average_precision,
    build_preference_pairs,
    choose_next_trajectory,
    extend_context,
    recall,
)


@dataclass(frozen=True)
class HopState:
    """The input of one hop: a question, the context retrieved so far (hop order) and the hop
    (0-based). The policy turns it into its zero-shot or few-shot prompt."""

    question: int
    context: tuple[int, ...]
    hop: int


class Environment:
    """The multi-hop pipeline around a retriever: top-k documents per query, merged into the
    context (dedup, hop order), scored against the question's gold documents."""

    def __init__(self, task, retriever, top_k: int, hops: int):
        self.task, self.retriever, self.top_k, self.hops = task, retriever, top_k, hops

    def gold(self, question: int) -> set[int]:
        return set(self.task.questions[question].gold)

    def step(self, states: list[HopState], queries: list) -> list[tuple[int, ...]]:
        """The context after each state's query (one batched retrieval)."""
        retrieved = self.retriever.top_k(queries, self.top_k)
        return [extend_context(s.context, docs) for s, docs in zip(states, retrieved, strict=True)]


@dataclass
class CollectedData:
    """One iteration's training data (Sec. 3.3.3, 3.3.5): every hop's inputs pooled."""

    sft_states: list[HopState] = field(default_factory=list)
    sft_queries: list = field(default_factory=list)
    pair_states: list[HopState] = field(default_factory=list)
    chosen: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    inputs: int = 0  # hop inputs seen
    skipped: int = 0  # inputs whose queries all tied
    # per hop, per input: the best AP among its sampled queries (what the sampler explored)
    best_rewards: list[list[float]] = field(default_factory=list)

    def best_sampled_ap(self, hop: int) -> float:
        """Mean over hop ``hop``'s inputs (0-based) of the best AP any sampled query reached;
        NaN when no input reached that hop."""
        if hop >= len(self.best_rewards) or not self.best_rewards[hop]:
            return float("nan")
        return float(np.mean(self.best_rewards[hop]))


def collect_iteration(
    policy,
    env: Environment,
    questions: list[int],
    prompts: list,
    samples_per_prompt: int,
    temperature: float,
    top_bonus: float,
    rng: np.random.Generator,
) -> CollectedData:
    """Prompt-driven diverse sampling over ``questions`` (official
    ``create_preference_dataset.py``).

    Per hop and input: every prompt samples ``samples_per_prompt`` queries; each is scored by
    the AP of the context it leads to; the pairs between adjacent AP levels and the top-level
    SFT target are stored on the *zero-shot* input (the state, which carries no prompt:
    context distillation); one trajectory per question continues, chosen reward-
    proportionally with AP = 1 dropped (Sec. 3.3.4).
    """
    data = CollectedData()
    states = [HopState(q, (), 0) for q in questions]
    for hop in range(env.hops):
        if not states:
            break
        per_prompt = [
            policy.sample(states, prompt, samples_per_prompt, temperature, rng)
            for prompt in prompts
        ]
        queries = [[q for sampled in per_prompt for q in sampled[i]] for i in range(len(states))]
        flat_states = [s for s, qs in zip(states, queries, strict=True) for _ in qs]
        flat_contexts = env.step(flat_states, [q for qs in queries for q in qs])
        next_states, start = [], 0
        data.best_rewards.append([])
        for state, qs in zip(states, queries, strict=True):
            contexts = flat_contexts[start : start + len(qs)]
            start += len(qs)
            gold = env.gold(state.question)
            rewards = [average_precision(c, gold) for c in contexts]
            data.best_rewards[hop].append(max(rewards))
            prefs = build_preference_pairs(qs, rewards, policy.query_key, policy.is_valid)
            data.inputs += 1
            if prefs.sft_target is None:
                data.skipped += 1
            else:
                data.sft_states.append(state)
                data.sft_queries.append(prefs.sft_target)
                for better, worse in prefs.pairs:
                    data.pair_states.append(state)
                    data.chosen.append(better)
                    data.rejected.append(worse)
            chosen = choose_next_trajectory(rewards, rng, top_bonus)
            if chosen is not None and hop + 1 < env.hops:
                next_states.append(HopState(state.question, contexts[chosen], hop + 1))
        states = next_states
    return data


@dataclass
class Rollouts:
    """Greedy multi-hop rollouts: per question, the query and the context after each hop."""

    questions: list[int]
    queries: list[list]
    contexts: list[list[tuple[int, ...]]]


def rollout(policy, env: Environment, questions: list[int], prompt) -> Rollouts:
    """Run the pipeline greedily for ``env.hops`` hops (the paper's evaluation)."""
    states = [HopState(q, (), 0) for q in questions]
    queries: list[list] = [[] for _ in questions]
    contexts: list[list[tuple[int, ...]]] = [[] for _ in questions]
    for hop in range(env.hops):
        written = policy.greedy(states, prompt)
        after = env.step(states, written)
        for i, (q, c) in enumerate(zip(written, after, strict=True)):
            queries[i].append(q)
            contexts[i].append(c)
        states = [HopState(s.question, c, hop + 1) for s, c in zip(states, after, strict=True)]
    return Rollouts(list(questions), queries, contexts)


def retrieval_metrics(env: Environment, rollouts: Rollouts) -> dict[str, float]:
    """Recall and AP after the last hop (and recall after hop 1), means over questions."""
    gold = [env.gold(q) for q in rollouts.questions]
    final = [c[-1] for c in rollouts.contexts]
    return {
        "recall": float(np.mean([recall(c, g) for c, g in zip(final, gold, strict=True)])),
        "ap": float(np.mean([average_precision(c, g) for c, g in zip(final, gold, strict=True)])),
        "recall_hop1": float(
            np.mean([recall(c[0], g) for c, g in zip(rollouts.contexts, gold, strict=True)])
        ),
    }


def evaluate(policy, env: Environment, questions: list[int], prompt=None) -> dict[str, float]:
    return retrieval_metrics(env, rollout(policy, env, questions, prompt))


def bootstrap_prompts(
    policy,
    env: Environment,
    demo_questions: list[int],
    validation_questions: list[int],
    *,
    n_keep: int,
    demos_per_prompt: int,
    n_candidates: int,
    temperature: float,
    rng: np.random.Generator,
) -> tuple[list, list[float]]:
    """Bootstrapped few-shot prompt search (DSPy ``BootstrapFewShotWithRandomSearch``
    analogue, Sec. 3.3.1).

    The zero-shot policy runs once per demo question; a hop whose query adds a new gold
    document becomes a demo. ``n_candidates`` prompts of ``demos_per_prompt`` random demos are
    scored by greedy recall on the validation questions; the best ``n_keep`` are returned
    (best first) with every candidate's score.
    """
    demos = []
    states = [HopState(q, (), 0) for q in demo_questions]
    for hop in range(env.hops):
        written = [qs[0] for qs in policy.sample(states, None, 1, temperature, rng)]
        after = env.step(states, written)
        for state, query, context in zip(states, written, after, strict=True):
            new_gold = (set(context) - set(state.context)) & env.gold(state.question)
            if new_gold and policy.is_valid(query):
                demos.append(policy.make_demo(state, query))
        states = [HopState(s.question, c, hop + 1) for s, c in zip(states, after, strict=True)]
    candidates = [policy.make_prompt(demos, demos_per_prompt, rng) for _ in range(n_candidates)]
    scores = [evaluate(policy, env, validation_questions, p)["recall"] for p in candidates]
    best = np.argsort(-np.asarray(scores), kind="stable")[:n_keep]
    return [candidates[i] for i in best], scores
