"""EM-LLM on a Hugging Face Llama-family model: the memory attention swapped into every
decoder layer, and the chunked reading of a document (brief Sec. 3, official
``em_llm/attention/em_llm.py`` and ``utils/greedy_search.py``).

- :func:`attach_memory_attention` replaces each layer's ``self_attn`` by an
  :class:`EMAttention` that reuses its q/k/v/o projections (same parameter names, so the
  model's weights load unchanged). Without a memory it runs the original attention (full
  causal attention); with a :class:`~papers.em_llm.memory.LayerMemory` it runs the chunked
  memory attention.
- :func:`read_document` feeds a document chunk by chunk (the last token alone), computes the
  surprise of every token from the model's own logits, places the shared event boundaries and
  lets every layer's memory form events. The same code runs the toy Llama and a local
  Mistral / Llama checkpoint (:func:`load_local_model`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from transformers import LlamaForCausalLM

from papers.em_llm.config import MemoryConfig, ModelConfig
from papers.em_llm.memory import LayerMemory
from papers.em_llm.method import (
    key_similarity,
    next_token_surprise,
    official_threshold_span,
    refine_boundaries,
    surprise_boundaries,
    token_surprise,
)
from shared.llama import (
    SwappedAttention,
    decoder_layers,
    load_local_causal_lm,
    swap_attention,
    swapped_attentions,
    tiny_llama,
)

# keyed by config.DTYPES (tests/papers/em_llm checks the keys)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# --------------------------------------------------------------------------- models


def build_toy_model(cfg: ModelConfig) -> LlamaForCausalLM:
    """A randomly initialised tiny Llama (brief Sec. 5: 2 layers, d = 64, 4 heads, RoPE base
    1e4, RMSNorm pre-norm, SiLU MLP 64 -> 256 -> 64, untied head). Linear and embedding
    weights get PyTorch's default initialisation (see README, Deviations). Seed torch first."""
    return tiny_llama(cfg, torch_default_init=True)


def load_local_model(path: str | Path, dtype: str = "float32"):
    """A local Mistral / Llama checkpoint folder (``from_pretrained(..., local_files_only=True)``,
    never downloads). Raises ``FileNotFoundError`` when the folder or its config is absent."""
    if dtype not in DTYPES:
        raise ValueError(f"model.dtype must be one of {sorted(DTYPES)}, not {dtype!r}")
    return load_local_causal_lm(path, dtype=DTYPES[dtype])


# --------------------------------------------------------------------------- attention


class EMAttention(SwappedAttention):
    """A Llama / Mistral ``self_attn`` that reads from an episodic memory when one is set.

    ``memory is None``: the original module's forward (full causal attention with RoPE).
    Otherwise (batch 1): un-rotated q, k, v of the chunk go to ``memory.attend`` (brief Sec.
    3.1), whose output goes through the original output projection.
    """

    def __init__(self, base: nn.Module):
        super().__init__(base)  # q/k/v/o taken over; the original forward stays in self.base
        self.memory: LayerMemory | None = None

    def forward(self, hidden_states: Tensor, *args, **kwargs) -> tuple[Tensor, None]:
        if self.memory is None:
            return self.base(hidden_states, *args, **kwargs)
        b, c = hidden_states.shape[:2]
        if b != 1:
            raise ValueError(f"the memory attention reads one document at a time, got batch {b}")
        shape = (c, -1, self.head_dim)
        q = self.q_proj(hidden_states[0]).view(shape).transpose(0, 1)  # (H, c, d)
        k = self.k_proj(hidden_states[0]).view(shape).transpose(0, 1)  # (H_kv, c, d)
        v = self.v_proj(hidden_states[0]).view(shape).transpose(0, 1)
        out = self.memory.attend(q, k, v)  # (H, c, d)
        return self.o_proj(out.transpose(0, 1).reshape(1, c, -1)), None


def attach_memory_attention(model: nn.Module) -> nn.Module:
    """Swap every decoder layer's attention for an :class:`EMAttention` in place (idempotent)."""
    swap_attention(model, EMAttention, EMAttention)
    return model


def memory_attentions(model: nn.Module) -> list[EMAttention]:
    attentions = swapped_attentions(model, EMAttention)
    if len(attentions) != len(decoder_layers(model)):
        raise ValueError("call attach_memory_attention(model) first")
    return attentions


def rotary_of(model: nn.Module):
    """positions -> (cos, sin), each (n, d): the model's own rotary embedding (any RoPE
    scaling the checkpoint configures, e.g. Llama-3.1's, is applied by it)."""
    rotary = model.model.rotary_emb
    probe = torch.zeros(1, dtype=torch.float32, device=model.device)

    def cos_sin(positions: Tensor) -> tuple[Tensor, Tensor]:
        cos, sin = rotary(probe, positions.to(model.device)[None])
        return cos[0].cpu(), sin[0].cpu()

    return cos_sin


# --------------------------------------------------------------------------- reading a document


@dataclass
class Reading:
    """What reading one document produced."""

    last_logits: Tensor  # (V,) next-token logits after the last token
    surprise: Tensor  # (T,) per-token surprise, NaN for token 0
    boundaries: list[int]  # shared event starts (absolute positions)
    events: list[tuple[int, int]]  # layer 0's stored events
    peak_keys: list[int]  # per layer: most keys in one attention
    memories: list[LayerMemory]
    generated: list[int]  # greedy continuation (paper scale), empty by default


def check_document(ids: Tensor, max_tokens: int) -> None:
    """Refuse an empty document or one longer than ``memory.max_tokens``, naming the limit."""
    if ids.dim() != 1:
        raise ValueError(f"a document is a 1-D tensor of token ids, got shape {tuple(ids.shape)}")
    if ids.numel() == 0:
        raise ValueError("empty document: it needs at least one token")
    if ids.numel() > max_tokens:
        raise ValueError(
            f"document of {ids.numel()} tokens exceeds memory.max_tokens={max_tokens}; "
            "raise memory.max_tokens or truncate the document"
        )


def chunk_spans(length: int, chunk: int) -> list[tuple[int, int]]:
    """Execution blocks of ``chunk`` tokens, with the last token alone (its query retrieves
    for the answer, as the official decoding does)."""
    spans = [(s, min(s + chunk, length - 1)) for s in range(0, length - 1, chunk)]
    return spans + [(length - 1, length)]


def refine_chunk_boundaries(
    memories: list[LayerMemory],
    cfg: MemoryConfig,
    boundaries: list[int],
    new: list[int],
    start: int,
) -> list[int]:
    """The "M" variant online (brief Sec. 3.3): refine the chunk's new boundaries on the
    key-similarity graph of the chunk's tokens (prefixed by the tail after the last earlier
    boundary when ``refine_with_buffer``), A summed over layers >= refine_from_layer.

    ``official_refine`` (official ``em_llm.py``): the prefix is the tail after the last
    boundary inside the previous c' tokens (c' = this chunk's length), only once the remainder
    holds >= 2 c' tokens, else none; the refinement follows the official rules
    (:func:`~papers.em_llm.method.refine_boundaries` with ``offset``).
    """
    end = memories[0].length
    prefix = start
    if cfg.official_refine:
        length = end - start
        if cfg.refine_with_buffer and end - memories[0].rem_start >= 2 * length:
            before = bisect_left(boundaries, start)  # boundaries are sorted
            tail = boundaries[bisect_left(boundaries, start - length) : before]
            prefix = tail[-1] if tail else start
    elif cfg.refine_with_buffer:
        before = bisect_left(boundaries, start)
        prefix = max(boundaries[before - 1] if before else 0, memories[0].rem_start)
    keys = torch.stack([m.keys[:, prefix:end].float() for m in memories[cfg.refine_from_layer :]])
    adjacency = key_similarity(keys)  # (n, n)
    offset = start - prefix if cfg.official_refine else None
    refined = refine_boundaries(
        adjacency, [b - prefix for b in new], cfg.min_block, cfg.refine, offset
    )
    return [b + prefix for b in refined]


def chunk_boundaries(
    memories: list[LayerMemory],
    cfg: MemoryConfig,
    surprise: Tensor,
    boundaries: list[int],
    start: int,
    end: int,
) -> list[int]:
    """The shared boundaries after chunk [start, end) (brief Sec. 3.2-3.3): its surprise
    boundaries (threshold per token, per chunk or the official window), refined when
    ``cfg.refine``, merged into the earlier ``boundaries``. Called after every layer has
    attended the chunk and before the memories' update."""
    span = None
    if cfg.official_threshold:
        span = official_threshold_span(
            start, end, cfg.n_local, cfg.n_init, memories[0].rem_start, cfg.refine is not None
        )
    new = surprise_boundaries(
        surprise,
        start,
        end,
        cfg.gamma,
        cfg.threshold_window,
        cfg.threshold_per_chunk,
        cfg.official_shift,
        span,
    )
    if cfg.refine is not None and new:
        new = refine_chunk_boundaries(memories, cfg, boundaries, new, start)
    if not new:
        return boundaries
    # merged into the sorted list from the first new one on (the earlier part is unchanged)
    cut = bisect_left(boundaries, min(new))
    return boundaries[:cut] + sorted(set(boundaries[cut:]) | set(new))


def chunk_logits(model: nn.Module, ids: Tensor, last_only: bool = False) -> Tensor:
    """(1, c, V) logits of one chunk read through the memory attention (the last position
    alone with ``last_only``): the same modules in the same order as ``model(input_ids=ids)``,
    so the same numbers, without the wrapper's work that the memory attention never reads
    (causal mask, rotary tables, output capture). A reading calls this once per chunk of 8
    tokens, where that work cost as much as the layers themselves (issue 44)."""
    inner = model.model
    hidden = inner.embed_tokens(ids)
    for layer in decoder_layers(model):  # EMAttention with a memory ignores mask and positions
        hidden = layer(hidden)
    hidden = inner.norm(hidden)
    return model.lm_head(hidden[:, -1:] if last_only else hidden)


@torch.no_grad()
def read_document(
    model: nn.Module,
    ids: Tensor,
    cfg: MemoryConfig,
    sliding_window: bool = False,
    max_new_tokens: int = 0,
    eos: int | None = None,
    score_surprise: bool = True,
) -> Reading:
    """Read ``ids`` through the memory attention of an attached model (brief Sec. 3).

    Per chunk: forward pass (every layer attends through its memory), surprise of the chunk's
    tokens from the logits (the first one from the previous chunk's last logits), surprise
    boundaries over past statistics (skipped for InfLLM's uniform blocks and the sliding
    window), optional refinement, then every layer's memory update with the shared boundaries.
    With ``max_new_tokens``, greedy decoding continues one token per step through the same
    memory (until ``eos``). ``score_surprise=False`` (a baseline that places no boundaries):
    the model computes only each chunk's last logits and the surprise stays NaN.
    """
    ids = torch.as_tensor(ids).cpu()
    check_document(ids, cfg.max_tokens)
    attentions = memory_attentions(model)
    if cfg.refine is not None and not 0 <= cfg.refine_from_layer < len(attentions):
        raise ValueError(
            f"refine_from_layer={cfg.refine_from_layer} but the model has {len(attentions)} layers"
        )
    rotary = rotary_of(model)
    memories = [  # the document's length is known: storage allocated once, never doubled
        LayerMemory(
            cfg,
            rotary,
            a.scaling,
            a.num_key_value_groups,
            sliding_window,
            reserve_tokens=ids.numel() + max_new_tokens,
        )
        for a in attentions
    ]
    surprise = torch.full((ids.numel(),), float("nan"))
    boundaries: list[int] = []
    previous_logits = None
    detect = not (cfg.uniform_blocks or sliding_window)
    if detect and not score_surprise:
        raise ValueError("surprise boundaries need score_surprise=True")
    precision = torch.float64 if cfg.exact_order else torch.float32
    try:
        for attention, memory in zip(attentions, memories, strict=True):
            attention.memory = memory
        spans = chunk_spans(ids.numel(), cfg.chunk)
        generated: list[int] = []
        step = 0
        while step < len(spans):
            s, e = spans[step]
            step += 1
            chunk_ids = ids[None, s:e].to(model.device)
            logits = chunk_logits(model, chunk_ids, last_only=not score_surprise)[0].float().cpu()
            if not score_surprise:
                pass
            elif cfg.official_shift:  # official labels input_ids[s + 1: e + 1], this chunk's
                hi = min(e + 1, ids.numel())  # (none for the last token and generated ones)
                surprise[s + 1 : hi] = next_token_surprise(logits, ids[s + 1 : hi], precision)
            elif previous_logits is None:
                surprise[s + 1 : e] = token_surprise(logits, ids[s:e], precision)
            else:
                surprise[s:e] = token_surprise(
                    torch.cat([previous_logits[None], logits]), ids[s - 1 : e], precision
                )
            previous_logits = logits[-1]
            if detect:
                boundaries = chunk_boundaries(memories, cfg, surprise, boundaries, s, e)
            for memory in memories:  # only boundaries after its remainder start can cut
                memory.update(boundaries[bisect_right(boundaries, memory.rem_start) :])
            if step == len(spans) and len(generated) < max_new_tokens:  # greedy decoding, c = 1
                token = int(previous_logits.argmax())
                if token != eos:
                    generated.append(token)
                    ids = torch.cat([ids, torch.tensor([token], dtype=ids.dtype)])
                    surprise = torch.cat([surprise, torch.full((1,), float("nan"))])
                    spans.append((e, e + 1))
    finally:
        for attention in attentions:
            attention.memory = None
    return Reading(
        last_logits=previous_logits,
        surprise=surprise,
        boundaries=boundaries,
        events=list(memories[0].events),
        peak_keys=[m.peak_keys for m in memories],
        memories=memories,
        generated=generated,
    )


@torch.no_grad()
def full_attention_logits(model: nn.Module, ids: Tensor) -> Tensor:
    """(T, V) logits of plain full causal attention over the whole document."""
    ids = torch.as_tensor(ids)
    return model(input_ids=ids[None].to(model.device), use_cache=False).logits[0].float().cpu()
