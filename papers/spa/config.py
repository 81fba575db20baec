"""Typed config of the SPA experiment (schema for configs/spa/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/spa/paper.yaml`` holds the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, TrainLoopConfig, checked, require, require_multiple

DTYPES = ("float32", "bfloat16", "float16")  # model.dtype: model.DTYPES' keys (a test checks)
OPTIMIZERS = ("adam", "adamw")
SCHEDULES = ("constant", "cosine")
THRESHOLDS = ("minibatch", "rolling")  # spa.threshold
JUDGE_REFERENCES = ("init", "previous", "none")  # spa.judge_reference (paper Table 7)
DATA_SOURCES = ("ultrafeedback", "llamafactory")  # data.source


@dataclass
class WorldConfig:
    """The toy's synthetic world with a known preference (brief Sec. 5.1)."""

    n_tokens: int = checked(8, ge=1)  # response vocabulary (ids 0..n_tokens-1)
    response_length: int = checked(4, ge=1)  # L: 8^4 = 4096 responses, enumerable
    n_topics: int = checked(8, ge=1)  # prompt = (topic, style1, style2), disjoint token-id ranges
    n_styles: int = checked(8, ge=1)
    style_weight: float = checked(0.7, ge=0)  # w = u + style_weight * S
    # SFT behaviour logits b ~ behaviour_scale * N(0, 1)
    behaviour_scale: float = checked(0.8, ge=0)
    eval_prompts: int = checked(48, ge=1)
    # eval prompts come from the RNG stream seed + eval_stream
    eval_stream: int = checked(10000, ge=0)
    # rewards rounded before comparing (multiset permutations tie)
    tie_decimals: int = checked(6, ge=0)


@dataclass
class ModelConfig:
    """pi_init: a local checkpoint (paper) or a tiny GPT-2 the toy trains by SFT."""

    path: str | None = None  # paper: local folder (from_pretrained, nothing downloaded)
    asset: str | None = None  # real: shared.pretrained's model asset (SmolLM2-135M-Instruct)
    dtype: str = checked("float32", choices=DTYPES)  # float32 | bfloat16 (paper: bf16)
    n_embd: int = checked(64, ge=1)
    n_layer: int = checked(2, ge=1)
    n_head: int = checked(4, ge=1)
    n_inner: int = checked(256, ge=1)


@dataclass
class OptimConfig:
    """One training stage's optimizer and schedule."""

    name: str = checked("adam", choices=OPTIMIZERS)  # adam | adamw
    lr: float = checked(1e-3, gt=0)
    weight_decay: float = checked(0.0, ge=0)
    # constant | cosine (with linear warm-up)
    schedule: str = checked("constant", choices=SCHEDULES)
    warmup_ratio: float = checked(0.0, ge=0, le=1)
    batch_size: int = checked(32, ge=1)  # pairs per optimizer step, over all processes
    epochs: int = checked(1, ge=1)


@dataclass
class SFTConfig:
    """Toy SFT of pi_init on the behaviour distribution (brief Sec. 5.2); skipped with
    ``model.path`` (then pi_init is the checkpoint)."""

    steps: int = checked(300, ge=1)
    batch_size: int = checked(128, ge=1)
    lr: float = checked(3e-3, gt=0)


@dataclass
class SeedConfig:
    """The human-labelled seed D_0 and seed DPO (brief Sec. 3.1)."""

    # toy: prompts sampled, 2 responses each from pi_init, labelled by r*
    n_prompts: int = checked(128, ge=1)
    temperature: float = checked(1.0, gt=0)
    beta: float = checked(0.1, gt=0)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(epochs=3))


@dataclass
class SPAConfig:
    """The SPA iterations (brief Sec. 3.2) and the self-refinement loss (Sec. 3.3)."""

    prompts_per_iteration: list[int] = checked(factory=lambda: [512, 1024, 2048], ge=1)
    # K responses per prompt; best and worst form the pair
    samples_per_prompt: int = checked(2, ge=2)
    temperature: float = checked(1.0, gt=0)
    top_p: float = checked(1.0, gt=0, le=1)
    # paper scale only (the toy's responses have fixed length)
    max_new_tokens: int = checked(300, ge=1)
    beta: float = checked(0.1, gt=0)
    # label-smoothing strength on flagged pairs (official refine_stragth)
    alpha: float = checked(0.1, ge=0, le=1)
    flag_fraction: float = checked(0.1, ge=0, le=1)  # K (official self_refine_threshold)
    warmup_fraction: float = checked(0.2, ge=0, le=1)  # alpha forced to 0 in the first 20% of steps
    lambdas: list[float] = checked(factory=lambda: [0.5, 0.25, 0.125], ge=0)  # 1 + lambda =
    # the official decouple_denoising, per iteration
    # minibatch (paper wording) | rolling (official window)
    threshold: str = checked("minibatch", choices=THRESHOLDS)
    # the rolling window's margins (RollingThreshold needs two; it is built for either threshold)
    threshold_window: int = checked(50, ge=2)
    # init (SPA) | previous | none (paper Table 7 ablations)
    judge_reference: str = checked("init", choices=JUDGE_REFERENCES)
    optim: OptimConfig = field(default_factory=OptimConfig)


@dataclass
class FullLabelConfig:
    """The "100% labels" arm: DPO from pi_init on every prompt of the seed and all
    iteration pools, labelled by the ground truth (brief Sec. 4)."""

    temperature: float = checked(1.0, gt=0)
    optim: OptimConfig = field(default_factory=OptimConfig)


@dataclass
class DataConfig:
    """Paper-scale preference data (brief Sec. 6), read from local disk only."""

    # ultrafeedback: the paper's data (one table of prompt / chosen / rejected rows); llamafactory:
    # LLaMA-Factory's demo layout (human pairs + Alpaca prompts; the real rung's asset)
    source: str = checked("ultrafeedback", choices=DATA_SOURCES)
    # ultrafeedback: jsonl file or datasets.save_to_disk folder; llamafactory: a folder holding
    # dpo_en_demo.json and alpaca_en_demo.json (null at scale=real: the asset's)
    path: str | None = None
    asset: str | None = None  # real: the llamafactory_demo asset (shared/assets.py)
    split_seed: int = checked(42, ge=0)  # make_data_split.py shuffles with seed 42
    seed_size: int = checked(2000, ge=1)  # rows 0..2000 keep their human labels
    iteration_sizes: list[int] = checked(factory=lambda: [8000, 20000, 30000], ge=1)
    # held-out prompts generated for evaluation (AlpacaEval size; llamafactory: the held-out
    # pairs' first prompts, answered for the response-length diagnostic)
    eval_prompts: int = checked(805, ge=1)
    # llamafactory: the held-out human pairs scored (null: every single-turn pair not in the seed)
    heldout_pairs: int | None = checked(None, ge=1)
    max_length: int = checked(2048, ge=1)
    max_prompt_length: int = checked(1024, ge=1)
    # "": an empty system message; null: the chat template's own default (a pair's own system
    # message is kept either way)
    system_prompt: str | None = ""
    # sequences per forward pass in the judge and generation
    micro_batch_size: int = checked(4, ge=1)


@dataclass
class Config(ExperimentConfig):
    # sft | dpo_seed | spa | spa_nosr | oracle | coin_flip | full_label
    methods: list[str] = field(
        default_factory=lambda: [
            "sft",
            "dpo_seed",
            "spa",
            "spa_nosr",
            "oracle",
            "coin_flip",
            "full_label",
        ]
    )
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    world: WorldConfig = field(default_factory=WorldConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    seed_dpo: SeedConfig = field(default_factory=SeedConfig)
    spa: SPAConfig = field(default_factory=SPAConfig)
    full_label: FullLabelConfig = field(default_factory=FullLabelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    @property
    def toy(self) -> bool:
        """The toy world (no checkpoint: neither ``model.path`` nor the real rung's asset)."""
        return self.model.path is None and self.model.asset is None

    def validate(self) -> None:
        super().validate()
        p = self.spa
        require(
            bool(p.prompts_per_iteration), "spa.prompts_per_iteration", [], "name one iteration"
        )
        # one decoupling lambda per iteration; the toy's pools are spa.prompts_per_iteration,
        # the paper scale's (model.path set) data.iteration_sizes
        toy = self.toy
        pools = "spa.prompts_per_iteration" if toy else "data.iteration_sizes"
        n_pools = len(p.prompts_per_iteration if toy else self.data.iteration_sizes)
        require(
            len(p.lambdas) == n_pools,
            "spa.lambdas",
            p.lambdas,
            f"needs one entry per iteration ({pools} has {n_pools})",
        )
        if toy:  # GPT-2's attention splits the width into heads (else a ValueError at the SFT)
            m = self.model
            require_multiple("model.n_embd", m.n_embd, m.n_head, "model.n_head")
