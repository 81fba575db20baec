"""Typed config of the LeReT experiment (schema for configs/leret/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/leret/paper.yaml`` holds the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, ReadOnlyWhere, TrainLoopConfig, checked, require

DATASETS = ("hotpotqa", "hover")  # data.load_questions reads these two formats
# The keys of lm_policy.DTYPES, train.OPTIMIZER_CLASSES, method.PREFERENCE_LOSSES and
# train.VARIANTS (tests/papers/leret/test_config_names.py checks them).
DTYPE_NAMES = ("float32", "bfloat16", "float16")
OPTIMIZERS = ("adam", "rmsprop")  # train.make_optimizer
PREFERENCE_LOSS_NAMES = ("ipo", "dpo")
# the methods that run the iterative LeReT loop (train.VARIANTS): they need one chunk at least
LOOP_METHODS = ("leret_cd", "leret", "temperature_only", "ipo_flipped")


@dataclass
class WorldConfig:
    """The toy's synthetic knowledge base and questions (brief Sec. 5.1)."""

    n_entities: int = checked(300, ge=2)  # one document per entity
    n_relations: int = checked(10, ge=1)
    n_fillers: int = checked(150, ge=1)  # Zipf(1) filler words
    # distinct relations per entity
    facts_per_entity: int = checked(3, ge=1, le_key="world.n_relations")
    n_questions: int = checked(1500, ge=1)
    comparison_fraction: float = checked(0.5, ge=0, le=1)  # bridge vs comparison questions
    # two distractor fillers of Zipf rank 20..99 per question
    distractor_rank_min: int = checked(20, ge=1, lt_key="world.distractor_rank_max")
    distractor_rank_max: int = checked(99, le_key="world.n_fillers")
    n_demo: int = checked(100, ge=1)  # few-shot demo mining
    n_validation: int = checked(100, ge=1)  # prompt validation
    n_test: int = checked(300, ge=1)
    per_iteration: list[int] = checked(factory=lambda: [200, 200], ge=1)  # fresh per iteration


@dataclass
class DataConfig:
    """Paper-scale data (brief Sec. 6), read from local files only."""

    dataset: str = checked("hotpotqa", choices=DATASETS)  # hotpotqa | hover
    corpus_path: str | None = None  # json/jsonl of {"title", "text"} Wikipedia-2017 abstracts
    train_path: str | None = None  # json/jsonl training questions (supporting_facts = gold)
    dev_path: str | None = None  # json/jsonl dev questions (the test set)
    split_seed: int = checked(0, ge=0)  # shuffle of the training questions before splitting
    n_demo: int = checked(50, ge=1)  # BootstrapFewShotWithRandomSearch train questions
    n_validation: int = checked(50, ge=1)  # and validation questions
    per_iteration: list[int] = checked(factory=lambda: [1000], ge=1)  # disjoint chunks
    n_test: int = checked(1000, ge=1)  # dev questions evaluated
    log_contexts: bool = False  # write retrieved contexts per test question (for a generator)


@dataclass
class RetrieverConfig:
    """BM25 through ``bm25s`` (brief Sec. 5.2) and the multi-hop pipeline (Sec. 3.1)."""

    k1: float = checked(1.5, ge=0)  # term-frequency saturation (0: binary tf)
    b: float = checked(0.75, ge=0, le=1)  # length normalisation
    top_k: int = checked(2, ge=1)  # documents retrieved per hop
    hops: int = checked(2, ge=1)


@dataclass
class PolicyConfig:
    """The toy's pointer policy (brief Sec. 5.4): MLP 17 -> hidden -> hidden -> 1, tanh."""

    hidden: int = checked(32, ge=1)
    query_length: int = checked(2, ge=1)  # m distinct tokens per query


@dataclass
class ModelConfig:
    """Paper scale: a local causal LM writes the query after the chat template (Sec. 6)."""

    path: str | None = None  # local folder (from_pretrained, nothing downloaded); null = toy
    dtype: str = checked("float32", choices=DTYPE_NAMES)  # float32 | bfloat16 | float16 (policy)
    system_prompt: str = (
        "You are a helpful assistant. You must continue the user text directly without *any* "
        "additional interjections."
    )
    system_in_user: bool = False  # Gemma: the system text is prepended to the user turn
    # prompt + query tokens (longest prompts are cut from the left)
    max_length: int = checked(2048, ge=1)
    # a query is one line; the prompt keeps the last max_length - max_new_tokens tokens
    max_new_tokens: int = checked(32, ge=1, lt_key="model.max_length")
    min_temperature: float = checked(0.1, gt=0)  # the TGI client clamps temperature 0.01 to 0.1
    max_passage_chars: int = checked(400, ge=1)  # each context passage is shown cut to this length
    micro_batch_size: int = checked(4, ge=1)  # sequences per forward pass / generate call


@dataclass
class BaseConfig:
    """The toy's "instruction-tuned" base: trained on the habit [subject, first relation]."""

    steps: int = checked(150, ge=1)
    batch_size: int = checked(32, ge=1)
    lr: float = checked(1.0e-2, gt=0)
    # label smoothing: the rest is spread over the other candidates
    target_weight: float = checked(0.7, ge=0, le=1)


@dataclass
class PromptSearchConfig:
    """Bootstrapped few-shot prompt search (Sec. 3.3.1; toy analogue Sec. 5.4)."""

    n_candidates: int = checked(12, ge=1)  # num_candidate_programs
    # prompts kept (the best of the candidates); with the zero-shot prompt: 4
    n_few_shot: int = checked(3, ge=1, le_key="prompts.n_candidates")
    demos_per_prompt: int = checked(3, ge=1)  # max_bootstrapped_demos
    # toy: gamma, weight of the demo prior in the prompted score
    prior_weight: float = checked(3.0, ge=0)
    mining_temperature: float = checked(1.0, gt=0)  # toy: the base is run at T = 1 to mine demos


@dataclass
class CollectionConfig:
    """Prompt-driven diverse sampling (Sec. 3.3.2-4)."""

    samples_per_prompt: int = checked(2, ge=1)  # n queries per prompt per hop input
    temperature: float = checked(1.0, gt=0)
    # added to the top AP level's weight when choosing the next context (> 0: with every open
    # trajectory at AP 0 the level weights are this bonus alone)
    top_bonus: float = checked(0.5, gt=0)
    # ablation: zero-shot prompt only, same sample count
    temperature_only_samples: int = checked(8, ge=1)


@dataclass
class OptimConfig:
    """One training stage's optimizer (official: RMSprop, 150 linear warm-up steps)."""

    name: str = checked("adam", choices=OPTIMIZERS)  # adam | rmsprop
    lr: float = checked(1.0e-2, gt=0)
    batch_size: int = checked(32, ge=1)
    epochs: int = checked(1, ge=1)
    warmup_steps: int = checked(0, ge=0)  # linear warm-up from 0


@dataclass
class SFTConfig:
    """LeReT-CD: SFT on the top-level queries at the zero-shot input (Sec. 3.4.1)."""

    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1.0e-2, epochs=3))


@dataclass
class PreferenceConfig:
    """LeReT: IPO from the SFT model, which is the frozen reference (Sec. 3.4.2)."""

    loss: str = checked("ipo", choices=PREFERENCE_LOSS_NAMES)  # ipo | dpo
    beta: float = checked(0.05, gt=0)  # target margin 1/(2 beta) = 10 nats
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=3.0e-3, epochs=2))


@dataclass
class Config(ExperimentConfig):
    # the paper-scale data (data.*, model.path set) and the toy's world (world.*, no model.path)
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=tuple(
                f"data.{name}"
                for name in (
                    "dataset",
                    "corpus_path",
                    "train_path",
                    "dev_path",
                    "split_seed",
                    "n_demo",
                    "n_validation",
                    "per_iteration",
                    "n_test",
                )
            ),
            where="a run with model.path set (scale=paper; the toy reads world.*)",
            reads=lambda _, root: root.model.path is not None,
        ),
        # and the toy's synthetic world, which a run on the paper's files never builds
        ReadOnlyWhere(
            keys=("world",),
            where="a run without model.path (the toy; scale=paper reads data.*)",
            reads=lambda _, root: root.model.path is None,
        ),
    )
    # base | few_shot | leret_cd | leret | temperature_only | ipo_flipped
    methods: list[str] = field(
        default_factory=lambda: [
            "base",
            "few_shot",
            "leret_cd",
            "leret",
            "temperature_only",
            "ipo_flipped",
        ]
    )
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    world: WorldConfig = field(default_factory=WorldConfig)
    data: DataConfig = field(default_factory=DataConfig)
    retriever: RetrieverConfig = field(default_factory=RetrieverConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    base: BaseConfig = field(default_factory=BaseConfig)
    prompts: PromptSearchConfig = field(default_factory=PromptSearchConfig)
    collection: CollectionConfig = field(default_factory=CollectionConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    preference: PreferenceConfig = field(default_factory=PreferenceConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        if self.model.path is None:  # the toy: every split is drawn from world.n_questions
            w = self.world
            splits = w.n_demo + w.n_validation + w.n_test + sum(w.per_iteration)
            require(
                splits < w.n_questions,
                "world.n_questions",
                w.n_questions,
                f"must exceed n_demo + n_validation + n_test + sum(per_iteration) ({splits}): "
                "the questions left over are the base policy's habit pool",
            )
            chunks_key, chunks = "world.per_iteration", w.per_iteration
        else:
            chunks_key, chunks = "data.per_iteration", self.data.per_iteration
        looping = [m for m in self.methods if m in LOOP_METHODS]
        require(
            bool(chunks) or not looping,
            chunks_key,
            chunks,
            f"name one iteration's question chunk at least ({', '.join(looping)} run the loop)",
        )
