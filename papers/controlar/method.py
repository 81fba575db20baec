"""ControlAR: conditional decoding for controllable autoregressive image generation.

Li, Cheng, Chen, Sun, Shen, Ran, Chen, Liu, Wang. ICLR 2025, arXiv 2410.02705.
Official code: hustvl/ControlAR (Apache-2.0), built on LlamaGen.

An AR image model predicts VQ tokens x_1..x_N in raster order. ControlAR encodes the control
image into exactly one control token c_t per image-token position and, before three evenly
spaced transformer blocks, *adds* FusionMLP_j(c_t) to the hidden state at the position that
predicts x_t (conditional decoding, brief Sec. 3.2), so p(x) = prod_t p(x_t | x_<t, c_<=t)
and the sequence length stays P + N - 1. The baseline it argues against prefills the N
control tokens as a second prefix (Sec. 3.4), doubling the sequence.

This file holds the contribution and nothing else: the injection schedule, the alignment of
control tokens to predicting positions (one function for training, cached and uncached
decoding), the bias-free MLPs, joint class/control dropping, classifier-free guidance with a
zero-control branch, and the cached sampling loop (Sec. 3.3), written against a small model
interface that both the toy GPT-2 and the paper-scale LlamaGen model implement
(``papers/controlar/model.py``). Deviations from the paper are listed in the README.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

VARIANTS = ("cond", "prefill", "none")


# ------------------------------------------------------------------ the injection schedule


def injection_layers(n_layers: int) -> list[int]:
    """Blocks that receive the control: every l with l mod floor(L / 3) = 0 (Sec. 3.2), i.e.
    0, L/3, 2L/3 for L divisible by 3 (official ``gpt.py``: ``i % (n_layer // 3) == 0``)."""
    if n_layers < 3:
        raise ValueError(f"conditional decoding needs >= 3 blocks (L // 3 >= 1), got {n_layers}")
    step = n_layers // 3
    return [layer for layer in range(n_layers) if layer % step == 0]


def sequence_length(variant: str, prefix_length: int, n_tokens: int) -> int:
    """Transformer input length in training: P + N - 1 for conditional decoding and no
    control, P + 2N - 1 when the N control tokens are prefilled (Sec. 3.2, 3.4)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")
    extra = n_tokens if variant == "prefill" else 0
    return prefix_length + extra + n_tokens - 1


def control_index(position: int, prefix_length: int) -> int:
    """Index into the 0-based control array c (entry 0 = c_1) of the control token added at
    0-based sequence position ``position`` (Sec. 3.7 item 5): the last prefix position P - 1
    predicts x_1 and gets c_1; the input position of x_{t-1} predicts x_t and gets c_t. A
    negative result means "no control here" (earlier prefix positions)."""
    return position - prefix_length + 1


def align_controls(control: Tensor, start: int, length: int, prefix_length: int) -> Tensor:
    """Control tokens laid out on sequence positions [start, start + length).

    Row p of the result holds c[control_index(p, P)] (zeros where no control token belongs):
    the token being predicted at p sees its *own* control token (Sec. 3.2, 3.7 item 1). The
    same function serves training (start = 0, the whole sequence), the cache-filling prefill
    (start = 0, the prefix) and every cached decode step (start = position, length 1).

    Args:
        control: (B, N, D) control tokens c_1..c_N.
    Returns:
        (B, length, D) aligned control, zero outside the predicting positions.
    """
    batch, n_tokens, dim = control.shape
    aligned = control.new_zeros(batch, length, dim)
    first = control_index(start, prefix_length)
    lo, hi = max(first, 0), min(first + length, n_tokens)  # control entries in this window
    if hi > lo:
        aligned[:, lo - first : hi - first] = control[:, lo:hi]
    return aligned


def inject_control(hidden: Tensor, fusion: nn.Module, aligned: Tensor, strength: float = 1.0):
    """h <- h + strength * FusionMLP(c_aligned), before an injection block (Sec. 3.2; the t2i
    model's ``control_strength``). Bias-free MLPs keep rows without a control exactly 0."""
    return hidden + strength * fusion(aligned)  # (B, T, D)


# ------------------------------------------------------------------ the control MLPs


class BiasFreeMLP(nn.Module):
    """Linear(in -> hidden) - GELU(tanh) - Linear(hidden -> out), no biases (official
    ``MLP``): a zero input maps to exactly zero, so a zero control adds nothing (Sec. 3.1).

    Note (Sec. 3.7 item 4): zero-initialising *both* layers would block every gradient; the
    official code's N(0, 0.02) init overrides the constructors' zero init anyway.
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden_dim, bias=False)
        self.fc2 = nn.Linear(hidden_dim, out_dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class ControlProjection(nn.Module):
    """Control features -> control tokens: ``adapter_mlp`` (in -> dim -> dim) then
    ``condition_mlp`` (dim -> dim -> dim), both bias-free (Sec. 3.1)."""

    def __init__(self, in_dim: int, dim: int):
        super().__init__()
        self.adapter_mlp = BiasFreeMLP(in_dim, dim, dim)
        self.condition_mlp = BiasFreeMLP(dim, dim, dim)

    def forward(self, features: Tensor) -> Tensor:
        return self.condition_mlp(self.adapter_mlp(features))  # (B, N, dim)


def fusion_mlps(dim: int, n_layers: int) -> nn.ModuleList:
    """One separate FusionMLP (dim -> dim -> dim, GELU, no bias) per injection block."""
    return nn.ModuleList(BiasFreeMLP(dim, dim, dim) for _ in injection_layers(n_layers))


def joint_drop_mask(batch: int, p: float, generator: torch.Generator | None = None) -> Tensor:
    """(B,) bool: samples whose class/text condition is dropped for CFG (prob p); the same
    mask zeroes their control features (joint dropping, Sec. 3.1 and 3.7 item 3)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"condition dropout must lie in [0, 1), got {p}")
    if p == 0.0:
        return torch.zeros(batch, dtype=torch.bool)
    return torch.rand(batch, generator=generator) < p


def drop_controls(features: Tensor, dropped: Tensor) -> Tensor:
    """Control features with the rows of dropped samples replaced by zeros."""
    return features * (~dropped).to(features.dtype).view(-1, *([1] * (features.dim() - 1)))


# ------------------------------------------------------------------ loss and guidance


def image_token_loss(logits: Tensor, tokens: Tensor) -> Tensor:
    """Mean cross-entropy over the N image tokens only; prefix outputs are not scored.

    Args:
        logits: (B, N, V) outputs at the N predicting positions.
        tokens: (B, N) targets x_1..x_N.
    """
    return F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())


def guided_logits(conditional: Tensor, unconditional: Tensor, scale: float) -> Tensor:
    """Classifier-free guidance, logits = u + s (c - u) (Sec. 3.3 step 4); s = 1 returns c."""
    return unconditional + scale * (conditional - unconditional)


def filter_logits(logits: Tensor, top_k: int | None, top_p: float) -> Tensor:
    """Top-k then nucleus filtering (-inf outside), as LlamaGen's ``top_k_top_p_filtering``."""
    if top_k is not None and 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        remove = cumulative - sorted_logits.softmax(-1) > top_p  # keep the first above top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits


# ------------------------------------------------------------------ models and sampling


class ControlARModel(Protocol):
    """What the sampler and the losses need from a model (toy GPT-2 or LlamaGen).

    ``control`` is None for the no-control model; ``condition`` is the class index (c2i) or
    None for the unconditional toy.
    """

    variant: str
    prefix_length: int  # P_total: positions before e(x_1) (1, or N + 1 when prefilling)

    def control_tokens(self, control_maps: Tensor, dropped: Tensor | None = None) -> Tensor: ...

    def with_null_condition(self, condition: Any) -> Any: ...

    def embed_prefix(self, control: Tensor | None, condition: Any, batch: int) -> Tensor: ...

    def embed_tokens(self, tokens: Tensor) -> Tensor: ...

    def run(self, embeds: Tensor, start: int, control: Tensor | None, cache: Any) -> Tensor: ...

    def new_cache(self) -> Any: ...

    def head(self, hidden: Tensor) -> Tensor: ...


def teacher_forced_logits(
    model: ControlARModel, tokens: Tensor, control: Tensor | None, condition: Any = None
) -> Tensor:
    """One uncached forward over [prefix, e(x_1) .. e(x_{N-1})]; the (B, N, V) logits of the
    N predicting positions (the last N of the sequence)."""
    batch, n_tokens = tokens.shape
    prefix = model.embed_prefix(control, condition, batch)
    embeds = torch.cat([prefix, model.embed_tokens(tokens[:, :-1])], 1)
    hidden = model.run(embeds, 0, control, cache=None)  # (B, P_total + N - 1, D)
    return model.head(hidden[:, -n_tokens:])


@dataclass(frozen=True)
class SamplingSettings:
    """Sec. 3.3 defaults: cfg 4.0, top-k 2000, top-p 1.0, temperature 1.0."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0
    cfg_scale: float = 1.0  # 1.0: no guidance, the unconditional branch is not run


def with_unconditional_branch(
    model: ControlARModel, control: Tensor | None, condition: Any
) -> tuple[Tensor | None, Any]:
    """Batch [conditional; unconditional]: the unconditional copy gets the null condition and
    exactly zero control tokens (Sec. 3.3 step 4, Sec. 3.7 item 3)."""
    doubled_control = None if control is None else torch.cat([control, torch.zeros_like(control)])
    return doubled_control, model.with_null_condition(condition)


@torch.no_grad()
def generate(
    model: ControlARModel,
    control: Tensor | None,
    n_tokens: int,
    settings: SamplingSettings,
    generator: torch.Generator | None = None,
    condition: Any = None,
    forced: Tensor | None = None,
    batch: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Sample x_1..x_N with a KV cache (Sec. 3.3).

    Control tokens are computed once (``control``, (B, N, D)); the prefix is run once into
    the cache (conditional decoding adds c_1 at its last position); then each step feeds
    e(x_{t-1}) at its position, adds c_t at the injection blocks and reads one new position.
    ``forced`` (B, N) feeds given tokens instead of samples (teacher forcing through the
    cache, used to check cached = uncached logits).

    ``batch`` is needed only when there is no control (the no-control model).

    Returns:
        (tokens (B, N), logits (B, N, V) after guidance, before filtering).
    """
    if batch is None:
        if control is None:
            raise ValueError("generate without control tokens needs the batch size")
        batch = control.shape[0]
    guided = settings.cfg_scale != 1.0
    if guided:
        control, condition = with_unconditional_branch(model, control, condition)
        batch *= 2
    cache = model.new_cache()
    prefix = model.embed_prefix(control, condition, batch)
    hidden = model.run(prefix, 0, control, cache)
    position = prefix.shape[1]
    tokens, step_logits = [], []
    for t in range(n_tokens):
        logits = model.head(hidden[:, -1]).float()  # (B', V)
        if guided:
            conditional, unconditional = logits.chunk(2)
            logits = guided_logits(conditional, unconditional, settings.cfg_scale)
        step_logits.append(logits)
        if forced is not None:
            x_t = forced[:, t]
        else:
            filtered = filter_logits(logits / settings.temperature, settings.top_k, settings.top_p)
            x_t = torch.multinomial(filtered.softmax(-1), 1, generator=generator)[:, 0]
        tokens.append(x_t)
        if t == n_tokens - 1:
            break
        fed = torch.cat([x_t, x_t]) if guided else x_t
        hidden = model.run(model.embed_tokens(fed[:, None]), position, control, cache)
        position += 1
    return torch.stack(tokens, 1), torch.stack(step_logits, 1)
