"""Tests of shared/llama.py: tiny and local Llama models, and attention swapping."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from shared.llama import (
    SwappedAttention,
    decoder_layers,
    load_local_causal_lm,
    swap_attention,
    swapped_attentions,
    tiny_llama,
)


@dataclass
class Fields:
    vocab_size: int = 40
    hidden_size: int = 16
    intermediate_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = 64
    rope_theta: float = 10_000.0


class PassThrough(SwappedAttention):
    """The original attention's forward, through the swapped module."""

    def forward(self, hidden_states, *args, **kwargs):
        return self.base(hidden_states, *args, **kwargs)


def test_tiny_llama_reads_the_config_fields():
    torch.manual_seed(0)
    model = tiny_llama(Fields())
    c = model.config
    assert (c.vocab_size, c.hidden_size, c.num_hidden_layers) == (40, 16, 2)
    assert (c.num_attention_heads, c.num_key_value_heads) == (4, 2)
    assert not c.tie_word_embeddings and c.eos_token_id is None


def test_torch_default_init_replaces_transformers_normal_init():
    torch.manual_seed(0)
    normal = tiny_llama(Fields()).model.embed_tokens.weight
    torch.manual_seed(0)
    default = tiny_llama(Fields(), torch_default_init=True).model.embed_tokens.weight
    # transformers: N(0, 0.02); PyTorch's Embedding default: N(0, 1)
    assert normal.std() < 0.05 and default.std() > 0.5


def test_local_checkpoint_round_trip_and_missing_folder(tmp_path):
    torch.manual_seed(0)
    tiny_llama(Fields()).save_pretrained(tmp_path / "toy")
    loaded = load_local_causal_lm(tmp_path / "toy")
    assert loaded.config.hidden_size == 16 and loaded.config._attn_implementation == "sdpa"
    with pytest.raises(FileNotFoundError, match="absent"):
        load_local_causal_lm(tmp_path / "absent")


def test_decoder_layers_refuses_a_model_without_layers():
    with pytest.raises(TypeError, match="no .model.layers"):
        decoder_layers(nn.Linear(2, 2))


def test_swap_keeps_parameter_names_outputs_and_is_idempotent():
    torch.manual_seed(0)
    model = tiny_llama(Fields(), attn_implementation="eager").eval()
    ids = torch.randint(0, 40, (2, 7))
    names = set(model.state_dict())
    with torch.no_grad():
        before = model(ids).logits
    swapped = swap_attention(model, PassThrough, PassThrough)
    assert len(swapped) == 2 and [a.layer_idx for a in swapped] == [0, 1]
    assert set(model.state_dict()) == names  # checkpoints load unchanged
    assert swap_attention(model, PassThrough, PassThrough) == swapped  # nothing re-wrapped
    assert swapped_attentions(model, PassThrough) == swapped
    assert swapped[0].num_key_value_heads == 2 and swapped[0].num_key_value_groups == 2
    with torch.no_grad():
        assert torch.equal(model(ids).logits, before)
