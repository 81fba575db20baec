"""EM-LLM's real rung (``scale=real``): the pretrained SmolLM2-135M (shared.pretrained, a
30-layer Llama with an 8,192-token window) read through the training-free episodic memory, as
the paper runs Mistral / LLaMA (no fine-tuning).

* Pass-key retrieval (the paper's filler-text protocol, :func:`~papers.em_llm.data.
  passkey_prompt`): documents of 2x and 4x the model's window, the needle at a random depth in
  [min_depth, max_depth]; EM-LLM (surprise events, similarity retrieval) against a sliding
  window of the same local size, and the model's full attention inside its window (the
  ceiling). Score: the greedy answer contains the pass key.
* Segmentation of the real test documents (``pretrained.corpus("test")``): the surprise events
  EM-LLM stores (S), their offline refinement by modularity (SM) and as many evenly spaced
  boundaries (fixed), scored by modularity and conductance of the key-similarity graph
  (paper Sec. 4.2, Table 2's metrics).
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import torch
from torch import Tensor

from papers.em_llm.config import Config, RealConfig
from papers.em_llm.data import PASSKEY_FILLER, passkey_prompt
from papers.em_llm.method import (
    conductance,
    evenly_spaced,
    key_similarity,
    modularity,
    refine_boundaries,
)
from papers.em_llm.model import attach_memory_attention, read_document
from shared import pretrained
from shared.experiment import RunOutput

PASSKEY_METHODS = ("full", "sliding_window", "em_llm")
# the segmentation's three partitions, by method name: S, SM (refined), fixed
SEGMENTATIONS = {"em_llm": "S", "em_llm_sm": "SM", "fixed_segmentation": "fixed"}


@dataclasses.dataclass
class PasskeyDocument:
    ids: list[int]
    passkey: str
    depth: float


def check_real(cfg: RealConfig) -> None:
    """Refuse settings the protocol cannot run, naming the key."""
    if cfg.documents < 1:
        raise ValueError(f"real.documents must be >= 1, got {cfg.documents}")
    if not 0.0 <= cfg.min_depth <= cfg.max_depth <= 1.0:
        raise ValueError(
            f"need 0 <= real.min_depth <= real.max_depth <= 1, got {cfg.min_depth}, {cfg.max_depth}"
        )
    for name in ("passkey_lengths", "full_lengths"):
        lengths = getattr(cfg, name)
        if any(n < 64 for n in lengths.values()):
            raise ValueError(f"real.{name} must be token counts >= 64, got {dict(lengths)}")


def passkey_documents(tokenizer, length: int, cfg: RealConfig, seed: int) -> list[PasskeyDocument]:
    """``cfg.documents`` pass-key documents of ``length`` tokens with the answer: the most
    filler sentences for which prompt + ``new_tokens`` fits in ``length`` (so each is within
    one filler unit of it), each with its own 5-digit key and depth from
    ``random.Random(f"{seed}-{length}")``."""
    rng = random.Random(f"{seed}-{length}")
    budget = length - cfg.new_tokens

    def tokens(n_filler: int, depth: float, key: int) -> list[int]:
        return tokenizer(passkey_prompt(n_filler, depth, key)[0])["input_ids"]

    # marginal tokens of one more filler sentence inside the text (merges at its edges)
    unit = len(tokenizer(PASSKEY_FILLER * 2)["input_ids"]) - len(
        tokenizer(PASSKEY_FILLER)["input_ids"]
    )
    docs = []
    for _ in range(cfg.documents):
        depth, key = rng.uniform(cfg.min_depth, cfg.max_depth), rng.randint(10000, 99999)
        n_filler = max(1, (budget - len(tokens(0, depth, key))) // unit)
        ids = tokens(n_filler, depth, key)
        while len(ids) > budget and n_filler > 1:
            n_filler -= 1
            ids = tokens(n_filler, depth, key)
        while len(more := tokens(n_filler + 1, depth, key)) <= budget:
            n_filler, ids = n_filler + 1, more
        docs.append(PasskeyDocument(ids, str(key), depth))
    return docs


@torch.no_grad()
def greedy_cached(lm, ids: list[int], new_tokens: int, eos: int | None) -> list[int]:
    """Greedy answer of plain full attention, the prompt's keys and values cached."""
    out = lm(input_ids=torch.tensor([ids]), use_cache=True, logits_to_keep=1)
    generated: list[int] = []
    for _ in range(new_tokens):
        token = int(out.logits[0, -1].argmax())
        if token == eos:
            break
        generated.append(token)
        out = lm(
            input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True
        )
    return generated


class RealReader:
    """The model and tokenizer every real job reads with (loaded once; forked workers
    inherit them), and the jobs themselves."""

    def __init__(self, cfg: Config):
        check_real(cfg.real)
        self.cfg = cfg
        model, self.tokenizer = pretrained.load_model(cfg.model.path)  # None: SmolLM2
        model.requires_grad_(False)
        self.lm = attach_memory_attention(model)

    def jobs(self, methods: list[str], seeds: list[int]) -> list[tuple]:
        """Every document any method reads, the most expensive first (so that workers finish
        together): ("passkey", method, seed, length, index) and ("segmentation", index)."""
        r = self.cfg.real
        jobs = []
        for method in methods:
            if method not in PASSKEY_METHODS:
                continue
            lengths = r.full_lengths if method == "full" else r.passkey_lengths
            jobs += [
                ("passkey", method, seed, n, i)
                for seed in seeds
                for n in lengths.values()
                for i in range(r.documents)
            ]
        if any(m in SEGMENTATIONS for m in methods):
            jobs += [("segmentation", i) for i in range(len(self.segmentation_texts()))]
        weight = {"em_llm": 1.4, "sliding_window": 1.0, "full": 1.0}  # relative cost per token
        return sorted(
            jobs,
            key=lambda j: -(j[3] * weight[j[1]] if j[0] == "passkey" else r.segmentation_tokens),
        )

    def run(self, kind: str, *job) -> object:
        if kind == "passkey":
            method, seed, length, index = job
            doc = passkey_documents(self.tokenizer, length, self.cfg.real, seed)[index]
            return doc.passkey in self.answer(method, doc)
        return segment_document(
            self.lm, self.tokenizer, self.segmentation_texts()[job[0]], self.cfg
        )

    def segmentation_texts(self) -> list[str]:
        folder = self.cfg.real.corpus_path
        texts = list(
            (pretrained.corpus_folder(folder) if folder else pretrained.corpus("test")).values()
        )
        n = self.cfg.real.segmentation_documents
        return texts if n < 0 else texts[:n]

    def answer(self, method: str, doc: PasskeyDocument) -> str:
        new, eos = self.cfg.real.new_tokens, self.tokenizer.eos_token_id
        if method == "full":
            generated = greedy_cached(self.lm, doc.ids, new, eos)
        else:
            sliding = method == "sliding_window"
            reading = read_document(
                self.lm,
                torch.tensor(doc.ids),
                self.cfg.memory,
                sliding_window=sliding,
                max_new_tokens=new,
                eos=eos,
                score_surprise=not sliding,
            )
            generated = reading.generated
        return self.tokenizer.decode(generated, skip_special_tokens=True)


def segmentation_partitions(
    lm, tokenizer, text: str, cfg: Config
) -> tuple[Tensor, dict[str, list[int]]] | None:
    """The key-similarity graph of one test document and its S, SM and fixed partitions.

    Its first ``real.segmentation_tokens`` tokens are read by EM-LLM (the memory of
    ``cfg.memory``); over the region its events cover, the graph is A = sum_{l >= l0, h} K K^T
    of the keys it stored (l0 = ``memory.refine_from_layer``, as the refinement's); S = its
    event starts, SM = S refined by ``eval.refine_metric`` on the whole region (paper
    Algorithm 1), fixed = as many evenly spaced starts (all relative to the region's start).
    None when the document formed fewer than two events."""
    ids = torch.tensor(tokenizer(text)["input_ids"][: cfg.real.segmentation_tokens])
    reading = read_document(lm, ids, cfg.memory)
    if len(reading.events) < 2:
        return None
    begin, end = reading.events[0][0], reading.events[-1][1]
    surprise_starts = [b - begin for b, _ in reading.events[1:]]
    layers = reading.memories[cfg.memory.refine_from_layer :]
    adjacency = key_similarity(torch.stack([m.keys[:, begin:end] for m in layers]))
    return adjacency, {
        "S": surprise_starts,
        "SM": refine_boundaries(
            adjacency, surprise_starts, cfg.eval.refine_min_block, cfg.eval.refine_metric
        ),
        "fixed": evenly_spaced(0, end - begin, len(surprise_starts)),
    }


def segment_document(lm, tokenizer, text: str, cfg: Config) -> dict[str, dict[str, float]] | None:
    """Modularity and conductance (paper Eq. 3, 4) of the S, SM and fixed partitions of one
    test document (:func:`segmentation_partitions`); None when it formed fewer than two
    events."""
    graph = segmentation_partitions(lm, tokenizer, text, cfg)
    if graph is None:
        return None
    adjacency, partitions = graph
    return {
        name: {
            "modularity": modularity(adjacency, starts),
            "conductance": conductance(adjacency, starts),
            "events": float(len(starts) + 1),
        }
        for name, starts in partitions.items()
    }


def real_metrics(method: str, seed: int, cfg: Config, done: dict[tuple, object]) -> RunOutput:
    """One method's metrics from the finished jobs: one per configured length (the share of
    documents whose greedy answer holds the key) and, for a segmentation, the mean modularity,
    conductance and event count over the test documents."""
    metrics: dict[str, float] = {}
    r = cfg.real
    if method in PASSKEY_METHODS:
        lengths = r.full_lengths if method == "full" else r.passkey_lengths
        for name, n in lengths.items():
            correct = [done[("passkey", method, seed, n, i)] for i in range(r.documents)]
            metrics[name] = float(np.mean(correct))
    if method in SEGMENTATIONS:
        rows = [v[SEGMENTATIONS[method]] for k, v in done.items() if k[0] == "segmentation" and v]
        if not rows:
            raise ValueError(
                "no test document formed two events: raise real.segmentation_tokens above "
                f"memory.n_local={cfg.memory.n_local}"
            )
        for name in rows[0]:
            metrics[name] = float(np.mean([row[name] for row in rows]))
    return RunOutput(metrics=metrics)
