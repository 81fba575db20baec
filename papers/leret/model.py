"""The toy's query-writing policy: a copy-only pointer network (brief Sec. 5.4).

At each hop the candidates are the distinct non-function tokens of the question and the
context; each gets 17 features phi(t) and a score s(t) = MLP(phi(t)). A query is m = 2
distinct candidates written one after another from softmax over the not-yet-chosen ones
(Plackett-Luce), so log pi(query) is a causal sequence log-likelihood and the SFT / IPO math
applies unchanged. A few-shot "prompt" adds a per-hop prior gamma <d_h, phi(t)> to the scores;
the zero-shot input (the one every loss trains on) has none.

It implements the same query-policy interface as the paper-scale causal LM
(``lm_policy.py``): ``sample``, ``greedy``, ``encode`` / ``sequence_log_probs``, ``query_key``,
``is_valid``, ``make_demo``, ``make_prompt``, ``with_module``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from papers.leret.collection import HopState
from papers.leret.data import RetrievalTask
from papers.leret.method import (
    plackett_luce_greedy,
    plackett_luce_log_prob,
    plackett_luce_sample,
)

N_FEATURES = 17
ENTITY, RELATION, FILLER = 1, 2, 3


class ScoreNet(nn.Module):
    """s = MLP(17 -> hidden -> hidden -> 1) with tanh."""

    def __init__(self, hidden: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(N_FEATURES, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features).squeeze(-1)  # (B, C, 17) -> (B, C)


@dataclass
class Candidates:
    """One hop input's candidate tokens and their features phi (C, 17)."""

    tokens: tuple[int, ...]
    features: np.ndarray


class Featurizer:
    """phi(t) for every candidate of a hop input (cached: inputs repeat across prompts)."""

    def __init__(self, task: RetrievalTask, hops: int):
        self.task, self.hops = task, hops
        kinds = task.kinds
        self.kinds = kinds
        n_docs = len(task.documents)
        df = np.zeros(len(kinds))
        for doc in task.documents:
            df[list(set(doc))] += 1
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        self.idf = idf / idf[df > 0].max()
        self.entity_offset = int(np.flatnonzero(kinds == ENTITY)[0])
        self.does = task.vocab.index("does")  # the comparison form opens with "does"
        self._cache: dict[HopState, Candidates] = {}

    def __call__(self, state: HopState) -> Candidates:
        if state not in self._cache:
            self._cache[state] = self._build(state)
        return self._cache[state]

    def _build(self, state: HopState) -> Candidates:
        question = self.task.questions[state.question].text
        docs = [self.task.documents[d] for d in state.context]
        content = [t for t in question if self.kinds[t] != 0]
        q_set = set(content)
        tokens = list(dict.fromkeys(content + [t for d in docs for t in d if self.kinds[t] != 0]))
        first_doc, follows = {}, set()
        for rank, doc in enumerate(docs):
            for i, t in enumerate(doc):
                first_doc.setdefault(t, rank)
                if i and doc[i - 1] in q_set:
                    follows.add(t)
        retrieved = set(state.context)
        later_hop = float(state.hop >= 1)
        comparison = float(question[0] == self.does)
        phi = np.zeros((len(tokens), N_FEATURES))
        for row, t in enumerate(tokens):
            in_q, follows_q = float(t in q_set), float(t in follows)
            phi[row, 0] = in_q
            phi[row, 1] = float(t in first_doc)
            phi[row, 1 + self.kinds[t]] = 1.0  # 2 entity, 3 relation, 4 filler
            if t in first_doc:
                phi[row, 5 + min(first_doc[t], 2)] = 1.0  # rank 1, 2, >= 3
            phi[row, 8] = follows_q
            is_entity = self.kinds[t] == ENTITY
            phi[row, 9] = float(is_entity and (t - self.entity_offset) in retrieved)
            phi[row, 10] = self.idf[t]
            phi[row, 11], phi[row, 12] = 1.0 - later_hop, later_hop
            phi[row, 13] = in_q * later_hop
            phi[row, 14] = follows_q * later_hop
            phi[row, 15] = 1.0
            phi[row, 16] = comparison
        return Candidates(tuple(tokens), phi)


@dataclass
class EncodedQueries:
    """Padded features, candidate mask and query positions of N (input, query) rows."""

    features: torch.Tensor  # (N, C, 17)
    mask: torch.Tensor  # (N, C) bool
    positions: torch.Tensor  # (N, m)

    def __len__(self) -> int:
        return self.features.shape[0]

    def select(self, rows) -> EncodedQueries:
        rows = torch.as_tensor(rows, dtype=torch.long)
        return EncodedQueries(self.features[rows], self.mask[rows], self.positions[rows])


def pad_candidates(cands: list[Candidates]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(c.tokens) for c in cands)
    features = np.zeros((len(cands), width, N_FEATURES), dtype=np.float32)
    mask = np.zeros((len(cands), width), dtype=bool)
    for row, c in enumerate(cands):
        features[row, : len(c.tokens)] = c.features
        mask[row, : len(c.tokens)] = True
    return torch.from_numpy(features), torch.from_numpy(mask)


class PointerPolicy:
    """The query-policy interface over a :class:`ScoreNet` (``module``)."""

    def __init__(self, module: ScoreNet, featurizer: Featurizer, m: int, prior_weight: float):
        self.module, self.featurizer = module, featurizer
        self.m, self.prior_weight = m, prior_weight

    def with_module(self, module: ScoreNet) -> PointerPolicy:
        return PointerPolicy(module, self.featurizer, self.m, self.prior_weight)

    # -- decoding
    @torch.no_grad()
    def _scores(
        self, states: list[HopState], prompt
    ) -> tuple[list[Candidates], torch.Tensor, torch.Tensor]:
        cands = [self.featurizer(s) for s in states]
        features, mask = pad_candidates(cands)
        self.module.eval()
        scores = self.module(features)
        if prompt is not None:  # few-shot prior gamma <d_h, phi(t)>, the hop's demo summary
            priors = torch.as_tensor(np.stack([prompt[s.hop] for s in states]), dtype=scores.dtype)
            scores = scores + torch.einsum("bcf,bf->bc", features, priors)
        return cands, scores, mask

    def sample(self, states, prompt, n: int, temperature: float, rng: np.random.Generator):
        """n queries per input at temperature T: list (inputs) of lists (n) of token tuples."""
        if not states:
            return []
        cands, scores, mask = self._scores(states, prompt)
        m = min(self.m, int(mask.sum(-1).min()))
        picks = plackett_luce_sample(scores.double(), mask, m, n, temperature, rng)
        return [
            [tuple(c.tokens[i] for i in query) for query in row.tolist()]
            for c, row in zip(cands, picks, strict=True)
        ]

    def greedy(self, states, prompt):
        if not states:
            return []
        cands, scores, mask = self._scores(states, prompt)
        picks = plackett_luce_greedy(scores, mask, min(self.m, int(mask.sum(-1).min())))
        return [
            tuple(c.tokens[i] for i in row) for c, row in zip(cands, picks.tolist(), strict=True)
        ]

    # -- training (always the zero-shot input: no prior, brief Sec. 3.5 / 7.8)
    def encode(self, states: list[HopState], queries: list[tuple[int, ...]]) -> EncodedQueries:
        cands = [self.featurizer(s) for s in states]
        features, mask = pad_candidates(cands)
        positions = torch.tensor(
            [[c.tokens.index(t) for t in q] for c, q in zip(cands, queries, strict=True)]
        )
        return EncodedQueries(features, mask, positions)

    def sequence_log_probs(self, module: nn.Module, batch: EncodedQueries) -> torch.Tensor:
        """log pi(query | zero-shot input), (B,)."""
        return plackett_luce_log_prob(module(batch.features), batch.mask, batch.positions)

    # -- queries and prompts
    @staticmethod
    def query_key(query: tuple[int, ...]):
        return frozenset(query)  # a query is the set of its tokens for the retriever

    @staticmethod
    def is_valid(query: tuple[int, ...]) -> bool:
        return len(query) > 0

    def make_demo(self, state: HopState, query: tuple[int, ...]) -> tuple[int, np.ndarray]:
        """A demo: (hop, mean phi of its chosen tokens - mean phi of all its candidates)."""
        c = self.featurizer(state)
        chosen = [c.tokens.index(t) for t in query]
        return state.hop, c.features[chosen].mean(0) - c.features.mean(0)

    def make_prompt(self, demos: list[tuple[int, np.ndarray]], k: int, rng: np.random.Generator):
        """A prompt: per hop, gamma x the mean of k demos of that hop drawn at random
        (zero where a hop has no demo). Shape (hops, 17)."""
        prior = np.zeros((self.featurizer.hops, N_FEATURES))
        for hop in range(self.featurizer.hops):
            pool = [d for h, d in demos if h == hop]
            if pool:
                picks = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
                prior[hop] = self.prior_weight * np.mean([pool[i] for i in picks], axis=0)
        return prior


def smoothed_plackett_luce_loss(
    scores: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    target_weight: float,
) -> torch.Tensor:
    """Label-smoothed Plackett-Luce cross-entropy of the base's habit (brief Sec. 5.4).

    At each step the target token gets ``target_weight``, the rest is spread uniformly over the
    other remaining candidates, so the base keeps exploration mass. (B,) losses.
    """
    available = mask.clone()
    rows = torch.arange(scores.shape[0])
    total = scores.new_zeros(scores.shape[0])
    for step in range(target.shape[1]):
        log_p = torch.log_softmax(scores.masked_fill(~available, -math.inf), dim=-1)
        log_p = log_p.masked_fill(~available, 0.0)
        others = available.clone()
        others[rows, target[:, step]] = False
        n_others = others.sum(-1).clamp(min=1)
        weights = others.float() * ((1.0 - target_weight) / n_others).unsqueeze(-1)
        weights[rows, target[:, step]] = target_weight
        total = total - (weights * log_p).sum(-1)
        available = available.clone()
        available[rows, target[:, step]] = False
    return total
