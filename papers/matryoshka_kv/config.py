"""Typed config of the MatryoshkaKV experiment (schema for configs/matryoshka_kv/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    REAL_SCALE,
    ConfigError,
    ExperimentConfig,
    TrainLoopConfig,
    checked,
    require,
    require_at_most,
    require_divides,
    require_multiple,
)

# token ids of the toy corpus: space, a-z and '.' (papers.matryoshka_kv.data.ALPHABET)
TOY_SYMBOLS = 28
# the methods that draw ranks from projection.rank_schedule (the search trains matryoshka)
SCHEDULED = ("matryoshka", "matryoshka_searched")


@dataclass
class ModelConfig:
    """The base model: a checkpoint folder (paper), a pinned pretrained asset (real) or a small
    Llama the toy pre-trains."""

    # paper: local Llama / Mistral folder (from_pretrained, no download); real: your own
    # Llama-family checkpoint in place of the asset (its heads and head size checked at start)
    path: str | None = None
    asset: str | None = None  # real: shared.pretrained's model asset (SmolLM2-135M), verified
    vocab_size: int = checked(32, ge=1)
    hidden_size: int = checked(64, ge=1)
    intermediate_size: int = checked(256, ge=1)
    num_hidden_layers: int = checked(2, ge=1)
    num_attention_heads: int = checked(4, ge=1)
    num_key_value_heads: int = checked(4, ge=1)
    max_position_embeddings: int = checked(256, ge=1)
    rope_theta: float = checked(10000.0, gt=0)


@dataclass
class CorpusConfig:
    """The toy's synthetic character corpus (brief Sec. 5), local text files (paper), or the
    pinned real corpus (real: its train documents for PCA and training, test ones for eval)."""

    lexicon_size: int = checked(300, ge=1)
    lexicon_seed: int = checked(1234, ge=0)  # fixed across run seeds
    min_word: int = checked(2, ge=1)  # letters per lexicon word: min_word..max_word
    max_word: int = checked(7, ge=1)
    copy_prob: float = checked(0.35, ge=0, le=1)  # next word copies an earlier word of the sequence
    # copies start once this many words exist (a copy needs an earlier word)
    copy_after: int = checked(4, ge=1)
    period_prob: float = checked(0.08, ge=0, le=1)
    seq_len: int = checked(128, ge=2)  # tokens per sequence (next-token targets need two)
    pca_path: str | None = None  # paper: local Alpaca json for the PCA statistics
    train_path: str | None = None  # paper: local RedPajama-sample json for training
    asset: str | None = None  # real: shared.pretrained's corpus asset, cut into seq_len segments
    # real: a folder of your UTF-8 .txt files in place of the asset's documents; the last
    # ``test_share`` of them in name order (at least one) are the test documents, the rest train
    path: str | None = None
    test_share: float = checked(0.375, gt=0, lt=1)  # the shipped split: 6 of 16 documents


@dataclass
class PretrainConfig:
    """Pre-training of the toy teacher (brief Sec. 5); skipped with model.path."""

    steps: int = checked(600, ge=1)
    batch_size: int = checked(16, ge=1)
    lr: float = checked(3e-3, gt=0)
    weight_decay: float = checked(0.01, ge=0)
    warmup_steps: int = checked(50, ge=0, le_key="pretrain.steps")


@dataclass
class ProjectionTrainConfig:
    """Matryoshka training of the projections (brief Sec. 3.4)."""

    steps: int = checked(300, ge=1)
    batch_size: int = checked(16, ge=1)
    lr: float = checked(1e-3, gt=0)
    weight_decay: float = checked(0.0, ge=0)
    warmup_steps: int = checked(0, ge=0, le_key="projection.steps")
    kl_weight: float = checked(1.0, ge=0)  # official: 0.25
    ce_weight: float = checked(0.0, ge=0)  # official: 0.75
    temperature: float = checked(1.0, gt=0)
    # ranks drawn uniformly per (layer, head, K / V) at every Matryoshka step
    rank_schedule: list[int] = checked(factory=lambda: [2, 4, 6, 8, 10, 12, 14, 16], ge=1)
    fixed_rank: int = checked(8, ge=1)  # the fixed-rank ablation trains at this rank only


@dataclass
class SearchConfig:
    """Greedy heterogeneous rank search (brief Sec. 3.5)."""

    budget: float = checked(0.375, gt=0, le=1)  # cached fraction of the full KV cache
    step: int = checked(4, ge=1)  # Delta (below the head dimension)
    updates_per_round: int = checked(8, ge=1)  # n_upd
    calibration_sequences: int = checked(8, ge=1)


@dataclass
class EvalConfig:
    n_sequences: int = checked(64, ge=1)
    # uniform ranks evaluated; the largest is read as the head dimension (budget r / max)
    ranks: list[int] = checked(factory=lambda: [2, 4, 6, 8, 10, 12, 14, 16], ge=1)
    pca_sequences: int = checked(64, ge=1)
    batch_size: int = checked(16, ge=1)
    # real: also next-token top-1 accuracy of each budget, and its ratio to the full cache's
    accuracy: bool = False


@dataclass
class Config(ExperimentConfig):
    # pca | matryoshka (trained, random rank per head) | fixed_rank (ablation) |
    # matryoshka_searched (the matryoshka student at greedy heterogeneous ranks, Sec. 3.5)
    methods: list[str] = field(
        default_factory=lambda: ["pca", "matryoshka", "fixed_rank", "matryoshka_searched"]
    )
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    model: ModelConfig = field(default_factory=ModelConfig)
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    projection: ProjectionTrainConfig = field(default_factory=ProjectionTrainConfig)
    rank_search: SearchConfig = field(default_factory=SearchConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        c = self.corpus
        # every lexicon word draws randint(min_word, max_word) letters (at every scale)
        require_at_most(
            "corpus.min_word", c.min_word, c.max_word, f"corpus.max_word ({c.max_word})"
        )
        ranks = self.eval.ranks
        require(bool(ranks), "eval.ranks", ranks, "name at least one rank")
        schedule = self.projection.rank_schedule
        if any(method in SCHEDULED for method in self.methods):
            require(bool(schedule), "projection.rank_schedule", schedule, "name at least one rank")
        if self.scale in ("smoke", "toy"):  # the toy teacher; paper and real read a checkpoint
            m = self.model
            require_multiple(
                "model.hidden_size",
                m.hidden_size,
                m.num_attention_heads,
                "model.num_attention_heads",
            )
            # grouped-query attention shares each key / value head among whole query groups
            require_divides(
                "model.num_key_value_heads",
                m.num_key_value_heads,
                m.num_attention_heads,
                "model.num_attention_heads",
            )
            # the toy corpus's character ids index the embedding
            require(
                m.vocab_size >= TOY_SYMBOLS,
                "model.vocab_size",
                m.vocab_size,
                f"must be >= {TOY_SYMBOLS} (the toy corpus's symbols)",
            )
            problems = rank_problems(
                self, m.hidden_size // m.num_attention_heads, "model.hidden_size / heads"
            )
            if problems:
                raise ConfigError(problems[0])
        if self.corpus.path is not None:
            require(
                self.scale == REAL_SCALE,
                "corpus.path",
                self.corpus.path,
                "a folder of your text is read at scale=real (paper scale: corpus.train_path)",
            )


def rank_problems(cfg: Config, head_dim: int, source: str) -> list[str]:
    """The ranks a run uses against the model's head size ``d`` (``source`` says where ``d``
    comes from): evaluation, the training schedule and the fixed rank at most ``d``, the
    search's step below it (:func:`papers.matryoshka_kv.method.greedy_rank_search`)."""
    # key -> (the value as configured, the ranks it asks for)
    checks = {"eval.ranks": (list(cfg.eval.ranks), list(cfg.eval.ranks))}
    if any(method in SCHEDULED for method in cfg.methods):
        schedule = list(cfg.projection.rank_schedule)
        checks["projection.rank_schedule"] = (schedule, schedule)
    if "fixed_rank" in cfg.methods:
        checks["projection.fixed_rank"] = (cfg.projection.fixed_rank, [cfg.projection.fixed_rank])
    problems = [
        f"{key}={value}: each rank must be <= {head_dim} ({source})"
        for key, (value, ranks) in checks.items()
        if max(ranks) > head_dim
    ]
    if "matryoshka_searched" in cfg.methods and cfg.rank_search.step >= head_dim:
        problems.append(
            f"rank_search.step={cfg.rank_search.step}: must be < {head_dim} (d, {source})"
        )
    return problems
