"""Typed config of the LiMAC experiment (schema for configs/limac/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/limac/paper.yaml`` holds the paper
scale's, with the values the paper does not give marked ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from papers.limac.episodes import TEXT_TYPES
from papers.limac.toydroid import FAMILIES as TOY_FAMILIES
from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    checked,
    require,
    require_choice,
    require_multiple,
)

DATA_SOURCES = ("toy", "androidcontrol", "aitw")
COMPRESSIONS = ("auto", "gzip", "none")  # papers.limac.convert.read_examples
HISTORIES = ("full", "none")  # model.ActionTransformer imports it
TEXT_MODEL_KINDS = ("toy", "hf_local", "openai_compat")
VLMS = ("florence2", "qwen2vl")  # text_model.HFLocalVLM and benchmark.py import it


@dataclass
class DataConfig:
    """Episodes: ToyDroid (generated) or AndroidControl / AitW from local files (Sec. 6)."""

    source: str = checked("toy", choices=DATA_SOURCES)  # toy | androidcontrol | aitw
    # toy (brief Sec. 5)
    n_train: int = checked(500, ge=1)
    n_test: int = checked(300, ge=1)
    # test episodes come from seed + 10000 (0 would test on the training episodes)
    test_seed_offset: int = checked(10000, ge=1)
    n_buckets: int = checked(4096, ge=1)  # hashed bag of words (CRC32)
    # paper scale: raw TFRecords, read with the optional `tfrecord` package, are converted
    # once to JSONL episodes + screenshot PNGs under work_dir; element embeddings are cached
    androidcontrol_dir: str | None = None  # android_control*.tfrecord(.gz) [+ splits.json]
    aitw_dir: str | None = None  # AitW *.tfrecord(.gz) (one example per step)
    work_dir: str | None = None  # converted episodes, screenshots and the embedding cache
    compression: str = checked("auto", choices=COMPRESSIONS)  # auto (by .gz suffix) | gzip | none
    max_episodes: int | None = checked(None, ge=1)  # read at most this many episodes (None: all)
    # held-out episodes (at least one) when no splits.json gives a test split; 1: no training
    test_fraction: float = checked(0.1, ge=0, lt=1)
    split_seed: int = checked(0, ge=0)
    max_elements: int = checked(128, ge=1)  # elements per screen at paper scale (brief Sec. 6)
    n_class_buckets: int = checked(64, ge=1)  # element class names hashed into this many ids


@dataclass
class FeaturesConfig:
    """Element features (brief Sec. 3.2 and 5)."""

    image_hidden: int = checked(64, ge=1)  # toy glyph MLP 64 -> 64 -> d
    # CLIP vision model folder (paper scale); its image processor sets the crop size
    image_encoder_dir: str | None = None
    text_encoder_dir: str | None = None  # sentence encoder / BERT folder (paper scale)
    embed_batch_size: int = checked(64, ge=1)
    lexical_match: bool = True  # toy stand-in for pretrained goal-element alignment


@dataclass
class ModelConfig:
    """AcT and the flat baseline (brief Sec. 5 toy sizes; paper.yaml: unknown -> defaults)."""

    d: int = checked(64, ge=1)  # a multiple of heads
    layers: int = checked(2, ge=1)
    heads: int = checked(4, ge=1)
    ff: int = checked(256, ge=1)
    dropout: float = checked(0.1, ge=0, lt=1)
    max_steps: int = checked(16, ge=1)  # timestep embeddings
    tau: float = checked(0.1, gt=0)  # InfoNCE temperature (ours: not recoverable)
    # K element slots of the flat baseline and the index-head ablation
    slots: int = checked(24, ge=1)
    flat_hidden: int = checked(256, ge=1)
    # full | none (AcT without history: the mask hides earlier steps)
    history: str = checked("full", choices=HISTORIES)


@dataclass
class OptimConfig:
    """AdamW with a one-cycle schedule (brief Sec. 5)."""

    lr: float = checked(2e-3, gt=0)
    weight_decay: float = checked(0.01, ge=0)
    epochs: int = checked(6, ge=1)
    batch_size: int = checked(32, ge=1)  # episodes per step
    warmup_fraction: float = checked(0.1, ge=0, le=1)  # OneCycleLR's pct_start


@dataclass
class TextModelConfig:
    """The gated text model (brief Sec. 3.7)."""

    kind: str = checked("toy", choices=TEXT_MODEL_KINDS)  # toy | hf_local | openai_compat
    vlm: str = checked("florence2", choices=VLMS)  # florence2 | qwen2vl (hf_local)
    model_dir: str | None = None  # hf_local: fine-tuned VLM folder
    base_url: str | None = None  # openai_compat
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    max_new_tokens: int = checked(32, ge=1)


@dataclass
class EvalConfig:
    """Metrics (paper Sec. 3.5; brief Sec. 3.5)."""

    batch_size: int = checked(100, ge=1)
    relaxed: bool = True  # "overall" uses the relaxed click match; strict is reported too
    iou_min: float = checked(0.9, ge=0, le=1)
    # relaxed match: predicted / gold box area in [area_ratio_min, area_ratio_max]
    area_ratio_min: float = checked(0.8, ge=0)
    area_ratio_max: float = checked(1.25, gt=0)
    jaccard_text: float = checked(0.5, ge=0, lt=1)  # a text is right when Jaccard > this
    # the action types whose text the text model is called for
    gate_types: list[str] = checked(factory=lambda: ["input_text", "open_app"], choices=TEXT_TYPES)
    screen_family: str = "messages"  # the plotted test screen: first episode of this family
    # ... at this step (-1: the last)
    screen_step: int = checked(-1, ge=-1, lt_key="model.max_steps")


@dataclass
class Config(ExperimentConfig):
    # act | act_index | flat | random_click
    methods: list[str] = field(default_factory=lambda: ["act", "act_index", "flat", "random_click"])
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    data: DataConfig = field(default_factory=DataConfig)
    features: FeaturesConfig = field(default_factory=FeaturesConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    text_model: TextModelConfig = field(default_factory=TextModelConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        m, e = self.model, self.eval
        # multi-head attention splits d into heads equal parts
        require_multiple("model.d", m.d, m.heads, "model.heads")
        # else no box passes the relaxed area rule and relaxed clicks silently equal strict ones
        require(
            e.area_ratio_min <= e.area_ratio_max,
            "eval.area_ratio_min",
            e.area_ratio_min,
            f"must be <= eval.area_ratio_max ({e.area_ratio_max})",
        )
        if self.data.source == "toy":  # case 16: an unknown family drew "(no AcT run to draw)"
            require_choice("eval.screen_family", self.eval.screen_family, (*TOY_FAMILIES, ""))
