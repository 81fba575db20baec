"""The from-scratch Llama and its positional encodings (brief Sec. 3.9)."""

from __future__ import annotations

import pytest
import torch

from papers.nupa.config import ModelConfig
from papers.nupa.model import alibi_bias, alibi_slopes, build_model

TINY = ModelConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2)


def test_alibi_slopes_are_the_geometric_sequence():
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([2**-2, 2**-4, 2**-6, 2**-8]))


def test_alibi_bias_is_minus_slope_times_distance_with_a_cache_offset():
    bias = alibi_bias(num_heads=2, query_len=1, key_len=4)  # one new query at position 3
    torch.testing.assert_close(bias[0, 0], -(2**-4) * torch.tensor([3.0, 2.0, 1.0, 0.0]))
    full = alibi_bias(num_heads=2, query_len=4, key_len=4)
    assert full[1, 2, 0] == -(2**-8) * 2 and full[0, 1, 3] == 0  # future keys: masked elsewhere


@pytest.mark.parametrize("pe", ["rope", "nope", "alibi"])
def test_cached_decoding_and_left_padding_match_one_full_pass(pe):
    torch.manual_seed(0)
    model = build_model(TINY, vocab_size=16, pe=pe).eval()
    x = torch.randint(3, 16, (3, 9))
    with torch.no_grad():
        full = model(x).logits
        prefix = model(x[:, :5], use_cache=True)
        step = model(x[:, 5:], cache=prefix.past_key_values).logits
        padded = torch.cat([torch.zeros(3, 2, dtype=torch.long), x], dim=1)
        mask = (torch.arange(11) >= 2).long().expand(3, -1)
        left = model(padded, attention_mask=mask).logits[:, 2:]
    torch.testing.assert_close(step, full[:, 5:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(left, full, atol=1e-5, rtol=1e-5)


def _last_logits(model, tokens):
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0, -1]


@pytest.mark.parametrize("pe", ["rope", "nope", "alibi"])
def test_only_nope_is_blind_to_the_order_of_the_prefix(pe):
    # One layer: the last token attends over the prefix's embeddings. Without positions
    # that is a set function, so permuting the earlier tokens changes nothing.
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden_size=32, num_hidden_layers=1), 16, pe=pe).eval()
    same = torch.allclose(
        _last_logits(model, [5, 7, 9, 11]), _last_logits(model, [9, 5, 7, 11]), atol=1e-5
    )
    assert same == (pe == "nope")


def test_unknown_positional_encoding_is_refused():
    with pytest.raises(ValueError, match="positional encoding"):
        build_model(TINY, vocab_size=16, pe="sinusoidal")
