"""Typed config of the ControlAR experiment (schema for configs/controlar/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/controlar/paper.yaml`` holds the
paper's (brief Sec. 3.5, 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    LoopConfig,
    require,
    require_at_least,
    require_at_most,
    require_positive,
)


@dataclass
class DataConfig:
    """Toy: synthetic rectangles and their edge maps. Paper: a local folder (``root``)."""

    root: str | None = None  # paper: codes/*.npy, controls/*.npy, labels.npy (see data.py)
    n_train: int = 3000
    n_test: int = 32  # test control maps, from generator seed test_seed_offset + seed
    test_seed_offset: int = 10_000
    image_size: int = 32
    edge_threshold: float = 0.3  # L1 colour difference that makes an edge pixel


@dataclass
class TokenizerConfig:
    """Toy: k-means "tiny VQ" over patch x patch patches (brief Sec. 5)."""

    patch: int = 4  # down-sample factor f
    n_codes: int = 128  # K
    fit_images: int = 800  # k-means on the patches of the first training images
    iterations: int = 15  # Lloyd iterations


@dataclass
class ModelConfig:
    """Toy GPT-2 decoder and local control encoder (brief Sec. 5)."""

    image_size: int = 32
    patch: int = 4
    vocab_size: int = 128
    dim: int = 96
    n_layers: int = 3  # L; injection before every floor(L / 3)-th block
    n_heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0
    encoder_channels: list[int] = field(default_factory=lambda: [32, 64])
    encoder_dim: int = 96  # control features before the projection MLPs
    # the GPT-2 MLP's activation, a transformers ACT2FN name. The brief's toy asks for a "GELU
    # MLP": exact GELU ("gelu"); GPT-2's tanh approximation ("gelu_new" / "gelu_pytorch_tanh")
    # is the same curve within 1e-3 but costs ~2.5x per element on CPU (AVX2 tanh)
    activation: str = "gelu"


@dataclass
class PaperModelConfig:
    """Paper scale (brief Sec. 3.1, 6): LlamaGen GPT, VQ-16 and a ViT control encoder, all
    read from local paths (nothing is downloaded)."""

    gpt_checkpoint: str | None = None  # LlamaGen c2i GPT-B/L weights (.pt or .safetensors)
    vq_checkpoint: str | None = None  # LlamaGen VQ-16 weights
    control_encoder: str | None = None  # local ViT-small / DINOv2 folder (AutoModel)
    dim: int = 1024  # GPT-L
    n_layers: int = 24
    n_heads: int = 16
    vocab_size: int = 16384
    num_classes: int = 1000
    cls_token_num: int = 1
    image_size: int = 256
    downsample: int = 16
    code_dim: int = 8
    rope_base: float = 10000.0
    token_dropout: float = 0.1
    resid_dropout: float = 0.1
    ffn_dropout: float = 0.1
    vq_channels: int = 128
    vq_channel_mult: list[int] = field(default_factory=lambda: [1, 1, 2, 2, 4])
    vq_z_channels: int = 256
    vq_res_blocks: int = 2
    canny_low: int = 100  # cv2.Canny thresholds of the evaluation (condition/canny.py)
    canny_high: int = 200


@dataclass
class TrainConfig:
    """Optimiser and budget (AdamW; the grad clip is ``loop.grad_clip``)."""

    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.05
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    condition_dropout: float = 0.0  # joint class/control dropping for CFG (paper: 0.1)
    init_std: float | None = None  # N(0, std) for every Linear/Embedding (paper: 0.02)


@dataclass
class SamplingConfig:
    """Sec. 3.3: temperature, top-k, top-p and the CFG scale (1.0: no guidance)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0
    cfg_scale: float = 1.0
    edge_tolerance: int = 1  # px, edge F1
    n_show: int = 4  # test controls drawn in the figure


@dataclass
class TimingConfig:
    """Training-step time measured interleaved on one batch (brief Sec. 5 claim 2) and the
    sampling time per image. Off in the smoke run: wall-clock numbers differ between runs."""

    enabled: bool = True
    warmup_steps: int = 5
    rounds: int = 30
    sample_rounds: int = 5  # interleaved rounds of sampling every test control


@dataclass
class Config(ExperimentConfig):
    # cond (ControlAR conditional decoding) | prefill (controls as a prefix) | none
    methods: list[str] = field(default_factory=lambda: ["cond", "prefill", "none"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    paper_model: PaperModelConfig = field(default_factory=PaperModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)

    def validate(self) -> None:
        super().validate()
        for key in ("n_train", "n_test", "image_size"):
            require_at_least(f"data.{key}", getattr(self.data, key), 1)
        for key in ("steps", "batch_size"):  # case 7: steps=-1 left no samples to read
            require_at_least(f"train.{key}", getattr(self.train, key), 1)
        require_positive("train.lr", self.train.lr)
        for key in ("patch", "n_codes", "fit_images", "iterations"):
            require_at_least(f"tokenizer.{key}", getattr(self.tokenizer, key), 1)
        s = self.sampling
        require_at_least("sampling.n_show", s.n_show, 1)  # case 3: the figure indexes the test set
        require_at_most(
            "sampling.n_show", s.n_show, self.data.n_test, f"data.n_test ({self.data.n_test})"
        )
        require_positive("sampling.temperature", s.temperature)
        require(0 < s.top_p <= 1, "sampling.top_p", s.top_p, "must be in (0, 1]")
        if s.top_k is not None:
            require_at_least("sampling.top_k", s.top_k, 1)
        require_at_least("timing.rounds", self.timing.rounds, 1)
        require_at_least("timing.sample_rounds", self.timing.sample_rounds, 1)
        require_at_least("timing.warmup_steps", self.timing.warmup_steps, 0)
