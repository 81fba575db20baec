"""Networks of the AdamCB experiments: the toy MLP and the paper's MLP, CNN and VGG-style nets.

No BatchNorm anywhere: per-sample gradients (vmap over single examples) need layers whose
output for one example does not depend on the others.
"""

from __future__ import annotations

import torch
from torch import nn

POOL = 2  # every conv block ends with a 2x2 max pool


class MLP(nn.Module):
    """Flatten, then ``in -> hidden[0] -> ... -> classes`` with ReLU between layers.

    Toy: 64 -> 64 -> 10 (brief Sec. 5); paper: 784 -> 512 -> 256 -> 10 (official models.py).
    """

    def __init__(self, in_features: int, hidden: list[int], num_classes: int):
        super().__init__()
        widths = [in_features, *hidden]
        layers: list[nn.Module] = [nn.Flatten()]
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(widths[-1], num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)  # (B, classes)


class ConvNet(nn.Module):
    """Blocks of 'same'-padded convs + ReLU, each block ending in a 2x2 max pool, then an MLP.

    The paper's nets are instances:
    CNN on MNIST: blocks [[32], [64]], first kernel 5, head [128, 64];
    VGG on MNIST/CIFAR: blocks [[64, 64], [128, 128], [256, 256, 256]], head [512, 512].
    """

    def __init__(
        self,
        in_shape: tuple[int, int, int],
        conv_blocks: list[list[int]],
        first_kernel: int,
        fc_hidden: list[int],
        num_classes: int,
    ):
        super().__init__()
        channels, height, width = in_shape
        layers: list[nn.Module] = []
        kernel = first_kernel
        for block in conv_blocks:
            for out_channels in block:
                layers += [
                    nn.Conv2d(channels, out_channels, kernel, padding=kernel // 2),
                    nn.ReLU(),
                ]
                channels, kernel = out_channels, 3
            layers.append(nn.MaxPool2d(POOL, POOL))
            height, width = height // POOL, width // POOL
        self.features = nn.Sequential(*layers)
        self.head = MLP(channels * height * width, fc_hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))  # (B, classes)


def build_model(
    name: str,
    in_shape: tuple[int, ...],
    num_classes: int,
    hidden: list[int],
    conv_blocks: list[list[int]],
    first_kernel: int,
    fc_hidden: list[int],
) -> nn.Module:
    """The network named by ``model.name`` for inputs of shape ``in_shape`` (no batch dim)."""
    if name == "mlp":
        return MLP(int(torch.tensor(in_shape).prod()), hidden, num_classes)
    if name == "convnet":
        if len(in_shape) != 3:
            raise ValueError(f"model.name=convnet needs image inputs (C, H, W), got {in_shape}")
        return ConvNet(in_shape, conv_blocks, first_kernel, fc_hidden, num_classes)
    raise ValueError(f"unknown model.name {name!r}: mlp or convnet")
