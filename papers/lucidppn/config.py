"""Typed config of the LucidPPN experiment (schema for configs/lucidppn/*.yaml).

Every key here is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's (brief Sec. 5); ``configs/lucidppn/paper.yaml`` sets the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    require,
    require_at_least,
    require_choice,
    require_positive,
)


@dataclass
class DataConfig:
    name: str = "toy_birds"  # toy_birds (generated) | image_folder (local paper-scale tree)
    root: str | None = None  # image_folder: <root>/{train,test}/<class>/<image>; never downloaded
    num_parts: int = 3  # K (toy: head, body, tail; paper: 2/3/4/8/12 per data set)
    num_classes: int = 8  # M (CUB 200, Cars 196, Dogs 120, Flowers 102)
    image_size: int = 32  # input side (toy 32; paper 224)
    # toy_birds
    n_train: int = 2000
    n_test: int = 1000
    test_seed_offset: int = 999  # test images from seed test_seed_offset + run seed
    # image_folder
    resize_to: int = 232  # resize before the crop (224 + zoom 8)
    crop_scale: list[float] = field(default_factory=lambda: [0.95, 1.0])  # RandomResizedCrop
    augment: bool = False  # image_folder: TrivialAugmentWide (geometric) + flip + crop, masks too
    num_workers: int = 0  # DataLoader worker processes for image_folder
    max_train_images: int | None = None  # first N of the sorted training list; None: all
    max_test_images: int | None = None


@dataclass
class ModelConfig:
    backbone: str = "toy_cnn"  # toy_cnn | convnext (transformers' ConvNextModel, local folder)
    toy_channels: list[int] = field(default_factory=lambda: [32, 48, 64, 64])
    toy_strides: list[int] = field(default_factory=lambda: [1, 2, 2, 1])
    convnext_path: str | None = None  # folder for ConvNextModel.from_pretrained (local only)
    stride_reduction_min_channels: int = 100  # 100: 26 x 26 maps at 224^2; 300: 13 x 13
    color_widths: list[int] = field(default_factory=lambda: [32, 64])  # ColorNet hidden widths
    gray_mean: float = 0.3  # x_S normalisation (paper 0.445)
    gray_std: float = 0.2  # (paper 0.269)
    gray_channels: int = 1  # luma replicated to this many channels (3 for ImageNet backbones)
    rgb_mean: list[float] = field(default_factory=lambda: [0.3, 0.3, 0.3])  # RGB baseline input
    rgb_std: list[float] = field(default_factory=lambda: [0.2, 0.2, 0.2])
    resize: str = "area"  # map-size resize of ColorNet's input and the masks: area | bilinear
    channels_last: bool = False  # NHWC convolutions (toy CNN on CPU: ~20 % faster)


@dataclass
class LossConfig:
    alpha_d: float = 1.4  # part alignment L_D (the no_align method sets it to 0)
    alpha_s: float = 1.0  # ShapeTexNet classification L_S
    alpha_c: float = 1.0  # fused classification L_C


@dataclass
class OptimConfig:
    batch_size: int = 64
    epochs: int = 8
    lr_net: float = 2e-3  # AdamW on backbone + 1x1 head
    lr_color: float = 2e-3  # AdamW on ColorNet
    weight_decay: float = 0.0
    freeze_epochs: int = 0  # epochs with the backbone frozen except its last block
    unfrozen_lr_factor: float = 0.1  # network LR factor after the freeze epochs


@dataclass
class EvalConfig:
    hue_angle: float = 2.0  # rad: luminance-preserving hue rotation of the test set
    threshold: float = 0.5  # binarisation of maps and masks for part IoU / IoP / IoT
    colour_twins: bool = True  # toy: classes 2g and 2g + 1 differ only in body colour
    rho_floor: float = 0.01  # floor of the denominator of the localisation ratio
    cube_levels: int = 5  # colour prototypes on a levels^3 RGB cube
    prototype_mass: float = 0.7  # keep top colours up to this share of the total score
    batch_size: int = 500  # evaluation chunk


@dataclass
class Config(ExperimentConfig):
    methods: list[str] = field(default_factory=lambda: ["lucidppn", "rgb", "no_align"])
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)
    # CPU only: keep freed activation buffers in the process instead of returning them to the
    # OS after every step (glibc mallopt); the toy spent a third of its CPU time page-faulting
    keep_freed_memory: bool = False

    def validate(self) -> None:
        super().validate()
        d, m = self.data, self.model
        require_choice("data.name", d.name, ("toy_birds", "image_folder"))
        require_choice("model.backbone", m.backbone, ("toy_cnn", "convnext"))
        require_choice("model.resize", m.resize, ("area", "bilinear"))
        for key in ("num_parts", "num_classes", "image_size", "n_train", "n_test"):
            require_at_least(f"data.{key}", getattr(d, key), 1)
        for key in ("batch_size", "epochs"):
            require_at_least(f"optim.{key}", getattr(self.optim, key), 1)
        require_at_least("optim.freeze_epochs", self.optim.freeze_epochs, 0)
        require_positive("eval.batch_size", self.eval.batch_size)
        if d.name == "toy_birds":  # case 15: the image-folder loader's options do nothing here
            why = "only the image_folder loader reads it (the toy generator jitters its own images)"
            require(
                not d.augment,
                "data.augment",
                d.augment,
                f"must be false with data.name=toy_birds: {why}",
            )
            for key in ("root", "max_train_images", "max_test_images"):
                value = getattr(d, key)
                require(
                    value is None,
                    f"data.{key}",
                    value,
                    f"must be null with data.name=toy_birds: {why}",
                )
