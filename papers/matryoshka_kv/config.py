"""Typed config of the MatryoshkaKV experiment (schema for configs/matryoshka_kv/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, TrainLoopConfig, require, require_at_least


@dataclass
class ModelConfig:
    """The base model: a checkpoint folder (paper), a pinned pretrained asset (real) or a small
    Llama the toy pre-trains."""

    path: str | None = None  # paper: local Llama / Mistral folder (from_pretrained, no download)
    asset: str | None = None  # real: shared.pretrained's model asset (SmolLM2-135M), verified
    vocab_size: int = 32
    hidden_size: int = 64
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    max_position_embeddings: int = 256
    rope_theta: float = 10000.0


@dataclass
class CorpusConfig:
    """The toy's synthetic character corpus (brief Sec. 5), local text files (paper), or the
    pinned real corpus (real: its train documents for PCA and training, test ones for eval)."""

    lexicon_size: int = 300
    lexicon_seed: int = 1234  # fixed across run seeds
    min_word: int = 2
    max_word: int = 7
    copy_prob: float = 0.35  # next word copies an earlier word of the sequence
    copy_after: int = 4  # copies start once this many words exist
    period_prob: float = 0.08
    seq_len: int = 128
    pca_path: str | None = None  # paper: local Alpaca json for the PCA statistics
    train_path: str | None = None  # paper: local RedPajama-sample json for training
    asset: str | None = None  # real: shared.pretrained's corpus asset, cut into seq_len segments


@dataclass
class PretrainConfig:
    """Pre-training of the toy teacher (brief Sec. 5); skipped with model.path."""

    steps: int = 600
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50


@dataclass
class ProjectionTrainConfig:
    """Matryoshka training of the projections (brief Sec. 3.4)."""

    steps: int = 300
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup_steps: int = 0
    kl_weight: float = 1.0  # official: 0.25
    ce_weight: float = 0.0  # official: 0.75
    temperature: float = 1.0
    rank_schedule: list[int] = field(default_factory=lambda: [2, 4, 6, 8, 10, 12, 14, 16])
    fixed_rank: int = 8  # the fixed-rank ablation trains at this rank only


@dataclass
class SearchConfig:
    """Greedy heterogeneous rank search (brief Sec. 3.5)."""

    budget: float = 0.375
    step: int = 4  # Delta
    updates_per_round: int = 8  # n_upd
    calibration_sequences: int = 8


@dataclass
class EvalConfig:
    n_sequences: int = 64
    ranks: list[int] = field(default_factory=lambda: [2, 4, 6, 8, 10, 12, 14, 16])
    pca_sequences: int = 64
    batch_size: int = 16
    # real: also next-token top-1 accuracy of each budget, and its ratio to the full cache's
    accuracy: bool = False


@dataclass
class Config(ExperimentConfig):
    # pca | matryoshka (trained, random rank per head) | fixed_rank (ablation) |
    # matryoshka_searched (the matryoshka student at greedy heterogeneous ranks, Sec. 3.5)
    methods: list[str] = field(
        default_factory=lambda: ["pca", "matryoshka", "fixed_rank", "matryoshka_searched"]
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    model: ModelConfig = field(default_factory=ModelConfig)
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    projection: ProjectionTrainConfig = field(default_factory=ProjectionTrainConfig)
    rank_search: SearchConfig = field(default_factory=SearchConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        for section in ("pretrain", "projection"):
            for key in ("steps", "batch_size"):
                require_at_least(f"{section}.{key}", getattr(getattr(self, section), key), 1)
        for key in ("n_sequences", "pca_sequences", "batch_size"):
            require_at_least(f"eval.{key}", getattr(self.eval, key), 1)
        budget = self.rank_search.budget
        require(0 < budget <= 1, "rank_search.budget", budget, "must be in (0, 1]")
        if self.scale in ("smoke", "toy"):  # the toy teacher; paper and real read a checkpoint
            m = self.model
            require(
                m.hidden_size % m.num_attention_heads == 0,
                "model.hidden_size",
                m.hidden_size,
                f"must be a multiple of model.num_attention_heads ({m.num_attention_heads})",
            )
            head_dim = m.hidden_size // m.num_attention_heads
            valid = f"each rank must be in 1..{head_dim} (model.hidden_size / heads)"
            ranks = self.eval.ranks
            require(
                bool(ranks) and all(1 <= r <= head_dim for r in ranks), "eval.ranks", ranks, valid
            )
            fixed = self.projection.fixed_rank
            require(1 <= fixed <= head_dim, "projection.fixed_rank", fixed, valid)
