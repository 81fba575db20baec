"""Typed config of the LucidPPN experiment (schema for configs/lucidppn/*.yaml).

Every key here is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's (brief Sec. 5); ``configs/lucidppn/paper.yaml`` sets the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, TrainLoopConfig, checked, require, require_at_most

DATA_NAMES = ("toy_birds", "image_folder")  # train.py imports it
BACKBONES = ("toy_cnn", "convnext")  # train.py imports it
RESIZE_MODES = ("area", "bilinear")  # method.downscale
# the methods whose model is LucidPPN (train.METHODS' "lucid" architecture): its ShapeTexNet
# sees the luma replicated to model.gray_channels (a test checks it against train.METHODS)
LUCID_METHODS = ("lucidppn", "no_align")


@dataclass
class DataConfig:
    # toy_birds (generated) | image_folder (local paper-scale tree)
    name: str = checked("toy_birds", choices=DATA_NAMES)
    root: str | None = None  # image_folder: <root>/{train,test}/<class>/<image>; never downloaded
    num_parts: int = checked(3, ge=1)  # K (toy: head, body, tail; paper: 2/3/4/8/12 per data set)
    num_classes: int = checked(8, ge=1)  # M (CUB 200, Cars 196, Dogs 120, Flowers 102)
    image_size: int = checked(32, ge=1)  # input side (toy 32; paper 224)
    # toy_birds
    n_train: int = checked(2000, ge=1)
    n_test: int = checked(1000, ge=1)
    test_seed_offset: int = checked(999, ge=0)  # test images from seed test_seed_offset + run seed
    # image_folder
    resize_to: int = checked(232, ge=1)  # resize before the crop (224 + zoom 8)
    # RandomResizedCrop: (min, max) area fraction of the resized image
    crop_scale: list[float] = checked(factory=lambda: [0.95, 1.0], gt=0, le=1)
    augment: bool = False  # image_folder: TrivialAugmentWide (geometric) + flip + crop, masks too
    num_workers: int = checked(0, ge=0)  # DataLoader worker processes for image_folder
    # first N of the sorted training list; None: all
    max_train_images: int | None = checked(None, ge=1)
    max_test_images: int | None = checked(None, ge=1)


@dataclass
class ModelConfig:
    # toy_cnn | convnext (transformers' ConvNextModel, local folder)
    backbone: str = checked("toy_cnn", choices=BACKBONES)
    toy_channels: list[int] = checked(factory=lambda: [32, 48, 64, 64], ge=1)
    toy_strides: list[int] = checked(factory=lambda: [1, 2, 2, 1], ge=1)
    convnext_path: str | None = None  # folder for ConvNextModel.from_pretrained (local only)
    # stride 1 for every stride-2 conv with more input channels than this (0: all of them);
    # 100: 26 x 26 maps at 224^2; 300: 13 x 13
    stride_reduction_min_channels: int = checked(100, ge=0)
    color_widths: list[int] = checked(factory=lambda: [32, 64], ge=1)  # ColorNet hidden widths
    # x_S normalisation (paper 0.445)
    gray_mean: float = checked(0.3, free="a normalisation mean may be any real")
    gray_std: float = checked(0.2, gt=0)  # (paper 0.269)
    # luma replicated to this many channels (3 for ImageNet backbones)
    gray_channels: int = checked(1, ge=1)
    # RGB baseline input: (x - rgb_mean) / rgb_std per channel
    rgb_mean: list[float] = checked(
        factory=lambda: [0.3, 0.3, 0.3], free="a normalisation mean may be any real"
    )
    rgb_std: list[float] = checked(factory=lambda: [0.2, 0.2, 0.2], gt=0)
    # map-size resize of ColorNet's input and the masks: area | bilinear
    resize: str = checked("area", choices=RESIZE_MODES)
    channels_last: bool = False  # NHWC convolutions (toy CNN on CPU: ~20 % faster)


@dataclass
class LossConfig:
    alpha_d: float = checked(1.4, ge=0)  # part alignment L_D (the no_align method sets it to 0)
    alpha_s: float = checked(1.0, ge=0)  # ShapeTexNet classification L_S
    alpha_c: float = checked(1.0, ge=0)  # fused classification L_C


@dataclass
class OptimConfig:
    batch_size: int = checked(64, ge=1)
    epochs: int = checked(8, ge=1)
    lr_net: float = checked(2e-3, gt=0)  # AdamW on backbone + 1x1 head
    lr_color: float = checked(2e-3, gt=0)  # AdamW on ColorNet
    weight_decay: float = checked(0.0, ge=0)
    # epochs with the backbone frozen except its last block (epochs: the whole run)
    freeze_epochs: int = checked(0, ge=0, le_key="optim.epochs")
    unfrozen_lr_factor: float = checked(0.1, gt=0)  # network LR factor after the freeze epochs


@dataclass
class EvalConfig:
    # rad: luminance-preserving hue rotation of the test set
    hue_angle: float = checked(
        2.0, free="a rotation angle in radians may be any real (negative: the other way)"
    )
    # binarisation of maps and masks for part IoU / IoP / IoT
    threshold: float = checked(0.5, gt=0, lt=1)
    colour_twins: bool = True  # toy: classes 2g and 2g + 1 differ only in body colour
    rho_floor: float = checked(0.01, gt=0)  # floor of the denominator of the localisation ratio
    cube_levels: int = checked(5, ge=1)  # colour prototypes on a levels^3 RGB cube
    # keep top colours up to this share of the total score
    prototype_mass: float = checked(0.7, gt=0, le=1)
    batch_size: int = checked(500, ge=1)  # evaluation chunk


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
        d, m, o = self.data, self.model, self.optim
        # RandomResizedCrop draws the area fraction uniformly from (min, max)
        require(
            len(d.crop_scale) == 2 and d.crop_scale[0] <= d.crop_scale[1],
            "data.crop_scale",
            d.crop_scale,
            "must be [min, max] with min <= max",
        )
        for key in ("rgb_mean", "rgb_std"):  # one per RGB channel
            value = getattr(m, key)
            require(len(value) == 3, f"model.{key}", value, "must hold 3 entries (R, G, B)")
        if m.backbone == "toy_cnn":  # one stride per conv block, the last block's width out
            require(
                bool(m.toy_channels),
                "model.toy_channels",
                m.toy_channels,
                "name at least one conv block's width (the prototypes read the last one)",
            )
            require(
                len(m.toy_strides) == len(m.toy_channels),
                "model.toy_strides",
                m.toy_strides,
                f"must have one entry per model.toy_channels block ({len(m.toy_channels)})",
            )
        lucid = [name for name in self.methods if name in LUCID_METHODS]
        if m.backbone == "convnext" and lucid:  # an ImageNet backbone takes 3 input channels
            require(
                m.gray_channels == 3,
                "model.gray_channels",
                m.gray_channels,
                f"must be 3 with model.backbone=convnext ({', '.join(lucid)} feed it the luma)",
            )
        # full batches only (train.steps_per_epoch): a batch larger than the training set is none
        if d.name == "toy_birds":
            require_at_most(
                "optim.batch_size", o.batch_size, d.n_train, f"data.n_train ({d.n_train})"
            )
        elif d.max_train_images is not None:
            limit = f"data.max_train_images ({d.max_train_images})"
            require_at_most("optim.batch_size", o.batch_size, d.max_train_images, limit)
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
