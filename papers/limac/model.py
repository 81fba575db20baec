"""Networks: the element encoders, AcT (contrastive or index click head) and the flat
baseline (brief Sec. 3.2-3.3, 4, 5).

Every model maps a batch (:mod:`papers.limac.data`) to ``type_logits`` (B, T, n_types) and
``click_logits`` (B, T, K) with padded slots at -inf. ``types`` (B, T) is the type fed to the
click query: the gold type at train time (teacher forcing), the predicted one at test time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from papers.limac.config import HISTORIES
from papers.limac.method import (
    N_ROLES,
    block_causal_mask,
    contrastive_click_logits,
    token_layout,
)

# ------------------------------------------------------------------ element encoders


class HashedElementEncoder(nn.Module):
    """The toy's e_{t,i} (brief Sec. 5): a mean bag of hashed words (EmbeddingBag-style,
    trainable), an MLP over the 8x8 glyph, a linear map of the attributes (with the
    lexical-match scalar), a class embedding and a linear map of the box; summed, then
    LayerNorm (brief Sec. 3.2: project each part to d, sum, normalise)."""

    def __init__(
        self,
        d: int,
        n_buckets: int,
        image_dim: int,
        image_hidden: int,
        n_attrs: int,
        n_classes: int,
    ):
        super().__init__()
        self.words = nn.Embedding(n_buckets + 1, d, padding_idx=0)  # 0 = padding
        self.image = nn.Sequential(
            nn.Linear(image_dim, image_hidden), nn.ReLU(), nn.Linear(image_hidden, d)
        )
        self.attrs = nn.Linear(n_attrs, d)
        self.cls = nn.Embedding(n_classes, d)
        self.box = nn.Linear(4, d)
        self.norm = nn.LayerNorm(d)

    def text(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean of the word embeddings, (..., W) -> (..., d); no words gives zeros."""
        present = (ids > 0).unsqueeze(-1).float()
        summed = (self.words(ids) * present).sum(-2)
        return summed / present.sum(-2).clamp(min=1.0)

    def goal(self, batch) -> torch.Tensor:
        return self.text(batch["goal_words"])  # (B, d)

    def spec_text(self, batch) -> torch.Tensor:
        return self.text(batch["spec_words"])  # (B, T, d)

    def elements(self, batch) -> torch.Tensor:
        parts = (
            self.text(batch["elem_words"])
            + self.image(batch["elem_image"])
            + self.attrs(batch["elem_attrs"])
            + self.cls(batch["elem_cls"])
            + self.box(batch["elem_box"])
        )
        return self.norm(parts)  # (B, T, K, d)


class PretrainedElementEncoder(nn.Module):
    """Paper scale's e_{t,i}: cached CLIP-image and sentence-encoder vectors, each projected
    by its own linear layer, plus attributes, class and box; summed, then LayerNorm."""

    def __init__(self, d: int, text_dim: int, image_dim: int, n_attrs: int, n_classes: int):
        super().__init__()
        self.text_proj = nn.Linear(text_dim, d)
        self.image = nn.Linear(image_dim, d)
        self.attrs = nn.Linear(n_attrs, d)
        self.cls = nn.Embedding(n_classes, d)
        self.box = nn.Linear(4, d)
        self.norm = nn.LayerNorm(d)

    def goal(self, batch) -> torch.Tensor:
        return self.text_proj(batch["goal_vec"])

    def spec_text(self, batch) -> torch.Tensor:
        return self.text_proj(batch["spec_vec"])

    def elements(self, batch) -> torch.Tensor:
        parts = (
            self.text_proj(batch["elem_text_vec"])
            + self.image(batch["elem_image"])
            + self.attrs(batch["elem_attrs"])
            + self.cls(batch["elem_cls"])
            + self.box(batch["elem_box"])
        )
        return self.norm(parts)


# ------------------------------------------------------------------ transformer


class Block(nn.Module):
    """Pre-norm transformer layer with a boolean attention mask."""

    def __init__(self, d: int, heads: int, ff: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.dropout = nn.Dropout(dropout)
        self.attn_dropout = dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, length, 3, self.heads, d // self.heads).unbind(2)
        attended = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            attn_mask=mask[:, None],  # (B, 1, L, L), True = visible
            dropout_p=self.attn_dropout if self.training else 0.0,
        )  # (B, H, L, d_h)
        x = x + self.dropout(self.out(attended.transpose(1, 2).reshape(b, length, d)))
        return x + self.dropout(self.ff(self.norm2(x)))


class ActionTransformer(nn.Module):
    """AcT (paper Sec. 3; brief Sec. 3.2-3.3).

    Tokens: the goal, then per step the element embeddings, END, TYPE(a_t) and SPEC(a_t),
    each plus a learned timestep and role embedding, with no position over the elements of a
    screen (so they are handled permutation-equivariantly). ``click_head="index"`` is the
    brief's ablation: within-screen slot embeddings and a slot classifier at END_t.
    """

    def __init__(
        self,
        encoder: nn.Module,
        *,
        d: int,
        layers: int,
        heads: int,
        ff: int,
        dropout: float,
        max_steps: int,
        n_types: int,
        tau: float,
        click_head: str = "contrastive",
        slots: int = 24,
        history: str = "full",
    ):
        super().__init__()
        if click_head not in ("contrastive", "index"):
            raise ValueError(f"click_head must be contrastive or index, got {click_head!r}")
        self.encoder = encoder
        if history not in HISTORIES:
            raise ValueError(f"model.history must be full or none, got {history!r}")
        self.click_head, self.tau, self.max_steps, self.slots = click_head, tau, max_steps, slots
        self.history = history
        self.timestep = nn.Embedding(max_steps, d)
        self.role = nn.Embedding(N_ROLES, d)
        self.end = nn.Parameter(torch.randn(d) * 0.02)
        self.type_embedding = nn.Embedding(n_types, d)
        self.null_spec = nn.Parameter(torch.randn(d) * 0.02)  # SPEC of actions without a spec
        self.blocks = nn.ModuleList([Block(d, heads, ff, dropout) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.type_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, n_types))
        if click_head == "contrastive":
            self.w_q = nn.Linear(d, d)
            self.w_k = nn.Linear(d, d)
        else:
            self.slot = nn.Embedding(slots, d)
            self.slot_head = nn.Linear(d, slots)

    def spec_tokens(self, batch, elements: torch.Tensor) -> torch.Tensor:
        """SPEC(a_t): the target's element embedding for clicks, the typed text's embedding
        for text actions, a learned null vector otherwise (brief Sec. 3.2)."""
        target = batch["click_target"]  # (B, T)
        gathered = elements.gather(
            2, target.clamp(min=0)[..., None, None].expand(-1, -1, 1, elements.shape[-1])
        ).squeeze(2)  # (B, T, d)
        text = self.encoder.spec_text(batch)  # (B, T, d)
        spec = torch.where(_spec_present(batch)[..., None], text, self.null_spec.expand_as(text))
        return torch.where((target >= 0)[..., None], gathered, spec)

    def forward(self, batch, types: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        types = batch["type_target"] if types is None else types
        elem_mask, step_mask = batch["elem_mask"], batch["step_mask"]
        b, n_steps, k = elem_mask.shape
        if n_steps > self.max_steps:
            raise ValueError(f"{n_steps} steps > model.max_steps={self.max_steps}")
        if self.click_head == "index" and k > self.slots:
            raise ValueError(f"{k} elements > {self.slots} index-head slots")
        elements = self.encoder.elements(batch)  # (B, T, K, d)
        element_tokens = elements
        if self.click_head == "index":
            element_tokens = elements + self.slot.weight[:k]  # within-screen positions
        step_tokens = torch.cat(
            [
                element_tokens,
                self.end.expand(b, n_steps, 1, -1),
                self.type_embedding(types)[:, :, None],
                self.spec_tokens(batch, elements)[:, :, None],
            ],
            dim=2,
        )  # (B, T, K + 3, d)
        layout = {k_: v.to(elements.device) for k_, v in token_layout(n_steps, k).items()}
        goal = self.encoder.goal(batch)[:, None]  # (B, 1, d)
        x = torch.cat([goal, step_tokens.reshape(b, n_steps * (k + 3), -1)], dim=1)
        x = x + self.role(layout["role"]) + self.timestep(layout["timestep"])
        key_valid = torch.cat(
            [
                torch.ones(b, 1, 1, dtype=torch.bool, device=x.device),
                torch.cat([elem_mask, step_mask[..., None].expand(-1, -1, 3)], dim=2).reshape(
                    b, 1, -1
                ),
            ],
            dim=2,
        ).squeeze(1)  # (B, L)
        own_step_only = layout["timestep"] if self.history == "none" else None
        mask = block_causal_mask(layout["block"], key_valid, own_step_only)
        for block in self.blocks:
            x = block(x, mask)
        h = self.norm(x)[:, 1:].reshape(b, n_steps, k + 3, -1)
        h_elements, h_end, h_type = h[:, :, :k], h[:, :, k], h[:, :, k + 1]
        out = {"type_logits": self.type_head(h_end)}  # (B, T, n_types) at END_t
        if self.click_head == "contrastive":
            out["click_logits"] = contrastive_click_logits(
                self.w_q(h_type), self.w_k(h_elements), elem_mask, self.tau
            )  # (B, T, K) from the TYPE_t query
        else:
            out["click_logits"] = self.slot_head(h_end)[..., :k].masked_fill(
                ~elem_mask, float("-inf")
            )
        return out

    def click_logits_under(self, batch, predicted: torch.Tensor) -> torch.Tensor:
        """Click logits of every step t with TYPE_t = the predicted type and the history's
        types gold (offline protocol, Sec. 3.4 step 3). Step t's outputs depend only on
        tokens up to TYPE_t (the mask), so replacing TYPE_t alone in the full sequence is
        the same as appending it to the prefix; one pass per step."""
        if self.click_head == "index":  # the slot head reads END_t, which never sees TYPE_t
            return self(batch)["click_logits"]
        gold = batch["type_target"]
        columns = []
        for t in range(gold.shape[1]):
            types = gold.clone()
            types[:, t] = predicted[:, t]
            columns.append(self(batch, types)["click_logits"][:, t])
        return torch.stack(columns, dim=1)


def _spec_present(batch) -> torch.Tensor:
    """(B, T) whether the step's SPEC is text (a text action with its typed text)."""
    if "spec_words" in batch:
        return (batch["spec_words"] > 0).any(-1)
    return batch["spec_vec"].abs().sum(-1) > 0


class FlatClassifier(nn.Module):
    """The monolithic baseline (brief Sec. 4): per step, an MLP over [goal, mean-pool and
    max-pool of the elements, previous action type, K element slots in screen order] predicts
    the type; a linear head on [hidden, one-hot(type)] predicts the click as a slot."""

    def __init__(self, encoder: nn.Module, *, d: int, hidden: int, n_types: int, slots: int):
        super().__init__()
        self.encoder, self.slots, self.n_types = encoder, slots, n_types
        self.previous_type = nn.Embedding(n_types + 1, d)  # index n_types: no previous step
        self.mlp = nn.Sequential(
            nn.Linear((4 + slots) * d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.type_head = nn.Linear(hidden, n_types)
        self.click_head = nn.Linear(hidden + n_types, slots)

    def forward(self, batch, types: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        types = batch["type_target"] if types is None else types
        elem_mask = batch["elem_mask"]
        b, n_steps, k = elem_mask.shape
        if k > self.slots:
            raise ValueError(f"{k} elements > {self.slots} flat-classifier slots")
        elements = self.encoder.elements(batch) * elem_mask[..., None]  # (B, T, K, d)
        count = elem_mask.sum(-1, keepdim=True).clamp(min=1)
        mean_pool = elements.sum(2) / count
        max_pool = elements.masked_fill(~elem_mask[..., None], float("-inf")).amax(2)
        max_pool = torch.where(torch.isfinite(max_pool), max_pool, torch.zeros_like(max_pool))
        start = torch.full((b, 1), self.n_types, dtype=torch.long, device=types.device)
        previous = self.previous_type(torch.cat([start, batch["type_target"][:, :-1]], dim=1))
        slots = F.pad(elements, (0, 0, 0, self.slots - k)).flatten(2)  # (B, T, slots d)
        goal = self.encoder.goal(batch)[:, None].expand(-1, n_steps, -1)
        hidden = self.mlp(torch.cat([goal, mean_pool, max_pool, previous, slots], dim=-1))
        one_hot = F.one_hot(types, self.n_types).float()
        click = self.click_head(torch.cat([hidden, one_hot], dim=-1))[..., :k]
        return {
            "type_logits": self.type_head(hidden),
            "click_logits": click.masked_fill(~elem_mask, float("-inf")),
        }

    def click_logits_under(self, batch, predicted: torch.Tensor) -> torch.Tensor:
        return self(batch, predicted)["click_logits"]  # steps are independent


class RandomClickAgent(nn.Module):
    """The brief's stub (Sec. 5): always "click", on a uniformly random element. It must
    fail the click and type claims."""

    def __init__(self, n_types: int, click_index: int, seed: int):
        super().__init__()
        self.n_types, self.click_index, self.seed = n_types, click_index, seed

    def forward(self, batch, types: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        elem_mask = batch["elem_mask"]
        b, n_steps, _ = elem_mask.shape
        type_logits = torch.zeros(b, n_steps, self.n_types)
        type_logits[..., self.click_index] = 1.0
        generator = torch.Generator().manual_seed(self.seed)
        noise = torch.rand(elem_mask.shape, generator=generator)
        return {
            "type_logits": type_logits,
            "click_logits": noise.masked_fill(~elem_mask, float("-inf")),
        }

    def click_logits_under(self, batch, predicted: torch.Tensor) -> torch.Tensor:
        return self(batch)["click_logits"]
