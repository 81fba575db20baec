"""Typed config of the LiMAC experiment (schema for configs/limac/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/limac/paper.yaml`` holds the paper
scale's, with the values the paper does not give marked ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from papers.limac.toydroid import FAMILIES as TOY_FAMILIES
from shared.config import ExperimentConfig, TrainLoopConfig, require_choice


@dataclass
class DataConfig:
    """Episodes: ToyDroid (generated) or AndroidControl / AitW from local files (Sec. 6)."""

    source: str = "toy"  # toy | androidcontrol | aitw
    # toy (brief Sec. 5)
    n_train: int = 500
    n_test: int = 300
    test_seed_offset: int = 10000  # test episodes come from seed + 10000
    n_buckets: int = 4096  # hashed bag of words (CRC32)
    # paper scale: raw TFRecords, read with the optional `tfrecord` package, are converted
    # once to JSONL episodes + screenshot PNGs under work_dir; element embeddings are cached
    androidcontrol_dir: str | None = None  # android_control*.tfrecord(.gz) [+ splits.json]
    aitw_dir: str | None = None  # AitW *.tfrecord(.gz) (one example per step)
    work_dir: str | None = None  # converted episodes, screenshots and the embedding cache
    compression: str = "auto"  # auto (by .gz suffix) | gzip | none
    max_episodes: int | None = None  # read at most this many episodes (None: all)
    test_fraction: float = 0.1  # held-out episodes when no splits.json gives a test split
    split_seed: int = 0
    max_elements: int = 128  # elements per screen at paper scale (brief Sec. 6)
    n_class_buckets: int = 64  # element class names hashed into this many ids


@dataclass
class FeaturesConfig:
    """Element features (brief Sec. 3.2 and 5)."""

    image_hidden: int = 64  # toy glyph MLP 64 -> 64 -> d
    image_encoder_dir: str | None = None  # CLIP vision model folder (paper scale)
    text_encoder_dir: str | None = None  # sentence encoder / BERT folder (paper scale)
    crop_size: int = 224  # element crops are resized by the image processor
    embed_batch_size: int = 64
    lexical_match: bool = True  # toy stand-in for pretrained goal-element alignment


@dataclass
class ModelConfig:
    """AcT and the flat baseline (brief Sec. 5 toy sizes; paper.yaml: unknown -> defaults)."""

    d: int = 64
    layers: int = 2
    heads: int = 4
    ff: int = 256
    dropout: float = 0.1
    max_steps: int = 16  # timestep embeddings
    tau: float = 0.1  # InfoNCE temperature (ours: not recoverable)
    slots: int = 24  # K element slots of the flat baseline and the index-head ablation
    flat_hidden: int = 256
    history: str = "full"  # full | none (AcT without history: the mask hides earlier steps)


@dataclass
class OptimConfig:
    """AdamW with a one-cycle schedule (brief Sec. 5)."""

    lr: float = 2e-3
    weight_decay: float = 0.01
    epochs: int = 6
    batch_size: int = 32  # episodes per step
    warmup_fraction: float = 0.1


@dataclass
class TextModelConfig:
    """The gated text model (brief Sec. 3.7)."""

    kind: str = "toy"  # toy | hf_local | openai_compat
    vlm: str = "florence2"  # florence2 | qwen2vl (hf_local)
    model_dir: str | None = None  # hf_local: fine-tuned VLM folder
    base_url: str | None = None  # openai_compat
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    max_new_tokens: int = 32


@dataclass
class EvalConfig:
    """Metrics (paper Sec. 3.5; brief Sec. 3.5)."""

    batch_size: int = 100
    relaxed: bool = True  # "overall" uses the relaxed click match; strict is reported too
    iou_min: float = 0.9
    area_ratio_min: float = 0.8
    area_ratio_max: float = 1.25
    jaccard_text: float = 0.5  # a text is right when Jaccard > this
    gate_types: list[str] = field(default_factory=lambda: ["input_text", "open_app"])
    screen_family: str = "messages"  # the plotted test screen: first episode of this family
    screen_step: int = -1  # ... at this step (-1: the last)


@dataclass
class Config(ExperimentConfig):
    # act | act_index | flat | random_click
    methods: list[str] = field(default_factory=lambda: ["act", "act_index", "flat", "random_click"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    data: DataConfig = field(default_factory=DataConfig)
    features: FeaturesConfig = field(default_factory=FeaturesConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    text_model: TextModelConfig = field(default_factory=TextModelConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        if self.data.source == "toy":  # case 16: an unknown family drew "(no AcT run to draw)"
            require_choice("eval.screen_family", self.eval.screen_family, (*TOY_FAMILIES, ""))
