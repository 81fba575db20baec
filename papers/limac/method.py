"""LiMAC: Lightweight Neural App Control (Christianos, Papoudakis, Coste et al., ICLR 2025),
arXiv 2410.17883. The contribution, without I/O or configs.

AcT (the Action Transformer) reads one sequence per episode,

    [g, e_{0,1..n0}, END_0, TYPE(a_0), SPEC(a_0), e_{1,1..n1}, END_1, ..., e_{t,1..nt}, END_t],

under a block-causal mask (brief Sec. 3.2), so a single forward pass trains every step. The
action type is read at END_t (cross-entropy); the click target by InfoNCE between the output
at TYPE_t and the outputs at the current screen's elements, cosine over tau (Sec. 3.3). A
text model is called only when the predicted type needs text (input-text, open-app).

Deviations (the brief's own derivations, all configurable): the token layout's SPEC and
positional scheme, the block-causal mask, the query at TYPE_t, tau = 0.1, equal loss
weights, the relaxed click rule (IoU >= 0.9, or centre inside with area ratio in
[0.8, 1.25]).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from papers.limac.episodes import CLICK_TYPES, TEXT_TYPES

# Token roles (added as a learned role embedding, brief Sec. 3.2).
ROLE_GOAL, ROLE_ELEMENT, ROLE_END, ROLE_TYPE, ROLE_SPEC = range(5)
N_ROLES = 5


# ------------------------------------------------------------------ sequence layout and mask


def token_layout(n_steps: int, n_slots: int) -> dict[str, torch.Tensor]:
    """Block, role and timestep of every token of ``[g, (K element slots, END, TYPE, SPEC) x T]``.

    Blocks (brief Sec. 3.2): goal 0, observation t (its elements and END_t) 3t+1, TYPE_t
    3t+2, SPEC_t 3t+3. Each step occupies ``n_slots + 3`` tokens; slot i of step t sits at
    ``1 + t (K + 3) + i``, END_t at ``+ K``, TYPE_t at ``+ K + 1``, SPEC_t at ``+ K + 2``.
    """
    per_step = n_slots + 3
    t = torch.arange(n_steps).repeat_interleave(per_step)  # (T (K+3),)
    within = torch.arange(per_step).repeat(n_steps)
    role = torch.full_like(within, ROLE_ELEMENT)
    role[within == n_slots] = ROLE_END
    role[within == n_slots + 1] = ROLE_TYPE
    role[within == n_slots + 2] = ROLE_SPEC
    block = 3 * t + 1 + (within > n_slots).long() * (within - n_slots)  # obs 3t+1, TYPE +1, SPEC +2
    zero = torch.zeros(1, dtype=torch.long)
    return {
        "block": torch.cat([zero, block]),
        "role": torch.cat([torch.tensor([ROLE_GOAL]), role]),
        "timestep": torch.cat([zero, t]),
    }


def block_causal_mask(
    block: torch.Tensor, key_valid: torch.Tensor, timestep: torch.Tensor | None = None
) -> torch.Tensor:
    """(B, L, L) boolean attention mask, True = query i may attend to key j.

    Key j is visible to query i iff block(j) <= block(i) and j is not padding (brief Sec.
    3.2): observation tokens see the goal, earlier steps and each other; TYPE_t also sees
    observation t; SPEC_t also sees TYPE_t; nothing sees the future. The goal is never
    padding, so no row is empty.

    Args:
        block: (L,) block index per token (:func:`token_layout`).
        key_valid: (B, L) False for padded element slots and padded steps.
        timestep: (L,) given for AcT without history (brief Sec. 4, optional ablation): a
            query then sees only the goal and its own step's tokens.
    """
    causal = block[None, :] <= block[:, None]  # (L, L)
    if timestep is not None:
        causal = causal & ((timestep[None, :] == timestep[:, None]) | (block[None, :] == 0))
    return causal[None] & key_valid[:, None, :]  # (B, L, L)


# ------------------------------------------------------------------ heads and losses


def contrastive_click_logits(
    query: torch.Tensor, keys: torch.Tensor, elem_mask: torch.Tensor, tau: float
) -> torch.Tensor:
    """l_i = cos(q_t, k_{t,i}) / tau over the screen's elements, padded slots -inf (Sec. 3.3).

    Args:
        query: (..., D) q_t = W_q h(TYPE_t).
        keys: (..., K, D) k_{t,i} = W_k h(e_{t,i}).
        elem_mask: (..., K) True for real elements.
    """
    cosine = torch.einsum("...d,...kd->...k", F.normalize(query, dim=-1), F.normalize(keys, dim=-1))
    return (cosine / tau).masked_fill(~elem_mask, float("-inf"))


def info_nce_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """L_click = -log softmax(l)_target, the other elements of the same screen as negatives
    (paper Sec. 3.4 "InfoNCE over the UI elements"; brief Sec. 3.3). Mean over rows.

    Args:
        logits: (N, K) masked logits (padding at -inf gets zero softmax mass).
        target: (N,) index of the gold element.
    """
    return F.cross_entropy(logits, target)


def act_loss(
    type_logits: torch.Tensor,
    click_logits: torch.Tensor,
    type_target: torch.Tensor,
    click_target: torch.Tensor,
    step_mask: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, float]]:
    """L = mean over steps of CE_type + mean over click steps of L_click (equal weights, brief
    Sec. 3.3); steps whose gold type is not click or long-press add no click loss.

    Args:
        type_logits: (B, T, n_types) read at END_t.
        click_logits: (B, T, K) from the gold type's query (teacher forcing).
        type_target, click_target: (B, T); click_target is -1 off click steps.
        step_mask: (B, T) real steps.
    """
    type_loss = F.cross_entropy(type_logits[step_mask], type_target[step_mask])
    clicks = step_mask & (click_target >= 0)
    click_loss = (
        info_nce_loss(click_logits[clicks], click_target[clicks])
        if clicks.any()
        else type_loss.new_zeros(())
    )
    aux = {"type_loss": float(type_loss.detach()), "click_loss": float(click_loss.detach())}
    return type_loss + click_loss, aux


# ------------------------------------------------------------------ gating (paper Sec. 3.3)


def needs_text(action_type: str, gate_types: tuple[str, ...] = TEXT_TYPES) -> bool:
    """Whether a predicted type calls the text model (input-text and open-app only)."""
    return action_type in gate_types


def gated_text_actions(
    predicted_types: list[str],
    text_model,
    goal: str,
    screens: list,
    screenshots: list,
    gate_types: tuple[str, ...] = TEXT_TYPES,
) -> list[str | None]:
    """Per step, the text model's output where the predicted type is in ``gate_types``, else
    ``None`` without calling it: the gating that gives LiMAC its speed (Sec. 3.3-3.4)."""
    texts: list[str | None] = []
    for t, action_type in enumerate(predicted_types):
        if needs_text(action_type, gate_types):
            texts.append(text_model.generate(goal, screenshots[t], screens[t], action_type))
        else:
            texts.append(None)
    return texts


# ------------------------------------------------------------------ metrics (paper Sec. 3.5)


def jaccard(a: str, b: str) -> float:
    """Jaccard index of the lowercase word sets of two strings (1 when both are empty)."""
    sa, sb = set(a.lower().split()), set(b.lower().split())
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def text_matches(predicted: str | None, gold: str, threshold: float = 0.5) -> bool:
    """Relaxed text match: Jaccard index strictly above ``threshold`` (paper: > 0.5)."""
    return predicted is not None and jaccard(predicted, gold) > threshold


def box_iou(a, b) -> float:
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    inter = max(0.0, min(ax1, bx1) - max(ax0, bx0)) * max(0.0, min(ay1, by1) - max(ay0, by0))
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    return inter / union if union > 0 else 0.0


def relaxed_box_match(
    predicted, gold, iou_min: float = 0.9, area_ratio: tuple[float, float] = (0.8, 1.25)
) -> bool:
    """The paper's relaxed click match, our rule (brief Sec. 3.5): IoU >= ``iou_min``, or the
    centre of one box inside the other with an area ratio in ``area_ratio``."""
    if box_iou(predicted, gold) >= iou_min:
        return True

    def area(b):
        return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])

    def centre_inside(a, b):
        cx, cy = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
        return b[0] <= cx <= b[2] and b[1] <= cy <= b[3]

    if area(gold) == 0:
        return False
    ratio = area(predicted) / area(gold)
    inside = centre_inside(predicted, gold) or centre_inside(gold, predicted)
    return inside and area_ratio[0] <= ratio <= area_ratio[1]


def step_correct(
    predicted_type: str,
    gold_type: str,
    click_ok: bool,
    text_ok: bool,
) -> bool:
    """Overall (total) action accuracy of one step (Sec. 3.5): the type is right AND the spec
    is right (the element for click-like types, the text for text types; a scroll's direction
    is in its type). ``click_ok`` must come from the click chosen under the *predicted* type."""
    if predicted_type != gold_type:
        return False
    if gold_type in CLICK_TYPES:
        return click_ok
    if gold_type in TEXT_TYPES:
        return text_ok
    return True
