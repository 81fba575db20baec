"""The retriever LeReT learns to query: BM25 through ``bm25s`` at both scales (brief Sec. 5.2, 6).

BM25 with the brief's formula: idf(t) = ln(1 + (N - df + 0.5)/(df + 0.5)) and
tf * (k1 + 1) / (tf + k1 (1 - b + b dl/avgdl)); a query is the *set* of its terms. ``bm25s``'s
``method="lucene"`` computes exactly this without the constant (k1 + 1) factor, so its scores
are multiplied by (k1 + 1) (same ranking; a unit test pins both against the hand formula).

* :class:`ToyRetriever` (300 synthetic documents): ``bm25s`` scores every vocabulary term once
  into a dense (terms x documents) matrix; a query is then a sum of rows, microseconds each,
  vectorised over a batch.
* :class:`TextRetriever` (paper scale, Wikipedia abstracts): ``bm25s`` over the passages,
  queries tokenised the same way (lower-case words, English stop words removed).

Ties are broken by document index, so retrieval is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

TOKEN_PATTERN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern


def _bm25(corpus_tokens: list[list[str]], k1: float, b: float) -> bm25s.BM25:
    index = bm25s.BM25(k1=k1, b=b, method="lucene", dtype="float64")
    index.index(corpus_tokens, show_progress=False)
    return index


def top_k_by_score(scores: np.ndarray, k: int) -> np.ndarray:
    """(B, N) scores -> (B, k) document indices, best first, ties to the lower index."""
    order = np.argsort(-scores, axis=-1, kind="stable")
    return order[..., :k]


class ToyRetriever:
    """BM25 over documents given as token-id lists; queries are token-id sequences."""

    def __init__(self, documents: Sequence[Sequence[int]], vocab_size: int, k1: float, b: float):
        index = _bm25([[str(t) for t in doc] for doc in documents], k1, b)
        self.n_docs = len(documents)
        # (V, N): BM25 contribution of term t to each document (0 for absent terms).
        self.term_weights = np.zeros((vocab_size, self.n_docs))
        present = {t for doc in documents for t in doc}
        for term in present:
            self.term_weights[term] = index.get_scores([str(term)]) * (k1 + 1.0)

    def scores(self, queries: Sequence[Sequence[int]]) -> np.ndarray:
        """(B, N) BM25 scores of each query (its distinct terms) against every document."""
        out = np.zeros((len(queries), self.n_docs))
        for row, query in enumerate(queries):
            terms = list(dict.fromkeys(query))
            if terms:
                out[row] = self.term_weights[terms].sum(axis=0)
        return out

    def top_k(self, queries: Sequence[Sequence[int]], k: int) -> list[list[int]]:
        """The k best documents per query (an empty query retrieves nothing)."""
        best = top_k_by_score(self.scores(queries), k)
        return [list(map(int, row)) if len(q) else [] for row, q in zip(best, queries, strict=True)]


def text_terms(text: str) -> list[str]:
    """Lower-case word tokens (bm25s's pattern) without English stop words."""
    return [t for t in TOKEN_PATTERN.findall(text.lower()) if t not in STOPWORDS_EN]


class TextRetriever:
    """BM25 over passages ("Title | text"); queries are strings."""

    def __init__(self, passages: Sequence[str], k1: float, b: float):
        self.k1 = k1
        self.index = _bm25([text_terms(p) for p in passages], k1, b)
        self.vocabulary = set(self.index.vocab_dict)

    def query_terms(self, query: str) -> list[str]:
        """The query's distinct indexed terms (a query with none is malformed)."""
        return [t for t in dict.fromkeys(text_terms(query)) if t in self.vocabulary]

    def top_k(self, queries: Sequence[str], k: int) -> list[list[int]]:
        out = []
        for query in queries:
            terms = self.query_terms(query)
            if not terms:
                out.append([])
                continue
            scores = self.index.get_scores(terms) * (self.k1 + 1.0)
            out.append(list(map(int, top_k_by_score(scores[None], k)[0])))
        return out
