"""Typed config of the SPA experiment (schema for configs/spa/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/spa/paper.yaml`` holds the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    require,
    require_at_least,
    require_choice,
)


@dataclass
class WorldConfig:
    """The toy's synthetic world with a known preference (brief Sec. 5.1)."""

    n_tokens: int = 8  # response vocabulary (ids 0..n_tokens-1)
    response_length: int = 4  # L: 8^4 = 4096 responses, enumerable
    n_topics: int = 8  # prompt = (topic, style1, style2), disjoint token-id ranges
    n_styles: int = 8
    style_weight: float = 0.7  # w = u + style_weight * S
    behaviour_scale: float = 0.8  # SFT behaviour logits b ~ behaviour_scale * N(0, 1)
    eval_prompts: int = 48
    eval_stream: int = 10000  # eval prompts come from the RNG stream seed + eval_stream
    tie_decimals: int = 6  # rewards rounded before comparing (multiset permutations tie)


@dataclass
class ModelConfig:
    """pi_init: a local checkpoint (paper) or a tiny GPT-2 the toy trains by SFT."""

    path: str | None = None  # paper: local folder (from_pretrained, nothing downloaded)
    dtype: str = "float32"  # float32 | bfloat16 (paper: bf16)
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_inner: int = 256


@dataclass
class OptimConfig:
    """One training stage's optimizer and schedule."""

    name: str = "adam"  # adam | adamw
    lr: float = 1e-3
    weight_decay: float = 0.0
    schedule: str = "constant"  # constant | cosine (with linear warm-up)
    warmup_ratio: float = 0.0
    batch_size: int = 32  # pairs per optimizer step, over all processes
    epochs: int = 1


@dataclass
class SFTConfig:
    """Toy SFT of pi_init on the behaviour distribution (brief Sec. 5.2); skipped with
    ``model.path`` (then pi_init is the checkpoint)."""

    steps: int = 300
    batch_size: int = 128
    lr: float = 3e-3


@dataclass
class SeedConfig:
    """The human-labelled seed D_0 and seed DPO (brief Sec. 3.1)."""

    n_prompts: int = 128  # toy: prompts sampled, 2 responses each from pi_init, labelled by r*
    temperature: float = 1.0
    beta: float = 0.1
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(epochs=3))


@dataclass
class SPAConfig:
    """The SPA iterations (brief Sec. 3.2) and the self-refinement loss (Sec. 3.3)."""

    prompts_per_iteration: list[int] = field(default_factory=lambda: [512, 1024, 2048])
    samples_per_prompt: int = 2  # K responses per prompt; best and worst form the pair
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 300  # paper scale only (the toy's responses have fixed length)
    beta: float = 0.1
    alpha: float = 0.1  # label-smoothing strength on flagged pairs (official refine_stragth)
    flag_fraction: float = 0.1  # K (official self_refine_threshold)
    warmup_fraction: float = 0.2  # alpha forced to 0 in the first 20% of steps
    lambdas: list[float] = field(default_factory=lambda: [0.5, 0.25, 0.125])  # 1 + lambda =
    # the official decouple_denoising, per iteration
    threshold: str = "minibatch"  # minibatch (paper wording) | rolling (official window)
    threshold_window: int = 50
    judge_reference: str = "init"  # init (SPA) | previous | none (paper Table 7 ablations)
    optim: OptimConfig = field(default_factory=OptimConfig)


@dataclass
class FullLabelConfig:
    """The "100% labels" arm: DPO from pi_init on every prompt of the seed and all
    iteration pools, labelled by the ground truth (brief Sec. 4)."""

    temperature: float = 1.0
    optim: OptimConfig = field(default_factory=OptimConfig)


@dataclass
class DataConfig:
    """Paper-scale preference data (brief Sec. 6), read from local disk only."""

    path: str | None = None  # jsonl file or datasets.save_to_disk folder (UltraFeedback)
    split_seed: int = 42  # make_data_split.py shuffles with seed 42
    seed_size: int = 2000  # rows 0..2000 keep their human labels
    iteration_sizes: list[int] = field(default_factory=lambda: [8000, 20000, 30000])
    eval_prompts: int = 805  # held-out prompts generated for evaluation (AlpacaEval size)
    max_length: int = 2048
    max_prompt_length: int = 1024
    system_prompt: str = ""  # chat template with an empty system message
    micro_batch_size: int = 4  # sequences per forward pass in the judge and generation


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
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    world: WorldConfig = field(default_factory=WorldConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    seed_dpo: SeedConfig = field(default_factory=SeedConfig)
    spa: SPAConfig = field(default_factory=SPAConfig)
    full_label: FullLabelConfig = field(default_factory=FullLabelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        p = self.spa
        # case 11: an unknown threshold failed only after seed 0's SFT
        require_choice("spa.threshold", p.threshold, ("minibatch", "rolling"))
        require_choice("spa.judge_reference", p.judge_reference, ("init", "previous", "none"))
        require_at_least("spa.threshold_window", p.threshold_window, 1)
        require_at_least("spa.samples_per_prompt", p.samples_per_prompt, 2)
        require(
            bool(p.prompts_per_iteration), "spa.prompts_per_iteration", [], "name one iteration"
        )
        for n in p.prompts_per_iteration:
            require_at_least("spa.prompts_per_iteration", n, 1)
        # one decoupling lambda per iteration; the toy's pools are spa.prompts_per_iteration,
        # the paper scale's (model.path set) data.iteration_sizes
        toy = self.model.path is None
        pools = "spa.prompts_per_iteration" if toy else "data.iteration_sizes"
        n_pools = len(p.prompts_per_iteration if toy else self.data.iteration_sizes)
        require(
            len(p.lambdas) == n_pools,
            "spa.lambdas",
            p.lambdas,
            f"needs one entry per iteration ({pools} has {n_pools})",
        )
        require(
            0 <= p.flag_fraction <= 1, "spa.flag_fraction", p.flag_fraction, "must be in [0, 1]"
        )
        require(
            0 <= p.warmup_fraction <= 1,
            "spa.warmup_fraction",
            p.warmup_fraction,
            "must be in [0, 1]",
        )
