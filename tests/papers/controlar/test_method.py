"""ControlAR's core math (brief Sec. 7): alignment, causality, cached = uncached decoding,
zero control = no control, CFG identities, the injection schedule and the MLPs."""

from __future__ import annotations

import pytest
import torch

from papers.controlar.config import ModelConfig
from papers.controlar.method import (
    BiasFreeMLP,
    SamplingSettings,
    align_controls,
    control_index,
    filter_logits,
    generate,
    guided_logits,
    image_token_loss,
    injection_layers,
    joint_drop_mask,
    sequence_length,
    teacher_forced_logits,
    with_unconditional_branch,
)
from papers.controlar.model import ToyControlAR

TINY = ModelConfig(
    image_size=16, patch=4, vocab_size=12, dim=16, n_layers=3, n_heads=2,
    encoder_channels=[4, 8], encoder_dim=8,
)  # fmt: skip
N = 16  # (16 / 4)^2 tokens


def tiny(variant: str, seed: int = 0) -> ToyControlAR:
    torch.manual_seed(seed)
    model = ToyControlAR(TINY, variant).eval()
    with torch.no_grad():  # larger random weights than the init, so every path matters
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model


def inputs(batch: int = 2, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, TINY.vocab_size, (batch, N), generator=g)
    maps = (torch.rand(batch, 16, 16, generator=g) > 0.7).float()
    return tokens, maps


# ------------------------------------------------------------------ schedule and layout


def test_injection_layers_every_third_of_the_depth():
    assert injection_layers(3) == [0, 1, 2]
    assert injection_layers(12) == [0, 4, 8]  # GPT-B
    assert injection_layers(24) == [0, 8, 16]  # GPT-L
    assert injection_layers(36) == [0, 12, 24]  # GPT-XL
    with pytest.raises(ValueError, match=">= 3 blocks"):
        injection_layers(2)


def test_sequence_lengths():
    assert sequence_length("cond", 1, 64) == 64
    assert sequence_length("none", 1, 64) == 64
    assert sequence_length("prefill", 1, 64) == 128
    assert sequence_length("cond", 120, 1024) == 1143  # t2i: P + N - 1
    with pytest.raises(ValueError, match="unknown variant"):
        sequence_length("cross_attention", 1, 4)


def test_control_index_hand_cases():
    # P = 1: the start position (0) predicts x_1 and gets c_1 (index 0)
    assert control_index(0, 1) == 0
    assert control_index(5, 1) == 5
    # P = 3: positions 0, 1 get nothing; position 2 gets c_1; position 3 gets c_2
    assert [control_index(p, 3) for p in range(4)] == [-2, -1, 0, 1]


def test_align_controls_windows_agree_with_the_full_layout():
    control = torch.arange(1, 6, dtype=torch.float32).view(1, 5, 1)  # c_1..c_5 = 1..5
    full = align_controls(control, 0, 3 + 5 - 1, prefix_length=3)[0, :, 0]
    assert full.tolist() == [0, 0, 1, 2, 3, 4, 5]
    for start in range(7):  # every cached decode step reads the same row
        assert align_controls(control, start, 1, 3)[0, 0, 0] == full[start]
    assert align_controls(control, 0, 3, 3)[0, :, 0].tolist() == [0, 0, 1]  # the prefill


def test_shapes_and_internal_sequence_lengths():
    tokens, maps = inputs()
    for variant, length in (("cond", N), ("prefill", 2 * N), ("none", N)):
        model = tiny(variant)
        seen = []
        model.gpt.register_forward_pre_hook(
            lambda m, a, k, seen=seen: seen.append(k["inputs_embeds"].shape[1]), with_kwargs=True
        )
        control = None if variant == "none" else model.control_tokens(maps)
        logits = teacher_forced_logits(model, tokens, control)
        assert logits.shape == (2, N, TINY.vocab_size)
        assert seen == [length] == [sequence_length(variant, 1, N)]


# ------------------------------------------------------------------ alignment and causality


@pytest.mark.parametrize("t", [1, 2, 7, N])
def test_only_predictions_from_x_t_on_see_c_t(t):
    """Only c_t non-zero: logits for x_1..x_{t-1} are bit-identical to the zero-control run,
    the logits for x_t change (Sec. 7 item 2)."""
    model = tiny("cond")
    tokens, maps = inputs()
    control = model.control_tokens(maps)
    only_t = torch.zeros_like(control)
    only_t[:, t - 1] = control[:, t - 1]
    base = teacher_forced_logits(model, tokens, torch.zeros_like(control))
    moved = teacher_forced_logits(model, tokens, only_t)
    assert torch.equal(moved[:, : t - 1], base[:, : t - 1])
    assert (moved[:, t - 1] - base[:, t - 1]).abs().max() > 1e-4


@pytest.mark.parametrize("variant", ["cond", "prefill", "none"])
def test_causality_in_the_tokens(variant):
    """Changing input x_t leaves the logits for x_1..x_t unchanged (Sec. 7 item 3)."""
    model = tiny(variant)
    tokens, maps = inputs()
    control = None if variant == "none" else model.control_tokens(maps)
    base = teacher_forced_logits(model, tokens, control)
    for t in (1, 5, N - 1):
        changed = tokens.clone()
        changed[:, t - 1] = (changed[:, t - 1] + 1) % TINY.vocab_size
        logits = teacher_forced_logits(model, changed, control)
        assert torch.allclose(logits[:, :t], base[:, :t], atol=1e-6)
        assert (logits[:, t] - base[:, t]).abs().max() > 1e-4


def test_causality_in_the_controls_of_conditional_decoding():
    """Changing c_t leaves the logits for x_1..x_{t-1} unchanged."""
    model = tiny("cond")
    tokens, maps = inputs()
    control = model.control_tokens(maps)
    base = teacher_forced_logits(model, tokens, control)
    for t in (1, 6, N):
        changed = control.clone()
        changed[:, t - 1] += torch.randn_like(changed[:, t - 1])
        logits = teacher_forced_logits(model, tokens, changed)
        assert torch.equal(logits[:, : t - 1], base[:, : t - 1])
        assert (logits[:, t - 1] - base[:, t - 1]).abs().max() > 1e-4


def test_prefilled_controls_reach_every_image_position():
    """Prefill: all control tokens precede x_1, so changing c_N moves the logits for x_1 (a
    guard against the library reading repeated position ids as packed sequences)."""
    model = tiny("prefill")
    tokens, maps = inputs()
    control = model.control_tokens(maps)
    changed = control.clone()
    changed[:, -1] += torch.randn_like(changed[:, -1])  # (a constant shift is normalised away)
    delta = teacher_forced_logits(model, tokens, changed) - teacher_forced_logits(
        model, tokens, control
    )
    assert delta[:, 0].abs().max() > 1e-4


# ------------------------------------------------------------------ the KV cache


@pytest.mark.parametrize("variant", ["cond", "prefill", "none"])
def test_cached_decoding_equals_the_uncached_forward(variant):
    """Step-wise cached decoding gives the uncached logits within 1e-5 (Sec. 7 item 4)."""
    model = tiny(variant)
    tokens, maps = inputs()
    control = None if variant == "none" else model.control_tokens(maps)
    with torch.no_grad():
        full = teacher_forced_logits(model, tokens, control)
        _, cached = generate(model, control, N, SamplingSettings(), forced=tokens, batch=2)
    assert (cached - full).abs().max() < 1e-5


def test_off_by_one_control_index_breaks_cache_equivalence():
    """A decode step that reads c_{t+1} instead of c_t (the 3.7 item 5 bug) is detected."""
    model = tiny("cond")
    tokens, maps = inputs()
    control = model.control_tokens(maps)
    with torch.no_grad():
        full = teacher_forced_logits(model, tokens, control)
        shifted = torch.cat([control[:, 1:], torch.zeros_like(control[:, :1])], 1)
        _, cached = generate(model, shifted, N, SamplingSettings(), forced=tokens)
    assert (cached - full).abs().max() > 1e-3


def test_sampling_is_reproducible_and_in_vocabulary():
    model = tiny("cond")
    _, maps = inputs()
    control = model.control_tokens(maps)
    settings = SamplingSettings(temperature=1.0, top_k=5)
    a, _ = generate(model, control, N, settings, torch.Generator().manual_seed(3))
    b, _ = generate(model, control, N, settings, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == (2, N)
    assert int(a.min()) >= 0 and int(a.max()) < TINY.vocab_size


# ------------------------------------------------------------------ zero control and CFG


def test_zero_control_equals_no_control():
    """Bias-free MLPs: zero control tokens give exactly the logits of the same weights with
    the control path removed (Sec. 7 item 6)."""
    cond = tiny("cond")
    none = ToyControlAR(TINY, "none").eval()
    missing, unexpected = none.load_state_dict(cond.state_dict(), strict=False)
    assert not missing and all(
        k.split(".")[0] in ("encoder", "projection", "fusion") for k in unexpected
    )
    tokens, maps = inputs()
    zero = torch.zeros_like(cond.control_tokens(maps))
    assert torch.equal(
        teacher_forced_logits(cond, tokens, zero), teacher_forced_logits(none, tokens, None)
    )


def test_joint_drop_gives_exactly_zero_control():
    model = tiny("cond")
    _, maps = inputs(batch=4)
    dropped = torch.tensor([True, False, True, False])
    control = model.control_tokens(maps, dropped)
    assert torch.equal(control[dropped], torch.zeros_like(control[dropped]))
    assert control[~dropped].abs().min(-1).values.max() > 0
    assert not joint_drop_mask(8, 0.0).any()
    assert joint_drop_mask(
        1000, 0.1, torch.Generator().manual_seed(0)
    ).float().mean().item() == pytest.approx(0.1, abs=0.03)
    with pytest.raises(ValueError, match="condition dropout"):
        joint_drop_mask(4, 1.0)


def test_cfg_identities():
    """s = 1 returns the conditional logits; the unconditional copy gets exactly zero control,
    and generate's guided logits are u + s (c - u) with u = the zero-control logits."""
    c, u = torch.randn(3, 7), torch.randn(3, 7)
    assert torch.allclose(guided_logits(c, u, 1.0), c, atol=1e-6)  # u + (c - u), rounded
    assert torch.allclose(guided_logits(c, u, 4.0), u + 4.0 * (c - u))
    model = tiny("cond")
    tokens, maps = inputs()
    control = model.control_tokens(maps)
    doubled, _ = with_unconditional_branch(model, control, None)
    assert torch.equal(doubled[:2], control) and not doubled[2:].any()
    with torch.no_grad():
        _, conditional = generate(model, control, N, SamplingSettings(), forced=tokens)
        _, unconditional = generate(
            model, torch.zeros_like(control), N, SamplingSettings(), forced=tokens
        )
        _, guided = generate(model, control, N, SamplingSettings(cfg_scale=3.0), forced=tokens)
    assert torch.allclose(guided, unconditional + 3.0 * (conditional - unconditional), atol=1e-5)


def test_filter_logits_top_k_and_top_p():
    logits = torch.tensor([[3.0, 1.0, 2.0, 0.0]])
    assert torch.isinf(filter_logits(logits, 2, 1.0)).tolist() == [[False, True, False, True]]
    probs = torch.tensor([[0.6, 0.3, 0.1]]).log()
    assert torch.isinf(filter_logits(probs, None, 0.5)).tolist() == [[False, True, True]]
    assert torch.equal(filter_logits(logits, None, 1.0), logits)


# ------------------------------------------------------------------ MLPs and loss


def test_bias_free_mlp_maps_zero_to_zero():
    mlp = BiasFreeMLP(5, 7, 3)
    assert torch.equal(mlp(torch.zeros(2, 4, 5)), torch.zeros(2, 4, 3))


def test_zero_initialising_both_fusion_layers_blocks_all_gradients():
    """Sec. 3.7 item 4: with both layers zero no gradient reaches either; with only the last
    zero, the last layer gets a gradient."""
    x = torch.randn(4, 6)
    both = BiasFreeMLP(6, 6, 6)
    torch.nn.init.zeros_(both.fc1.weight)
    torch.nn.init.zeros_(both.fc2.weight)
    both(x).sum().backward()
    assert not both.fc1.weight.grad.any() and not both.fc2.weight.grad.any()
    last = BiasFreeMLP(6, 6, 6)
    torch.nn.init.zeros_(last.fc2.weight)
    last(x).sum().backward()
    assert last.fc2.weight.grad.abs().sum() > 0


def test_image_token_loss_is_mean_cross_entropy():
    logits, tokens = torch.randn(2, 5, 4), torch.randint(0, 4, (2, 5))
    expected = -torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).mean()
    assert torch.allclose(image_token_loss(logits, tokens), expected)


@pytest.mark.parametrize("variant", ["cond", "prefill", "none"])
def test_measured_lengths_are_the_input_and_the_kv_cache_positions(variant):
    """What claims 2a/2b (and their primed sampling forms) read: the first block's input in a
    teacher-forced forward, and the positions the KV cache holds after sampling."""
    from papers.controlar.train import BlockInputLengths

    tokens, maps = inputs()
    model = tiny(variant)
    control = None if variant == "none" else model.control_tokens(maps)
    probe = BlockInputLengths(model)
    teacher_forced_logits(model, tokens, control)
    assert probe.take() == [sequence_length(variant, 1, N)]
    caches = []
    new_cache = model.new_cache
    model.new_cache = lambda: caches.append(new_cache()) or caches[-1]
    generate(model, control, N, SamplingSettings(), torch.Generator().manual_seed(0), batch=2)
    probe.close()
    assert sum(probe.take()) == caches[0].get_seq_length() == sequence_length(variant, 1, N)
    teacher_forced_logits(model, tokens, control)
    assert probe.take() == []  # closed: the hook is gone
