"""Llama-family causal LMs from `transformers`: a tiny random toy model, a local checkpoint,
and swapping each decoder layer's attention for a paper's own (papers/matryoshka_kv,
papers/em_llm).

A swapped attention subclasses :class:`SwappedAttention`: it reuses the original module's
q/k/v/o projections as its own submodules, so parameter names (``model.layers.i.self_attn.
q_proj.weight``, ...) and therefore checkpoints load unchanged, and it keeps the original module
unregistered in ``self.base`` for papers that fall back to the original forward.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from torch import nn
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from shared.preflight import WEIGHT_FILES


class TinyLlamaFields(Protocol):
    """The fields of a paper's toy-model config that :func:`tiny_llama` reads."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    rope_theta: float


def tiny_llama(
    cfg: TinyLlamaFields, attn_implementation: str = "sdpa", torch_default_init: bool = False
) -> LlamaForCausalLM:
    """A randomly initialised Llama from ``cfg`` (SiLU MLP, untied head; no bos / eos / pad ids,
    so greedy generation always runs ``max_new_tokens``). Seed torch beforehand.

    ``torch_default_init``: re-initialise every Linear and Embedding with PyTorch's defaults
    instead of transformers' N(0, initializer_range) (a paper's choice, stated in its README).
    """
    config = LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        rope_theta=cfg.rope_theta,
        hidden_act="silu",
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        attn_implementation=attn_implementation,
    )
    model = LlamaForCausalLM(config)
    if torch_default_init:
        for module in model.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                module.reset_parameters()
    return model


# What from_pretrained reads the weights from: one safetensors file, a sharded index, or torch's


def load_local_causal_lm(path: str | Path, **kwargs):
    """A local Llama / Mistral checkpoint folder through ``AutoModelForCausalLM.from_pretrained(
    ..., local_files_only=True)`` (never downloads; sdpa attention unless ``kwargs`` say
    otherwise). Raises ``FileNotFoundError`` naming the folder when its config or weights are
    absent."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"no model checkpoint at {path} (expected {path / 'config.json'}); place a local "
            "Llama / Mistral folder there (nothing is downloaded)"
        )
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        raise FileNotFoundError(
            f"model folder {path} has a config but no weights (expected one of "
            f"{', '.join(WEIGHT_FILES)})"
        )
    kwargs.setdefault("attn_implementation", "sdpa")
    return AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, **kwargs)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """``model.model.layers`` of a ``*ForCausalLM``; a clear error for anything else."""
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers"):
        raise TypeError(f"{type(model).__name__} has no .model.layers (expected a *ForCausalLM)")
    return inner.layers


class SwappedAttention(nn.Module):
    """Base of a paper's replacement for a Llama / Mistral ``self_attn``.

    Takes over the original's q/k/v/o projections (registered here under the same names) and
    its shape attributes; the original module stays reachable, unregistered, as ``self.base``.
    """

    def __init__(self, base: nn.Module):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
            base.q_proj,
            base.k_proj,
            base.v_proj,
            base.o_proj,
        )
        self.config = base.config
        self.layer_idx = base.layer_idx
        self.head_dim = base.head_dim
        self.scaling = base.scaling
        self.num_key_value_groups = base.num_key_value_groups
        self.num_key_value_heads = self.k_proj.out_features // self.head_dim
        # unregistered: its projections are ours already, and parameter names must not change
        object.__setattr__(self, "base", base)


Swapped = TypeVar("Swapped", bound=SwappedAttention)


def swap_attention(
    model: nn.Module, kind: type[Swapped], make: Callable[[nn.Module], Swapped]
) -> list[Swapped]:
    """Replace every decoder layer's ``self_attn`` by ``make(original)`` in place, leaving
    layers that already hold a ``kind`` as they are (idempotent). Returns the ``kind``
    modules in layer order."""
    for layer in decoder_layers(model):
        if not isinstance(layer.self_attn, kind):
            layer.self_attn = make(layer.self_attn)
    return swapped_attentions(model, kind)


def swapped_attentions(model: nn.Module, kind: type[Swapped]) -> list[Swapped]:
    """The ``kind`` attentions of ``model`` in layer order (empty if none is attached)."""
    return [layer.self_attn for layer in decoder_layers(model) if isinstance(layer.self_attn, kind)]
