"""Typed config of the ControlAR experiment (schema for configs/controlar/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/controlar/paper.yaml`` holds the
paper's (brief Sec. 3.5, 6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, LoopConfig, checked, require, require_multiple

# transformers' ACT2FN names (model.activation is passed to GPT2Config as activation_function)
ACTIVATIONS = (
    "gelu",
    "gelu_10",
    "gelu_accurate",
    "gelu_fast",
    "gelu_new",
    "gelu_python",
    "gelu_python_tanh",
    "gelu_pytorch_tanh",
    "hardswish",
    "laplace",
    "leaky_relu",
    "linear",
    "mish",
    "prelu",
    "quick_gelu",
    "relu",
    "relu2",
    "relu6",
    "sigmoid",
    "silu",
    "sqrtsoftplus",
    "swish",
    "tanh",
    "xielu",
)


@dataclass
class DataConfig:
    """Toy: synthetic rectangles and their edge maps. Paper: a local folder (``root``)."""

    root: str | None = None  # paper: codes/*.npy, controls/*.npy, labels.npy (see data.py)
    n_train: int = checked(3000, ge=1)
    # test control maps, from generator seed test_seed_offset + seed
    n_test: int = checked(32, ge=1)
    test_seed_offset: int = checked(10_000, ge=0)
    image_size: int = checked(32, ge=1)
    edge_threshold: float = checked(0.3, ge=0)  # L1 colour difference that makes an edge pixel


@dataclass
class TokenizerConfig:
    """Toy: k-means "tiny VQ" over patch x patch patches (brief Sec. 5)."""

    patch: int = checked(4, ge=1)  # down-sample factor f
    n_codes: int = checked(128, ge=1)  # K
    # k-means on the patches of the first training images
    fit_images: int = checked(800, ge=1, le_key="data.n_train")
    iterations: int = checked(15, ge=1)  # Lloyd iterations


@dataclass
class ModelConfig:
    """Toy GPT-2 decoder and local control encoder (brief Sec. 5)."""

    image_size: int = checked(32, ge=1)
    patch: int = checked(4, ge=1)
    vocab_size: int = checked(128, ge=1)
    dim: int = checked(96, ge=1)
    # L; injection before every floor(L / 3)-th block (cond needs L >= 3: validate)
    n_layers: int = checked(3, ge=1)
    n_heads: int = checked(4, ge=1)
    mlp_ratio: int = checked(4, ge=1)
    dropout: float = checked(0.0, ge=0, lt=1)
    # (c1, c2) of the local control encoder's two convolutions
    encoder_channels: list[int] = checked(factory=lambda: [32, 64], ge=1)
    encoder_dim: int = checked(96, ge=1)  # control features before the projection MLPs
    # the GPT-2 MLP's activation, a transformers ACT2FN name. The brief's toy asks for a "GELU
    # MLP": exact GELU ("gelu"); GPT-2's tanh approximation ("gelu_new" / "gelu_pytorch_tanh")
    # is the same curve within 1e-3 but costs ~2.5x per element on CPU (AVX2 tanh)
    activation: str = checked("gelu", choices=ACTIVATIONS)


@dataclass
class PaperModelConfig:
    """Paper scale (brief Sec. 3.1, 6): LlamaGen GPT, VQ-16 and a ViT control encoder, all
    read from local paths (nothing is downloaded)."""

    gpt_checkpoint: str | None = None  # LlamaGen c2i GPT-B/L weights (.pt or .safetensors)
    vq_checkpoint: str | None = None  # LlamaGen VQ-16 weights
    control_encoder: str | None = None  # local ViT-small / DINOv2 folder (AutoModel)
    dim: int = checked(1024, ge=1)  # GPT-L
    n_layers: int = checked(24, ge=1)  # cond needs >= 3 (validate)
    n_heads: int = checked(16, ge=1)
    vocab_size: int = checked(16384, ge=1)
    num_classes: int = checked(1000, ge=1)
    cls_token_num: int = checked(1, ge=1)  # the prefix: its last position predicts x_1
    image_size: int = checked(256, ge=1)
    downsample: int = checked(16, ge=1)
    code_dim: int = checked(8, ge=1)
    rope_base: float = checked(10000.0, gt=0)
    token_dropout: float = checked(0.1, ge=0, lt=1)
    resid_dropout: float = checked(0.1, ge=0, lt=1)
    ffn_dropout: float = checked(0.1, ge=0, lt=1)
    vq_channels: int = checked(128, ge=1)
    vq_channel_mult: list[int] = checked(factory=lambda: [1, 1, 2, 2, 4], ge=1)
    vq_z_channels: int = checked(256, ge=1)
    vq_res_blocks: int = checked(2, ge=0)  # the decoder builds vq_res_blocks + 1 per level
    # cv2.Canny thresholds of the evaluation (condition/canny.py)
    canny_low: int = checked(100, ge=0)
    canny_high: int = checked(200, ge=0)


@dataclass
class TrainConfig:
    """Optimiser and budget (AdamW; the grad clip is ``loop.grad_clip``)."""

    steps: int = checked(300, ge=1)
    batch_size: int = checked(32, ge=1)
    lr: float = checked(1e-3, gt=0)
    weight_decay: float = checked(0.05, ge=0)
    betas: list[float] = checked(factory=lambda: [0.9, 0.95], ge=0, lt=1)  # AdamW (beta1, beta2)
    # joint class/control dropping for CFG (paper: 0.1); method.joint_drop_mask needs [0, 1)
    condition_dropout: float = checked(0.0, ge=0, lt=1)
    # N(0, std) for every Linear/Embedding (paper: 0.02); None: the libraries' own inits
    init_std: float | None = checked(None, gt=0)


@dataclass
class SamplingConfig:
    """Sec. 3.3: temperature, top-k, top-p and the CFG scale (1.0: no guidance)."""

    temperature: float = checked(1.0, gt=0)
    top_k: int | None = checked(None, ge=1)  # None (or >= the vocabulary): no top-k filtering
    top_p: float = checked(1.0, gt=0, le=1)
    cfg_scale: float = checked(1.0, ge=0)  # 0: the unconditional branch alone
    edge_tolerance: int = checked(1, ge=0)  # px, edge F1 (0: pixel-exact)
    n_show: int = checked(4, ge=1, le_key="data.n_test")  # test controls drawn in the figure


@dataclass
class TimingConfig:
    """Training-step time measured interleaved on one batch (brief Sec. 5 claim 2) and the
    sampling time per image. Off in the smoke run: wall-clock numbers differ between runs."""

    enabled: bool = True
    warmup_steps: int = checked(5, ge=0)
    rounds: int = checked(30, ge=1)
    sample_rounds: int = checked(5, ge=1)  # interleaved rounds of sampling every test control


@dataclass
class Config(ExperimentConfig):
    # cond (ControlAR conditional decoding) | prefill (controls as a prefix) | none
    methods: list[str] = field(default_factory=lambda: ["cond", "prefill", "none"])
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
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
        paper = self.scale == "paper"  # train.run: the LlamaGen path, else the toy path
        layers = "paper_model.n_layers" if paper else "model.n_layers"
        n_layers = self.paper_model.n_layers if paper else self.model.n_layers
        if "cond" in self.methods:  # method.injection_layers: every floor(L / 3)-th block
            require(n_layers >= 3, layers, n_layers, "must be >= 3 for the cond method")
        require(len(self.train.betas) == 2, "train.betas", self.train.betas, "give (beta1, beta2)")
        if paper:
            return
        # the toy path (train.prepare_toy, model.ToyControlAR): keys that must agree
        m, t = self.model, self.tokenizer
        channels = m.encoder_channels
        require(len(channels) == 2, "model.encoder_channels", channels, "give (c1, c2)")
        require(
            m.image_size == self.data.image_size,
            "model.image_size",
            m.image_size,
            f"must equal data.image_size ({self.data.image_size})",
        )
        require(
            m.patch == t.patch, "model.patch", m.patch, f"must equal tokenizer.patch ({t.patch})"
        )
        require_multiple("model.image_size", m.image_size, m.patch, "model.patch")
        require(
            m.vocab_size == t.n_codes,
            "model.vocab_size",
            m.vocab_size,
            f"must equal tokenizer.n_codes ({t.n_codes})",
        )
        require_multiple("model.dim", m.dim, m.n_heads, "model.n_heads")
