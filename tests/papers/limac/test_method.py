"""LiMAC's core math (brief Sec. 7): InfoNCE closed form, padding, permutation equivariance,
mask causality, gating, metrics and ragged shapes."""

from __future__ import annotations

import math

import pytest
import torch

from papers.limac import model as model_module
from papers.limac.data import featurise_toy
from papers.limac.method import (
    act_loss,
    block_causal_mask,
    contrastive_click_logits,
    gated_text_actions,
    info_nce_loss,
    jaccard,
    relaxed_box_match,
    step_correct,
    text_matches,
    token_layout,
)
from papers.limac.model import ActionTransformer, FlatClassifier, HashedElementEncoder
from papers.limac.toydroid import ACTION_TYPES, ELEMENT_CLASSES, make_episodes

N_BUCKETS = 64


def _data(n: int = 4, seed: int = 0):
    return featurise_toy(make_episodes(n, seed), N_BUCKETS)


def _act(seed: int = 0, click_head: str = "contrastive") -> ActionTransformer:
    torch.manual_seed(seed)
    encoder = HashedElementEncoder(16, N_BUCKETS, 64, 16, 6, len(ELEMENT_CLASSES))
    return ActionTransformer(
        encoder,
        d=16,
        layers=2,
        heads=2,
        ff=32,
        dropout=0.1,
        max_steps=16,
        n_types=len(ACTION_TYPES),
        tau=0.1,
        click_head=click_head,
    ).eval()


# ------------------------------------------------------------------ 1. InfoNCE closed form


def test_info_nce_closed_form():
    query = torch.tensor([[1.0, 0.0]])
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    logits = contrastive_click_logits(query, keys, torch.tensor([[True, True]]), tau=0.1)
    assert torch.allclose(logits, torch.tensor([[10.0, 0.0]]))
    first = info_nce_loss(logits.double(), torch.tensor([0]))
    second = info_nce_loss(logits.double(), torch.tensor([1]))
    assert abs(first.item() - math.log1p(math.exp(-10))) < 1e-6  # 4.540e-5
    assert abs(first.item() - 4.540e-5) < 1e-6
    assert abs(second.item() - (10 + math.log1p(math.exp(-10)))) < 1e-6  # 10.0000454


def test_cosine_ignores_vector_norms():
    query, keys = torch.randn(3, 8), torch.randn(3, 5, 8)
    mask = torch.ones(3, 5, dtype=torch.bool)
    a = contrastive_click_logits(query, keys, mask, 0.1)
    b = contrastive_click_logits(7 * query, keys * torch.rand(3, 5, 1) * 9, mask, 0.1)
    assert torch.allclose(a, b, atol=1e-5)


# ------------------------------------------------------------------ 2. padding


def test_padded_slots_never_win_and_get_no_mass():
    query = torch.tensor([[1.0, 0.0]])
    keys = torch.tensor([[[-1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]])  # pads best
    mask = torch.tensor([[True, True, False, False]])
    logits = contrastive_click_logits(query, keys, mask, 0.1)
    assert logits.argmax(-1).item() == 1
    probs = torch.softmax(logits, -1)
    assert probs[0, 2:].sum().item() == 0.0
    assert torch.isclose(probs.sum(), torch.tensor(1.0))


def test_padded_slots_have_no_effect_on_act_outputs():
    data = _data()
    batch = data.batch([0, 1, 2, 3])
    model = _act()
    reference = model(batch)
    noisy = dict(batch)
    pad = ~batch["elem_mask"]
    noisy["elem_image"] = batch["elem_image"] + 5 * pad[..., None]
    noisy["elem_box"] = batch["elem_box"] + 3 * pad[..., None]
    out = model(noisy)
    assert torch.allclose(out["type_logits"], reference["type_logits"], atol=1e-6)
    assert torch.equal(torch.isinf(out["click_logits"]), pad)


# ------------------------------------------------------------------ 3. permutation equivariance


def _permute_screens(batch, generator):
    """Permute the real elements of every screen; return the batch and the permutations."""
    permuted = {k: v.clone() for k, v in batch.items()}
    b, n_steps, k = batch["elem_mask"].shape
    perms = torch.arange(k).repeat(b, n_steps, 1)
    for i in range(b):
        for t in range(n_steps):
            n = int(batch["elem_mask"][i, t].sum())
            perms[i, t, :n] = torch.randperm(n, generator=generator)
    for name, value in batch.items():
        if name.startswith("elem_"):
            index = perms.reshape(b, n_steps, k, *([1] * (value.dim() - 3))).expand_as(value)
            permuted[name] = value.gather(2, index)
    # the click target follows its element: new position of old index
    inverse = perms.argsort(-1)
    target = batch["click_target"]
    moved = inverse.gather(2, target.clamp(min=0)[..., None]).squeeze(-1)
    permuted["click_target"] = torch.where(target >= 0, moved, target)
    return permuted, perms


def test_permutation_equivariance_of_act():
    data = _data(6, seed=3)
    batch = data.batch(list(range(6)))
    model = _act()
    reference = model(batch)
    permuted, perms = _permute_screens(batch, torch.Generator().manual_seed(0))
    out = model(permuted)
    assert torch.allclose(out["type_logits"], reference["type_logits"], atol=1e-5)
    expected = reference["click_logits"].gather(2, perms)
    real = permuted["elem_mask"]
    assert torch.allclose(out["click_logits"][real], expected[real], atol=1e-5)


def test_index_head_is_not_permutation_equivariant():
    data = _data(6, seed=3)
    batch = data.batch(list(range(6)))
    model = _act(click_head="index")
    permuted, perms = _permute_screens(batch, torch.Generator().manual_seed(0))
    expected = model(batch)["click_logits"].gather(2, perms)
    real = permuted["elem_mask"]
    assert not torch.allclose(model(permuted)["click_logits"][real], expected[real], atol=1e-3)


# ------------------------------------------------------------------ 4. causality


def test_layout_blocks():
    layout = token_layout(n_steps=2, n_slots=2)
    # [g, e00, e01, END0, TYPE0, SPEC0, e10, e11, END1, TYPE1, SPEC1]
    assert layout["block"].tolist() == [0, 1, 1, 1, 2, 3, 4, 4, 4, 5, 6]
    assert layout["timestep"].tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    mask = block_causal_mask(layout["block"], torch.ones(1, 11, dtype=torch.bool))[0]
    end0, type0, spec0, end1 = 3, 4, 5, 8
    assert not mask[end0, type0] and not mask[end0, spec0]  # END_t never sees TYPE_t, SPEC_t
    assert mask[type0, end0] and mask[spec0, type0] and not mask[type0, spec0]
    assert mask[1, 2] and mask[2, 1]  # elements of a screen see each other
    assert mask[end1, spec0] and not mask[spec0, end1]  # the past is visible, the future not


def _changed_after(batch, t: int):
    """The batch with every observation and action after step t replaced."""
    changed = {k: v.clone() for k, v in batch.items()}
    for name in ("elem_image", "elem_attrs", "elem_box"):
        changed[name][:, t + 1 :] = torch.rand_like(changed[name][:, t + 1 :])
    changed["elem_words"][:, t + 1 :] = torch.randint_like(changed["elem_words"][:, t + 1 :], 1, 9)
    changed["type_target"][:, t + 1 :] = (changed["type_target"][:, t + 1 :] + 1) % 9
    changed["spec_words"][:, t + 1 :] = 5
    return changed


def _assert_causal(model, batch):
    reference = model(batch)
    n_steps = batch["step_mask"].shape[1]
    for t in range(n_steps - 1):
        out = model(_changed_after(batch, t))
        assert torch.allclose(
            out["type_logits"][:, : t + 1], reference["type_logits"][:, : t + 1], atol=1e-6
        )
        same = reference["click_logits"][:, : t + 1]
        assert torch.allclose(out["click_logits"][:, : t + 1], same, atol=1e-6, equal_nan=True)
    # changing TYPE_t or SPEC_t leaves the END_t type logits unchanged
    for t in range(n_steps):
        changed = {k: v.clone() for k, v in batch.items()}
        changed["type_target"][:, t] = (changed["type_target"][:, t] + 3) % 9
        changed["click_target"][:, t] = -1
        changed["spec_words"][:, t] = 7
        out = model(changed)
        assert torch.allclose(out["type_logits"][:, t], reference["type_logits"][:, t], atol=1e-6)


def test_causality_of_act():
    data = _data(4, seed=1)
    batch = data.batch([0, 1, 2, 3])
    _assert_causal(_act(), batch)
    _assert_causal(_act(click_head="index"), batch)


def test_a_leaky_mask_is_caught(monkeypatch):
    """The causality check has teeth: a mask that lets END_t see TYPE_t and SPEC_t fails it
    (such a leak would pass the click claim trivially, brief Sec. 5)."""
    real_layout = model_module.token_layout

    def leaky_layout(n_steps, n_slots):
        layout = real_layout(n_steps, n_slots)
        layout["block"] = layout["block"].clone()
        layout["block"][1:] = 3 * layout["timestep"][1:] + 1  # whole step is one block
        return layout

    monkeypatch.setattr(model_module, "token_layout", leaky_layout)
    batch = _data(4, seed=1).batch([0, 1, 2, 3])
    with pytest.raises(AssertionError):
        _assert_causal(_act(), batch)


def test_predicted_type_click_equals_prefix_protocol():
    """Replacing TYPE_t alone in the full sequence equals running the prefix up to TYPE_t
    (Sec. 3.4 step 3), because step t never sees later tokens."""
    data = _data(3, seed=2)
    batch = data.batch([0, 1, 2])
    model = _act()
    predicted = model(batch)["type_logits"].argmax(-1)
    under = model.click_logits_under(batch, predicted)
    for t in range(batch["step_mask"].shape[1]):
        prefix = {
            k: v[:, : t + 1] if v.dim() >= 2 and k != "goal_words" else v for k, v in batch.items()
        }
        prefix["type_target"] = prefix["type_target"].clone()
        prefix["type_target"][:, t] = predicted[:, t]
        expected = model(prefix)["click_logits"][:, t]
        assert torch.allclose(under[:, t], expected, atol=1e-5, equal_nan=True)


# ------------------------------------------------------------------ 5. gating


class MockTextModel:
    def __init__(self):
        self.calls = []

    def generate(self, goal, screenshot, elements, action_type):
        self.calls.append(action_type)
        return "typed"


def test_text_model_called_iff_type_needs_text():
    mock = MockTextModel()
    types = ["click", "input_text", "scroll_down", "open_app", "wait", "long_press"]
    texts = gated_text_actions(types, mock, "goal", [()] * 6, [None] * 6)
    assert mock.calls == ["input_text", "open_app"]
    assert [t is not None for t in texts] == [False, True, False, True, False, False]


def test_evaluation_gates_on_predicted_types():
    from papers.limac.train import evaluate
    from shared.config import compose

    data = _data(5, seed=4)
    n = [len(e.steps) for e in data.episodes]
    # predict input_text everywhere for episode 0, click elsewhere
    types = [[ACTION_TYPES.index("input_text")] * n[0]] + [[0] * k for k in n[1:]]
    predictions = {
        "type": types,
        "click_gold_type": [[0] * k for k in n],
        "click_pred_type": [[0] * k for k in n],
        "seconds_per_step": 0.0,
    }
    mock = MockTextModel()
    result = evaluate(predictions, data, compose("limac", "smoke"), mock)
    assert len(mock.calls) == n[0]
    assert result["metrics"]["text_calls"] == n[0] == result["metrics"]["predicted_text_steps"]
    assert result["metrics"]["gating_mismatch"] == 0


# ------------------------------------------------------------------ 6. metrics


def test_text_match_needs_jaccard_above_half():
    assert jaccard("pizza", "pizza pie") == 0.5
    assert not text_matches("pizza", "pizza pie")
    assert jaccard("hello there", "hello there") == 1.0
    assert text_matches("hello there", "Hello there")
    assert not text_matches(None, "anything")


def test_overall_is_zero_when_the_type_is_wrong():
    assert not step_correct("long_press", "click", click_ok=True, text_ok=True)
    assert step_correct("click", "click", click_ok=True, text_ok=False)
    assert not step_correct("click", "click", click_ok=False, text_ok=True)
    assert step_correct("input_text", "input_text", click_ok=False, text_ok=True)
    assert step_correct("scroll_down", "scroll_down", click_ok=False, text_ok=False)
    assert not step_correct("scroll_up", "scroll_down", click_ok=True, text_ok=True)


def test_relaxed_box_match():
    gold = (0.1, 0.1, 0.3, 0.3)
    assert relaxed_box_match(gold, gold)
    assert relaxed_box_match((0.105, 0.1, 0.305, 0.3), gold)  # IoU ~0.95
    assert relaxed_box_match((0.12, 0.12, 0.32, 0.32), gold)  # centre inside, same area
    assert not relaxed_box_match((0.15, 0.15, 0.25, 0.25), gold)  # inside, area ratio 0.25
    assert not relaxed_box_match((0.5, 0.5, 0.7, 0.7), gold)


# ------------------------------------------------------------------ 8. shapes and the loss


def test_ragged_batch_shapes():
    data = _data(6, seed=5)
    batch = data.batch(list(range(6)))
    steps = [len(e.steps) for e in data.episodes]
    assert len(set(steps)) > 1  # ragged steps
    k_max = max(len(s.elements) for e in data.episodes for s in e.steps)
    for model in (
        _act(),
        FlatClassifier(
            HashedElementEncoder(16, N_BUCKETS, 64, 16, 6, len(ELEMENT_CLASSES)),
            d=16,
            hidden=32,
            n_types=len(ACTION_TYPES),
            slots=24,
        ),
    ):
        out = model(batch)
        mask = batch["step_mask"]
        clicks = mask & (batch["click_target"] >= 0)
        assert out["type_logits"][mask].shape == (sum(steps), len(ACTION_TYPES))
        assert out["click_logits"][clicks].shape == (int(clicks.sum()), k_max)
        loss, aux = act_loss(
            out["type_logits"],
            out["click_logits"],
            batch["type_target"],
            batch["click_target"],
            mask,
        )
        assert torch.isfinite(loss) and aux["click_loss"] > 0
        loss.backward()
