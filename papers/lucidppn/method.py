"""LucidPPN: Unambiguous Prototypical Parts Network for User-centric Interpretable Computer
Vision (Pach, Lewandowska, Tabor, Zieliński, Rymarczyk; ICLR 2025), arXiv 2405.14331.

The contribution, as functions of tensors (no I/O, no config). A prototypical-parts network
whose evidence is split in two: ShapeTexNet sees only the ITU-R 601 luma image and gives one
sigmoid map per (part k, class m); ColorNet, a per-pixel MLP, sees only the colour at each
location. The fused map Z = Z_C * sg(Z_S) asks "is the colour right *where* part k of class m
was found?"; predictions are means over parts of max-pooled maps; three per-part binary
cross-entropies train it (L_S, L_C, and L_D aligning the true class's maps with part masks).

Equation numbers refer to the brief's Sec. 3 (the paper's Sec. 3 follows the same order):
3.1 ShapeTexNet, 3.2 ColorNet, 3.3 fusion and prediction, 3.4 losses, 3.7 evaluation.
The networks themselves are in ``model.py``.

Deviations (see README): the hue analysis uses the brief's YIQ rotation of the chroma plane
(luma kept exactly) rather than the official ``random_hue_jitter`` (HSV rotation, then a
per-pixel rescale back to the old grey value); both are luminance preserving. Part-alignment
scores are averaged over images (an image whose denominator is empty is skipped).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

# ITU-R 601 luma weights (torchvision's Grayscale, brief 3.1 step 1).
LUMA_WEIGHTS = (0.299, 0.587, 0.114)
# YIQ analysis matrix: the first row is the luma; the I and Q rows span the chroma plane.
YIQ_FROM_RGB = (
    (0.299, 0.587, 0.114),
    (0.596, -0.274, -0.322),
    (0.211, -0.523, 0.312),
)


# ------------------------------------------------------------------ 3.1 grayscale input
def luma(x: torch.Tensor) -> torch.Tensor:
    """w = 0.299 r + 0.587 g + 0.114 b of an RGB batch (B, 3, H, W) -> (B, 1, H, W).

    Brief 3.1 step 1 (ITU-R 601). Not the channel mean: the mean of two iso-luminant colours
    differs, so a channel-mean branch would see colour (brief 3.8 item 5).
    """
    if x.dim() != 4 or x.shape[1] != 3:
        raise ValueError(f"luma expects an RGB batch (B, 3, H, W), got shape {tuple(x.shape)}")
    weights = x.new_tensor(LUMA_WEIGHTS).view(1, 3, 1, 1)
    return (x * weights).sum(dim=1, keepdim=True)


def grayscale_input(x: torch.Tensor, mean: float, std: float, channels: int) -> torch.Tensor:
    """x_S: the normalised luma image, replicated to ``channels`` (3 for an ImageNet
    backbone, as ``Grayscale(3)``; 1 for the toy's one-channel CNN). Brief 3.1 step 1."""
    return ((luma(x) - mean) / std).expand(-1, channels, -1, -1)  # (B, channels, H, W)


def rotate_hue(x: torch.Tensor, angle: float) -> torch.Tensor:
    """Luminance-preserving hue rotation by ``angle`` radians, without clipping (brief 3.7 and
    Sec. 5 "Hue-shift test set").

    RGB -> YIQ, rotate the (I, Q) chroma plane, back to RGB with the exact inverse matrix, so
    the luma of every pixel is unchanged up to rounding and ShapeTexNet cannot see the change.
    Values may leave [0, 1]: clipping would change the luma.

    Args:
        x: RGB images (..., 3, H, W).
        angle: rotation of the chroma plane in radians.
    """
    yiq = torch.tensor(YIQ_FROM_RGB, dtype=torch.float64)
    cos, sin = (
        torch.cos(torch.tensor(angle, dtype=torch.float64)),
        torch.sin(torch.tensor(angle, dtype=torch.float64)),
    )
    rotation = torch.eye(3, dtype=torch.float64)
    rotation[1:, 1:] = torch.stack([torch.stack([cos, -sin]), torch.stack([sin, cos])])
    transform = torch.linalg.inv(yiq) @ rotation @ yiq  # (3, 3), acts on RGB column vectors
    rgb = x.to(torch.float64).movedim(-3, -1)  # (..., H, W, 3)
    return (rgb @ transform.T).movedim(-1, -3).to(x.dtype)


def downscale(x: torch.Tensor, size: tuple[int, int], mode: str) -> torch.Tensor:
    """Anti-aliased resize of images or masks to the feature-map size (brief 3.2 step 1, 3.4).

    ``area`` is adaptive average pooling (an exact box filter for integer factors, the toy's
    choice); ``bilinear`` is the anti-aliased bilinear resize of torchvision's ``Resize``.
    """
    if tuple(x.shape[-2:]) == tuple(size):
        return x
    if mode == "area":
        return F.adaptive_avg_pool2d(x, size)
    if mode == "bilinear":
        return F.interpolate(x, size=size, mode="bilinear", antialias=True, align_corners=False)
    raise ValueError(f"unknown resize mode {mode!r}; choose area or bilinear")


# ------------------------------------------------------------ 3.3 fusion and prediction
def fuse(z_color: torch.Tensor, z_shape: torch.Tensor) -> torch.Tensor:
    """Z = Z_C * sg(Z_S), brief 3.3. Both (B, K, M, H, W).

    The stop-gradient is the point: L_C then trains only ColorNet, so r^S keeps reporting
    shape/texture evidence alone (brief 3.8 item 1).
    """
    return z_color * z_shape.detach()


def resemblance(z: torch.Tensor) -> torch.Tensor:
    """r_{k,m} = max_{h,w} Z[k, m, h, w]: (B, K, M, H, W) -> (B, K, M). Brief 3.1 step 4, 3.3."""
    return z.flatten(start_dim=-2).amax(dim=-1)


def predict(r: torch.Tensor) -> torch.Tensor:
    """p_m = (1/K) sum_k r_{k,m}: (B, K, M) -> (B, M), in (0, 1). Brief 3.1 step 4, 3.3;
    the predicted class is argmax_m p_m (no linear classifier, as in every reported run)."""
    return r.mean(dim=1)


# --------------------------------------------------------------------------- 3.4 losses
def per_part_bce(r: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(1/K) sum_k BCE(r_{k,.}, y): binary cross-entropy on probabilities, averaged over the
    M classes, the K parts and the batch. Brief 3.4 (L_S on r^S, L_C on the fused r).

    Each part must classify on its own; no softmax (brief 3.8 item 3).

    Args:
        r: resemblances (B, K, M) in (0, 1).
        y: class labels (B,).
    """
    target = F.one_hot(y, r.shape[-1]).to(r.dtype).unsqueeze(1).expand_as(r)  # (B, K, M)
    return F.binary_cross_entropy(r, target)


def part_alignment_loss(
    z_shape: torch.Tensor, masks: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """L_D = (1/K) sum_k BCE(Z_S[k, y, :, :], m_k), pixel-wise mean. Brief 3.4.

    Only the true class's channel of each part is supervised (brief 3.8 item 4).

    Args:
        z_shape: ShapeTexNet maps (B, K, M, H, W).
        masks: part masks already resized to (H, W) and clamped to [0, 1], (B, K, H, W).
        y: class labels (B,).
    """
    b, k = z_shape.shape[:2]
    if masks.shape != (b, k, *z_shape.shape[-2:]):
        raise ValueError(
            f"part masks {tuple(masks.shape)} do not match the maps {tuple(z_shape.shape)}"
        )
    index = y.view(b, 1, 1, 1, 1).expand(b, k, 1, *z_shape.shape[-2:])
    true_class_maps = z_shape.gather(2, index).squeeze(2)  # (B, K, H, W)
    return F.binary_cross_entropy(true_class_maps, masks)


@dataclass
class LossTerms:
    total: torch.Tensor
    shape: torch.Tensor  # L_S
    color: torch.Tensor  # L_C (zero for the single-branch baseline)
    alignment: torch.Tensor  # L_D


def lucid_loss(
    r_shape: torch.Tensor,
    r_fused: torch.Tensor | None,
    z_shape: torch.Tensor,
    masks: torch.Tensor,
    y: torch.Tensor,
    alpha_d: float,
    alpha_s: float,
    alpha_c: float,
) -> LossTerms:
    """L = alpha_D L_D + alpha_S L_S + alpha_C L_C, brief 3.4.

    ``r_fused=None`` is the single-branch RGB baseline (brief Sec. 4: L_S and L_D only).
    With ``alpha_d == 0`` the alignment term is not even computed (the Sec. 5 ablation).
    """
    shape = per_part_bce(r_shape, y)
    color = per_part_bce(r_fused, y) if r_fused is not None else shape.new_zeros(())
    alignment = part_alignment_loss(z_shape, masks, y) if alpha_d != 0 else shape.new_zeros(())
    total = alpha_d * alignment + alpha_s * shape + alpha_c * color
    return LossTerms(total, shape, color, alignment)


# ---------------------------------------------------------------- 3.7 evaluation outputs
def colour_twin_gaps(r: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-part colour-twin gap: mean over images of r_{k,y} - r_{k,y xor 1} (brief Sec. 5
    "Metrics"; toy classes 2g and 2g + 1 differ only in body colour). (B, K, M) -> (K,)."""
    idx = torch.arange(len(y))
    return (r[idx, :, y] - r[idx, :, y ^ 1]).mean(dim=0)


def localisation_ratio(gaps: torch.Tensor, focus: int, floor: float) -> float:
    """rho = gap[focus] / max(|gap[other]| ..., floor): how exclusively one part carries the
    evidence separating colour twins (brief Sec. 5 claim 4; focus = the body)."""
    others = torch.cat([gaps[:focus], gaps[focus + 1 :]]).abs()
    return float(gaps[focus] / torch.clamp(others.max(), min=floor))


def part_alignment_scores(
    z: torch.Tensor, r: torch.Tensor, masks: torch.Tensor, threshold: float = 0.5
) -> dict[str, torch.Tensor]:
    """Part IoU, intersection over prediction and over target, per image (brief 3.7).

    For part k the map of the class with the highest r_{k,.} is binarised at ``threshold``
    and compared with the binarised resized mask. A ratio whose denominator is empty (no
    predicted or no target pixel) is NaN; average with ``nanmean`` over images.

    Args:
        z: maps (B, K, M, H, W); r: the resemblances that pick the class (B, K, M);
            masks: (B, K, H, W) at the maps' size.

    Returns:
        ``iou``, ``iop``, ``iot``: each (B, K).
    """
    b, k, _, h, w = z.shape
    best = r.argmax(dim=-1)  # (B, K)
    index = best.view(b, k, 1, 1, 1).expand(b, k, 1, h, w)
    predicted = z.gather(2, index).squeeze(2) > threshold  # (B, K, H, W)
    target = masks > threshold
    inter = (predicted & target).flatten(2).sum(-1).double()  # (B, K)

    def ratio(den: torch.Tensor) -> torch.Tensor:
        den = den.flatten(2).sum(-1).double()
        return torch.where(den > 0, inter / den.clamp(min=1), torch.full_like(den, float("nan")))

    return {"iou": ratio(predicted | target), "iop": ratio(predicted), "iot": ratio(target)}


def colour_cube(levels: int = 5) -> torch.Tensor:
    """The RGB cube the colour prototypes are read from: levels^3 colours in [0, 1], (N, 3).
    Brief 3.7 (5 x 5 x 5 = 125)."""
    axis = torch.linspace(0.0, 1.0, levels)
    r, g, b = torch.meshgrid(axis, axis, axis, indexing="ij")
    return torch.stack([r.flatten(), g.flatten(), b.flatten()], dim=1)


@dataclass
class ColourPrototype:
    colours: torch.Tensor  # (N, 3) sorted by score, best first
    scores: torch.Tensor  # (N,) ColorNet scores of those colours, descending
    n_kept: int  # the top colours whose cumulative score first reaches ``mass`` of the total


def colour_prototype(cube_scores: torch.Tensor, cube: torch.Tensor, mass: float) -> ColourPrototype:
    """Sort the cube's colours by their ColorNet score for one (k, m) and keep the top ones
    until their cumulative score reaches ``mass`` (70 %) of the total. Brief 3.7.

    Args:
        cube_scores: ColorNet output for each cube colour and one (k, m), (N,).
        cube: the colours, (N, 3).
    """
    scores, order = cube_scores.sort(descending=True)
    cumulative = scores.cumsum(0)
    n_kept = int((cumulative < mass * cumulative[-1]).sum()) + 1
    return ColourPrototype(cube[order], scores, min(n_kept, len(scores)))


@dataclass
class PartEvidence:
    """The explanation of one decision for one part (brief 3.7)."""

    part: int
    location: tuple[int, int]  # (h, w) of max Z_S[k, m_hat] on the feature map
    shape_score: float  # r^S_{k, m_hat}
    fused_score: float  # r_{k, m_hat}


def explain(
    z_shape: torch.Tensor, r_shape: torch.Tensor, r_fused: torch.Tensor
) -> tuple[int, list[PartEvidence]]:
    """Per-part explanation of one image's decision (brief 3.7): the predicted class m_hat,
    and per part k the location of max Z_S[k, m_hat] and the scores r^S_{k,m_hat}, r_{k,m_hat}.

    Args:
        z_shape: (K, M, H, W); r_shape, r_fused: (K, M) for a single image.
    """
    m_hat = int(predict(r_fused.unsqueeze(0)).argmax())
    w = z_shape.shape[-1]
    evidence = []
    for k in range(z_shape.shape[0]):
        flat = int(z_shape[k, m_hat].argmax())
        evidence.append(
            PartEvidence(
                k, (flat // w, flat % w), float(r_shape[k, m_hat]), float(r_fused[k, m_hat])
            )
        )
    return m_hat, evidence
