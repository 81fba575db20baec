"""Compressed attention on a transformers Llama and the compressed KV cache (brief Sec. 3.1-3.5,
tests of Sec. 7)."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import DynamicCache, MistralConfig, MistralForCausalLM
from transformers.models.llama.modeling_llama import LlamaAttention, apply_rotary_pos_emb

from papers.matryoshka_kv.config import ModelConfig
from papers.matryoshka_kv.method import (
    KVProjections,
    budget,
    distillation_loss,
    greedy_rank_search,
    pca_basis,
    sample_ranks,
    uniform_ranks,
)
from papers.matryoshka_kv.model import (
    CompressedCache,
    CompressedLayer,
    MatryoshkaAttention,
    attach_projections,
    build_toy_model,
    cache_bytes_per_token,
    cache_numbers_per_token,
    collect_kv_statistics,
    full_cache_numbers_per_token,
    get_ranks,
    last_hidden_states,
    load_local_model,
    make_hidden_fn,
    set_ranks,
)

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = torch.float64
L, H, D = 2, 4, 16


def toy(seed=0, kv_heads=4, dtype=F64, impl="sdpa", scale=8.0):
    """The toy Llama (hidden 64, 2 layers, 4 heads, d 16) with attention weights scaled up so
    that attention visibly matters in a random model."""
    torch.manual_seed(seed)
    model = build_toy_model(ModelConfig(num_key_value_heads=kv_heads), attn_implementation=impl)
    with torch.no_grad():
        for layer in model.model.layers:
            for lin in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                lin.weight.mul_(scale)
            layer.self_attn.o_proj.weight.mul_(scale)
    return model.eval().to(dtype)


def ids(b=3, t=20, seed=0):
    return torch.randint(0, 32, (b, t), generator=torch.Generator().manual_seed(seed))


def pca_projected(model, dtype=F64):
    """(base, compressed copy with PCA projections attached)."""
    mk, sk, mv, sv = collect_kv_statistics(model, [ids(4, 32, seed=1)])
    uk, _ = pca_basis(mk, sk)
    uv, _ = pca_basis(mv, sv)
    proj = KVProjections.from_bases(uk, uv, mk, mv, dtype=dtype)
    return model, attach_projections(copy.deepcopy(model), proj)


# --------------------------------------------------------------------------- models


def test_build_toy_model_uses_the_config():
    model = build_toy_model(ModelConfig())
    c = model.config
    assert (c.vocab_size, c.hidden_size, c.intermediate_size) == (32, 64, 256)
    assert (c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads) == (2, 4, 4)
    assert c.rope_parameters["rope_theta"] == 10000.0 and c.hidden_act == "silu"
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    assert full_cache_numbers_per_token(c) == 2 * L * H * D


def test_load_local_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model checkpoint"):
        load_local_model(tmp_path / "absent")
    model = toy(dtype=torch.float32)
    model.save_pretrained(tmp_path / "toy")
    loaded = load_local_model(tmp_path / "toy").eval()
    x = ids()
    with torch.no_grad():
        torch.testing.assert_close(loaded(x).logits, model(x).logits)


# --------------------------------------------------------------------------- exactness (item 3)


@pytest.mark.parametrize(("kv_heads", "impl"), [(4, "sdpa"), (2, "eager"), (2, "sdpa")])
def test_full_rank_projected_model_equals_base(kv_heads, impl):
    base, model = pca_projected(toy(kv_heads=kv_heads, impl=impl))
    tol = 1e-10 if impl == "sdpa" else 1e-6  # HF eager runs its softmax in float32 even in f64
    x = ids()
    with torch.no_grad():
        assert (model(x).logits - base(x).logits).abs().max() < tol
        set_ranks(model, *uniform_ranks(L, kv_heads, D // 2))
        assert (model(x).logits - base(x).logits).abs().max() > 1e-2  # ranks matter


@pytest.mark.parametrize(("dtype", "impl"), [(F64, "sdpa"), (torch.float32, "eager")])
def test_full_rank_projected_model_equals_base_with_padding(dtype, impl):
    # (HF eager in float64 turns fully padded rows into NaN, hence float32 for eager)
    base, model = pca_projected(toy(kv_heads=2, dtype=dtype, impl=impl), dtype=dtype)
    tol = 1e-10 if dtype == F64 else 1e-4
    x = ids()
    pad = torch.ones_like(x)
    pad[0, :4] = 0  # left padding in one row
    with torch.no_grad():
        a, b = model(x, attention_mask=pad).logits, base(x, attention_mask=pad).logits
    assert (a - b)[pad.bool()].abs().max() < tol


def test_full_rank_projected_model_equals_base_float32():
    base, model = pca_projected(toy(dtype=torch.float32), dtype=torch.float32)
    x = ids()
    with torch.no_grad():
        assert (model(x).logits - base(x).logits).abs().max() < 1e-4


def test_attention_module_is_exact_and_value_mean_survives_zeroed_basis():
    base, model = pca_projected(toy(kv_heads=2))
    ref_attn = base.model.layers[1].self_attn
    attn = model.model.layers[1].self_attn
    assert isinstance(ref_attn, LlamaAttention) and isinstance(attn, MatryoshkaAttention)
    assert attn.q_proj is model.model.layers[1].self_attn.q_proj  # weights reused, not copied
    hidden = torch.randn(2, 9, 64, dtype=F64)
    pos = torch.arange(9)[None]
    emb = base.model.rotary_emb(hidden, pos)
    causal = torch.zeros(9, 9, dtype=F64).masked_fill(
        ~torch.ones(9, 9, dtype=torch.bool).tril(), torch.finfo(F64).min
    )[None, None]
    with torch.no_grad():
        want, _ = ref_attn(hidden, position_embeddings=emb, attention_mask=causal)
        got, _ = attn(hidden, position_embeddings=emb, attention_mask=causal)
        assert (got - want).abs().max() < 1e-12
        # item 4: every U_V column zeroed => the input of o_proj is mu_V at every position
        seen = {}
        attn.o_proj.register_forward_pre_hook(lambda m, a: seen.setdefault("x", a[0]))
        uk, uv = attn.projections.bases(1)
        object.__setattr__(attn, "_bases", lambda: (uk, torch.zeros_like(uv)))
        attn(hidden, position_embeddings=emb, attention_mask=causal)
    mu_v = attn.projections.mu_value[1].detach().repeat_interleave(2, dim=0)  # per query head
    torch.testing.assert_close(seen["x"], mu_v.flatten().expand(2, 9, -1), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- cache (item 7)


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_generate_uses_the_compressed_cache_and_matches_base_at_full_rank(dtype):
    base, model = pca_projected(toy(dtype=dtype), dtype=dtype)
    prompt = ids(2, 6, seed=3)
    want = base.generate(prompt, max_new_tokens=12, do_sample=False)
    out = model.generate(
        prompt, max_new_tokens=12, do_sample=False, return_dict_in_generate=True
    )  # no cache argument: the default DynamicCache gets compressed layers
    assert torch.equal(out.sequences, want)
    assert all(isinstance(layer, CompressedLayer) for layer in out.cache.layers)
    assert cache_numbers_per_token(out.cache) == 2 * L * H * D
    explicit = model.generate(prompt, max_new_tokens=12, do_sample=False, cache=CompressedCache())
    assert torch.equal(explicit, want)


def test_cached_decoding_equals_a_full_forward_at_reduced_heterogeneous_rank():
    _, model = pca_projected(toy(kv_heads=2))
    rk, rv = sample_ranks([2, 4, 6, 8, 16], L, 2, torch.Generator().manual_seed(1))
    rk[0, 0], rv[1, 1] = 1, 16
    set_ranks(model, rk, rv)
    x = ids(3, 20, seed=4)
    with torch.no_grad():
        full = model(x, use_cache=False).logits
        cache = CompressedCache()
        pieces = [model(x[:, :7], cache=cache, use_cache=True).logits]
        pieces += [model(x[:, i : i + 1], cache=cache, use_cache=True).logits for i in range(7, 20)]
    assert (torch.cat(pieces, dim=1) - full).abs().max() < 1e-10
    # greedy generation from the compressed cache = argmax of full, uncached forwards
    prompt = x[:, :5]
    gen = model.generate(prompt, max_new_tokens=8, do_sample=False)
    seq = prompt
    with torch.no_grad():
        for _ in range(8):
            nxt = model(seq, use_cache=False).logits[:, -1].argmax(-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
    assert torch.equal(gen, seq)


@pytest.mark.parametrize("dtype", [F64, torch.float32, torch.bfloat16])
def test_cache_stores_exactly_the_compressed_numbers(dtype):
    base, model = pca_projected(toy(dtype=dtype), dtype=torch.float32)
    rk = torch.tensor([[1, 5, 16, 8], [3, 3, 2, 12]])
    rv = torch.tensor([[7, 2, 4, 16], [1, 9, 6, 6]])
    set_ranks(model, rk, rv)
    x = ids(2, 10)
    cache = CompressedCache()
    with torch.no_grad():
        model(x, cache=cache, use_cache=True)
        model(x[:, :1], cache=cache, use_cache=True)
    size = torch.tensor([], dtype=dtype).element_size()
    for layer_idx, layer in enumerate(cache.layers):
        assert isinstance(layer, CompressedLayer)
        assert layer.keys.shape == (2, 11, int(rk[layer_idx].sum()))  # per head, no padding
        assert layer.values.shape == (2, 11, int(rv[layer_idx].sum()))
        assert layer.keys.dtype == dtype
        assert layer.get_seq_length() == 11
    assert cache.get_seq_length() == 11
    assert cache_numbers_per_token(cache) == int(rk.sum() + rv.sum())
    assert cache_bytes_per_token(cache) == int(rk.sum() + rv.sum()) * size
    # uniform rank r: bytes / token = (r / d) x the full cache's, exactly
    r = 6
    set_ranks(model, *uniform_ranks(L, H, r))
    small, full = CompressedCache(), DynamicCache(config=base.config)
    with torch.no_grad():
        model(x, cache=small, use_cache=True)
        base(x, cache=full, use_cache=True)
    assert cache_numbers_per_token(full) == full_cache_numbers_per_token(base.config)
    assert cache_bytes_per_token(small) * D == cache_bytes_per_token(full) * r
    assert budget(*get_ranks(model), D) == r / D


def test_cache_refuses_rank_changes_and_full_states():
    base, model = pca_projected(toy())
    x = ids(1, 6)
    cache = CompressedCache()
    with torch.no_grad():
        model(x, cache=cache, use_cache=True)
        set_ranks(model, *uniform_ranks(L, H, 4))
        with pytest.raises(ValueError, match="ranks changed"):
            model(x[:, :1], cache=cache, use_cache=True)
        cache.reset()
        model(x, cache=cache, use_cache=True)  # fine after a reset
        full = DynamicCache(config=base.config)
        base(x, cache=full, use_cache=True)
        with pytest.raises(TypeError, match="cannot be converted"):
            model(x[:, :1], cache=full, use_cache=True)
    with pytest.raises(TypeError, match="packed"):
        CompressedLayer().update(torch.zeros(1, 4, 2, 16), torch.zeros(1, 4, 2, 16))


@pytest.mark.parametrize("bad", [0, D + 1])
def test_set_ranks_rejects_invalid_ranks(bad):
    _, model = pca_projected(toy())
    rk, rv = uniform_ranks(L, H, 4)
    rk[1, 2] = bad
    with pytest.raises(ValueError, match="rank out of range"):
        set_ranks(model, rk, rv)
    with pytest.raises(ValueError, match="rank_key must be"):
        set_ranks(model, torch.full((L, H + 1), 4), rv)
    with pytest.raises(ValueError, match="attach_projections"):
        set_ranks(toy(), rv, rv)


# --------------------------------------------------------------------------- search (item 8)


def test_greedy_search_lowers_an_irrelevant_head_first():
    _, model = pca_projected(toy())
    layer, head = 1, 2
    with torch.no_grad():  # zero the o_proj input columns that read (layer, head)
        model.model.layers[layer].self_attn.o_proj.weight[:, head * D : (head + 1) * D] = 0
    fn = make_hidden_fn(model, ids(2, 16, seed=5))
    # 3 rounds of 2 updates at step 4 take the irrelevant head's K and V from 16 to 4
    target = 1 - 3 * 2 * 4 / (2 * L * H * D)
    rk, rv = greedy_rank_search(fn, L, H, D, budget=target, step=4, updates_per_round=2)
    expected = torch.full((L, H), D)
    expected[layer, head] = 4
    assert rk.equal(expected) and rv.equal(expected)
    assert budget(rk, rv, D) == pytest.approx(target)
    assert last_hidden_states(model, ids(1, 5)).shape == (1, 5, 64)


# --------------------------------------------------------------------------- training (item 9)


def test_training_step_updates_only_the_projections():
    teacher = toy(dtype=torch.float32)
    _, student = pca_projected(teacher, dtype=torch.float32)
    student.requires_grad_(False)
    proj = student.kv_projections
    proj.requires_grad_(True)
    base_before = {
        n: p.detach().clone() for n, p in student.named_parameters() if "kv_projections" not in n
    }
    assert set(n for n, _ in student.named_parameters()) - set(base_before) == {
        "kv_projections.x_key",
        "kv_projections.x_value",
        "kv_projections.mu_key",
        "kv_projections.mu_value",
    }
    proj_before = [p.detach().clone() for p in proj.parameters()]
    opt = torch.optim.Adam(proj.parameters(), lr=1e-2)
    set_ranks(student, *sample_ranks([2, 4, 8], L, H, torch.Generator().manual_seed(0)))
    x = ids(2, 16)
    with torch.no_grad():
        t_logits = teacher(x, use_cache=False).logits
    loss, _ = distillation_loss(student(x, use_cache=False).logits, t_logits, x, 0.25, 0.75)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in proj.parameters())
    opt.step()
    for n, p in student.named_parameters():
        if n in base_before:
            assert torch.equal(p, base_before[n]), n
    assert all(not torch.equal(a, b) for a, b in zip(proj.parameters(), proj_before, strict=True))


# --------------------------------------------------------------------------- PCA statistics


def test_collect_kv_statistics_uses_post_rope_keys_and_values():
    model = toy(kv_heads=2)
    x = ids(3, 12, seed=6)
    mk, sk, mv, sv = collect_kv_statistics(model, [x[:2], x[2:]])
    assert mk.shape == (L, 2, D) and sk.shape == (L, 2, D, D) and mv.dtype == F64
    layer = model.model.layers[0]
    with torch.no_grad():
        h = layer.input_layernorm(model.model.embed_tokens(x))
        emb = model.model.rotary_emb(h, torch.arange(12)[None])
        k = layer.self_attn.k_proj(h).view(3, 12, 2, D).transpose(1, 2)
        v = layer.self_attn.v_proj(h).view(3, 12, 2, D).transpose(1, 2)
        _, k_rot = apply_rotary_pos_emb(k, k, *emb)
    torch.testing.assert_close(mk[0], k_rot.mean(dim=(0, 2)))
    torch.testing.assert_close(sk[0], torch.einsum("bhtd,bhte->hde", k_rot, k_rot) / 36)
    torch.testing.assert_close(mv[0], v.mean(dim=(0, 2)))
    assert (mk[0] - k.mean(dim=(0, 2))).abs().max() > 1e-3  # pre-RoPE would differ
    with pytest.raises(ValueError, match="unmodified"):
        collect_kv_statistics(pca_projected(model)[1], [x])


def test_reattaching_swaps_projections_and_resets_ranks():
    base, model = pca_projected(toy())
    set_ranks(model, *uniform_ranks(L, H, 3))
    fresh = KVProjections(L, H, D, dtype=F64)
    attach_projections(model, fresh)
    assert model.kv_projections is fresh
    assert all(
        a.projections is fresh for a in model.model.layers.modules() if hasattr(a, "key_ranks")
    )
    assert get_ranks(model)[0].eq(D).all()
    x = ids()
    with torch.no_grad():  # identity basis, zero mean, full rank: still exact
        assert (model(x).logits - base(x).logits).abs().max() < 1e-10
    with pytest.raises(ValueError, match="projections are"):
        attach_projections(copy.deepcopy(base), KVProjections(L, H, 8))


def test_mistral_with_gqa_and_explicit_head_dim_is_exact():
    torch.manual_seed(0)
    config = MistralConfig(
        vocab_size=50,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=None,
        attn_implementation="sdpa",
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    base = MistralForCausalLM(config).eval().to(F64)
    x = torch.randint(0, 50, (2, 12))
    mk, sk, mv, sv = collect_kv_statistics(base, [x])
    proj = KVProjections.from_bases(pca_basis(mk, sk)[0], pca_basis(mv, sv)[0], mk, mv, dtype=F64)
    model = attach_projections(copy.deepcopy(base), proj)
    with torch.no_grad():
        assert (model(x).logits - base(x).logits).abs().max() < 1e-10
    want = base.generate(x[:, :4], max_new_tokens=8, do_sample=False)
    assert torch.equal(model.generate(x[:, :4], max_new_tokens=8, do_sample=False), want)
    windowed = MistralForCausalLM(MistralConfig(**{**config.to_dict(), "sliding_window": 4}))
    with pytest.raises(ValueError, match="sliding-window"):
        attach_projections(windowed, KVProjections(2, 2, 16))
