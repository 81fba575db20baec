"""The from-scratch number model: a transformers Llama with a chosen positional encoding.

Brief Sec. 3.9: ``LlamaForCausalLM`` built from a ``LlamaConfig`` (random init, vocabulary =
the number tokenizer's), with one of three positional encodings:

* ``rope``: Llama's rotary embedding, unchanged;
* ``nope``: no positional encoding; the rotary rotation is made the identity (cos = 1,
  sin = 0), so causal masking is the only source of order information;
* ``alibi``: no rotary; the attention logits get the bias ``-m_h * (i - j)`` for query i and
  key j <= i, with head slopes ``m_h = 2^(-8 (h + 1) / H)`` (Press et al., 2022). The official
  ``modify_pe.py`` adds ``+m_h * |i - j|`` (the sign looks flipped, favouring far tokens);
  we use the standard negative bias, listed under Deviations.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import AttentionInterface, LlamaConfig, LlamaForCausalLM
from transformers.masking_utils import AttentionMaskInterface
from transformers.models.llama.modeling_llama import eager_attention_forward

from papers.nupa.config import POSITIONAL_ENCODINGS, ModelConfig
from papers.nupa.tokenizer import BOS, EOS, PAD

ALIBI = "nupa_alibi"  # the attention implementation name registered below


class IdentityRotaryEmbedding(nn.Module):
    """Stands in for ``LlamaRotaryEmbedding``: cos = 1 and sin = 0 make RoPE a no-op (NoPE)."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.head_dim = head_dim

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):
        shape = (*position_ids.shape, self.head_dim)  # (B, T, head_dim)
        return (
            torch.ones(shape, dtype=x.dtype, device=x.device),
            torch.zeros(shape, dtype=x.dtype, device=x.device),
        )


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """Head slopes ``m_h = 2^(-8 (h + 1) / H)``, h = 0..H-1 (the geometric ALiBi sequence)."""
    h = torch.arange(num_heads, dtype=torch.float32)
    return torch.pow(2.0, -8.0 * (h + 1) / num_heads)


def alibi_bias(num_heads: int, query_len: int, key_len: int) -> torch.Tensor:
    """``-m_h (i - j)`` for the last ``query_len`` of ``key_len`` positions, (H, T, S).

    With a KV cache the queries are the newest positions, so query row t sits at key index
    ``key_len - query_len + t``; left padding does not change distances between real tokens.
    """
    q = torch.arange(key_len - query_len, key_len, dtype=torch.float32)[:, None]  # (T, 1)
    k = torch.arange(key_len, dtype=torch.float32)[None, :]  # (1, S)
    distance = (q - k).clamp(min=0)  # future keys are masked anyway
    return -alibi_slopes(num_heads)[:, None, None] * distance  # (H, T, S)


def alibi_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
    """Eager attention with the ALiBi bias added to the (causal, padding) additive mask."""
    num_heads, query_len, key_len = query.shape[1], query.shape[2], key.shape[2]
    bias = alibi_bias(num_heads, query_len, key_len).to(query.dtype)[None]  # (1, H, T, S)
    mask = bias if attention_mask is None else attention_mask + bias
    return eager_attention_forward(module, query, key, value, mask, scaling, dropout, **kw)


AttentionInterface.register(ALIBI, alibi_attention_forward)
# The ALiBi path consumes the same additive float mask (0 / -inf) as eager attention.
AttentionMaskInterface.register(ALIBI, AttentionMaskInterface._global_mapping["eager"])


def build_model(cfg: ModelConfig, vocab_size: int, pe: str = "rope") -> LlamaForCausalLM:
    """A randomly initialised Llama for the number tokenizer's vocabulary (brief Sec. 5b)."""
    if pe not in POSITIONAL_ENCODINGS:
        raise ValueError(f"unknown positional encoding {pe!r}; choose from {POSITIONAL_ENCODINGS}")
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        rope_theta=cfg.rope_theta,
        tie_word_embeddings=False,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        attn_implementation=ALIBI if pe == "alibi" else "sdpa",
    )
    model = LlamaForCausalLM(config)
    if pe in ("nope", "alibi"):
        head_dim = cfg.hidden_size // cfg.num_attention_heads
        model.model.rotary_emb = IdentityRotaryEmbedding(head_dim)
    return model
