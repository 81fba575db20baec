"""LucidPPN's networks (brief 3.1-3.3) and the single-branch RGB baseline (brief Sec. 4).

* :class:`ShapeTexNet`: backbone on the grayscale image, 1x1 conv to K*M channels, sigmoid.
* :class:`ColorNet`: the same MLP on every pixel of the un-normalised RGB image (1x1 convs).
* :class:`LucidPPN`: both, fused through a stop-gradient; :class:`RGBPrototypeNet`: the
  entangled baseline (same backbone and head on RGB, no ColorNet).

Backbones: the toy CNN of brief Sec. 5, or ConvNeXt-tiny through ``transformers`` with the
stride reduction of brief 3.1 step 2 (loaded from a local folder, never downloaded).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from papers.lucidppn.method import downscale, fuse, grayscale_input, predict, resemblance


# ------------------------------------------------------------------------------ backbones
def toy_backbone(in_channels: int, channels: list[int], strides: list[int]) -> nn.Sequential:
    """Conv3x3-BN-ReLU blocks (brief Sec. 5: 1->32, 32->48 s2, 48->64 s2, 64->64: 32 -> 8)."""
    if len(channels) != len(strides):
        raise ValueError(
            f"model.toy_channels {channels} and model.toy_strides {strides} differ in length"
        )
    layers: list[nn.Module] = []
    for out, stride in zip(channels, strides, strict=True):
        layers += [
            nn.Conv2d(in_channels, out, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(out),
            nn.ReLU(inplace=True),
        ]
        in_channels = out
    return nn.Sequential(*layers)


def reduce_convnext_strides(convnext: nn.Module, min_in_channels: int) -> list[str]:
    """Brief 3.1 step 2: every stride-2 convolution with more than ``min_in_channels`` input
    channels gets stride 1 (100: a 224^2 input gives 26 x 26 maps; 300: 13 x 13).

    In ConvNeXt those are the 2x2 downsampling convolutions of the later stages (the stem is
    a 4x4 stride-4 patchify conv and stays). Returns the names of the changed convolutions.
    """
    changed = []
    for name, module in convnext.named_modules():
        if (
            isinstance(module, nn.Conv2d)
            and module.stride == (2, 2)
            and module.in_channels > min_in_channels
        ):
            module.stride = (1, 1)
            changed.append(name)
    return changed


class ConvNextFeatures(nn.Module):
    """ConvNeXt feature extractor (classifier and final pooled norm removed): ``transformers``'
    ``ConvNextModel`` loaded with ``from_pretrained(local_dir)``, strides reduced."""

    def __init__(self, path: str, min_in_channels: int) -> None:
        super().__init__()
        from transformers import ConvNextModel  # the paper scale only; the toy never imports it

        self.convnext = ConvNextModel.from_pretrained(path, local_files_only=True)
        # The final LayerNorm acts only on the pooled vector (the classifier's input), which
        # LucidPPN never uses; torchvision's ``features`` have no such layer either.
        self.convnext.layernorm = nn.Identity()
        self.reduced = reduce_convnext_strides(self.convnext, min_in_channels)
        self.out_channels = self.convnext.config.hidden_sizes[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.convnext(pixel_values=x).last_hidden_state  # (B, C, H, W)

    def last_block(self) -> nn.Module:
        """The block the paper keeps training while the rest is frozen (``features.7.2`` of
        torchvision's ConvNeXt-tiny: the last block of the last stage)."""
        return self.convnext.encoder.stages[-1].layers[-1]


# ---------------------------------------------------------------------------- branches
class PrototypeHead(nn.Module):
    """f^cl: 1x1 conv C -> K*M with bias, then a sigmoid (brief 3.1 step 3); Xavier-uniform
    weights with the sigmoid gain; the bias keeps PyTorch's default init, as the official
    MetiNet head does."""

    def __init__(self, in_channels: int, num_parts: int, num_classes: int) -> None:
        super().__init__()
        self.num_parts, self.num_classes = num_parts, num_classes
        self.conv = nn.Conv2d(in_channels, num_parts * num_classes, kernel_size=1)
        nn.init.xavier_uniform_(self.conv.weight, gain=nn.init.calculate_gain("sigmoid"))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        b, _, h, w = features.shape
        z = torch.sigmoid(self.conv(features))  # (B, K*M, H, W), channel k*M + m
        return z.view(b, self.num_parts, self.num_classes, h, w)  # (B, K, M, H, W)


class ColorNet(nn.Module):
    """Per-pixel MLP 3 -> widths ... -> K*M, ReLU between, sigmoid at the end, as 1x1 convs
    (brief 3.2 step 2; paper widths 20, 50, 150, 200, 600). No spatial context: it cannot see
    shape."""

    def __init__(self, widths: list[int], num_parts: int, num_classes: int) -> None:
        super().__init__()
        self.num_parts, self.num_classes = num_parts, num_classes
        layers: list[nn.Module] = []
        in_channels = 3
        for width in widths:
            layers += [nn.Conv2d(in_channels, width, kernel_size=1), nn.ReLU(inplace=True)]
            in_channels = width
        layers.append(nn.Conv2d(in_channels, num_parts * num_classes, kernel_size=1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, rgb: torch.Tensor) -> torch.Tensor:
        """Un-normalised RGB at the map size (B, 3, H, W) -> Z_C (B, K, M, H, W)."""
        b, _, h, w = rgb.shape
        return torch.sigmoid(self.mlp(rgb)).view(b, self.num_parts, self.num_classes, h, w)


@dataclass
class Outputs:
    """Maps and scores of one forward pass. For the single-branch baseline the only maps are
    its own: ``z_shape`` and ``z`` are the same tensor, ``z_color`` is None."""

    z_shape: torch.Tensor  # Z_S (B, K, M, H, W)
    z_color: torch.Tensor | None  # Z_C (B, K, M, H, W)
    z: torch.Tensor  # Z (B, K, M, H, W)
    r_shape: torch.Tensor  # r^S (B, K, M)
    r: torch.Tensor  # r (B, K, M)

    @property
    def p_shape(self) -> torch.Tensor:  # (B, M)
        return predict(self.r_shape)

    @property
    def p(self) -> torch.Tensor:  # (B, M)
        return predict(self.r)


class LucidPPN(nn.Module):
    """ShapeTexNet on the luma image and ColorNet on the RGB image, fused (brief 3.1-3.3).

    Takes the *un-normalised* RGB image: both views are derived from the same (augmented)
    tensor here, so they can never be misaligned (brief 3.8 item 6).
    """

    def __init__(
        self,
        backbone: nn.Module,
        feature_channels: int,
        colornet: ColorNet,
        num_parts: int,
        num_classes: int,
        gray_mean: float,
        gray_std: float,
        gray_channels: int,
        resize: str,
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = PrototypeHead(feature_channels, num_parts, num_classes)
        self.colornet = colornet
        self.gray_mean, self.gray_std, self.gray_channels = gray_mean, gray_std, gray_channels
        self.resize = resize

    def shape_maps(self, x: torch.Tensor) -> torch.Tensor:
        """Z_S = sigmoid(f^cl(f^b(x_S))), brief 3.1."""
        x_s = grayscale_input(x, self.gray_mean, self.gray_std, self.gray_channels)
        return self.head(self.backbone(x_s))

    def forward(self, x: torch.Tensor) -> Outputs:
        z_shape = self.shape_maps(x)  # (B, K, M, H, W)
        rgb_small = downscale(x, tuple(z_shape.shape[-2:]), self.resize)  # (B, 3, H, W)
        z_color = self.colornet(rgb_small)
        z = fuse(z_color, z_shape)
        return Outputs(z_shape, z_color, z, resemblance(z_shape), resemblance(z))

    def network_parameters(self) -> list[nn.Parameter]:
        """Backbone + 1x1 head: the first optimiser's group (brief 3.5)."""
        return [*self.backbone.parameters(), *self.head.parameters()]


class RGBPrototypeNet(nn.Module):
    """Single-branch "entangled" baseline (brief Sec. 4): the same backbone and 1x1 sigmoid
    head on the normalised RGB image, max-pool and mean over parts; no ColorNet."""

    def __init__(
        self,
        backbone: nn.Module,
        feature_channels: int,
        num_parts: int,
        num_classes: int,
        rgb_mean: list[float],
        rgb_std: list[float],
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = PrototypeHead(feature_channels, num_parts, num_classes)
        self.register_buffer("rgb_mean", torch.tensor(rgb_mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("rgb_std", torch.tensor(rgb_std).view(1, 3, 1, 1), persistent=False)

    def forward(self, x: torch.Tensor) -> Outputs:
        z = self.head(self.backbone((x - self.rgb_mean) / self.rgb_std))
        r = resemblance(z)
        return Outputs(z, None, z, r, r)

    def network_parameters(self) -> list[nn.Parameter]:
        return list(self.parameters())
