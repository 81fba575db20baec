"""Typed config of the LeReT experiment (schema for configs/leret/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/leret/paper.yaml`` holds the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, TrainLoopConfig


@dataclass
class WorldConfig:
    """The toy's synthetic knowledge base and questions (brief Sec. 5.1)."""

    n_entities: int = 300  # one document per entity
    n_relations: int = 10
    n_fillers: int = 150  # Zipf(1) filler words
    facts_per_entity: int = 3  # distinct relations per entity
    n_questions: int = 1500
    comparison_fraction: float = 0.5  # bridge vs comparison questions
    distractor_rank_min: int = 20  # two distractor fillers of Zipf rank 20..99 per question
    distractor_rank_max: int = 99
    n_demo: int = 100  # few-shot demo mining
    n_validation: int = 100  # prompt validation
    n_test: int = 300
    per_iteration: list[int] = field(default_factory=lambda: [200, 200])  # fresh per iteration


@dataclass
class DataConfig:
    """Paper-scale data (brief Sec. 6), read from local files only."""

    dataset: str = "hotpotqa"  # hotpotqa | hover
    corpus_path: str | None = None  # json/jsonl of {"title", "text"} Wikipedia-2017 abstracts
    train_path: str | None = None  # json/jsonl training questions (supporting_facts = gold)
    dev_path: str | None = None  # json/jsonl dev questions (the test set)
    split_seed: int = 0  # shuffle of the training questions before splitting
    n_demo: int = 50  # BootstrapFewShotWithRandomSearch train questions
    n_validation: int = 50  # and validation questions
    per_iteration: list[int] = field(default_factory=lambda: [1000])  # disjoint chunks
    n_test: int = 1000  # dev questions evaluated
    log_contexts: bool = False  # write retrieved contexts per test question (for a generator)


@dataclass
class RetrieverConfig:
    """BM25 through ``bm25s`` (brief Sec. 5.2) and the multi-hop pipeline (Sec. 3.1)."""

    k1: float = 1.5
    b: float = 0.75
    top_k: int = 2  # documents retrieved per hop
    hops: int = 2


@dataclass
class PolicyConfig:
    """The toy's pointer policy (brief Sec. 5.4): MLP 17 -> hidden -> hidden -> 1, tanh."""

    hidden: int = 32
    query_length: int = 2  # m distinct tokens per query


@dataclass
class ModelConfig:
    """Paper scale: a local causal LM writes the query after the chat template (Sec. 6)."""

    path: str | None = None  # local folder (from_pretrained, nothing downloaded); null = toy
    dtype: str = "float32"  # float32 | bfloat16 | float16 (policy)
    system_prompt: str = (
        "You are a helpful assistant. You must continue the user text directly without *any* "
        "additional interjections."
    )
    system_in_user: bool = False  # Gemma: the system text is prepended to the user turn
    max_new_tokens: int = 32  # a query is one line
    min_temperature: float = 0.1  # the TGI client clamps temperature 0.01 to 0.1
    max_length: int = 2048  # prompt + query tokens (longest prompts are cut from the left)
    max_passage_chars: int = 400  # each context passage is shown cut to this length
    micro_batch_size: int = 4  # sequences per forward pass / generate call


@dataclass
class BaseConfig:
    """The toy's "instruction-tuned" base: trained on the habit [subject, first relation]."""

    steps: int = 150
    batch_size: int = 32
    lr: float = 1.0e-2
    target_weight: float = 0.7  # label smoothing: the rest is spread over the other candidates


@dataclass
class PromptSearchConfig:
    """Bootstrapped few-shot prompt search (Sec. 3.3.1; toy analogue Sec. 5.4)."""

    n_few_shot: int = 3  # prompts kept; with the zero-shot prompt: 4
    demos_per_prompt: int = 3  # max_bootstrapped_demos
    n_candidates: int = 12  # num_candidate_programs
    prior_weight: float = 3.0  # toy: gamma, weight of the demo prior in the prompted score
    mining_temperature: float = 1.0  # toy: the base is run at T = 1 to mine demos


@dataclass
class CollectionConfig:
    """Prompt-driven diverse sampling (Sec. 3.3.2-4)."""

    samples_per_prompt: int = 2  # n queries per prompt per hop input
    temperature: float = 1.0
    top_bonus: float = 0.5  # added to the top AP level's weight when choosing the next context
    temperature_only_samples: int = 8  # ablation: zero-shot prompt only, same sample count


@dataclass
class OptimConfig:
    """One training stage's optimizer (official: RMSprop, 150 linear warm-up steps)."""

    name: str = "adam"  # adam | rmsprop
    lr: float = 1.0e-2
    batch_size: int = 32
    epochs: int = 1
    warmup_steps: int = 0  # linear warm-up from 0


@dataclass
class SFTConfig:
    """LeReT-CD: SFT on the top-level queries at the zero-shot input (Sec. 3.4.1)."""

    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1.0e-2, epochs=3))


@dataclass
class PreferenceConfig:
    """LeReT: IPO from the SFT model, which is the frozen reference (Sec. 3.4.2)."""

    loss: str = "ipo"  # ipo | dpo
    beta: float = 0.05  # target margin 1/(2 beta) = 10 nats
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=3.0e-3, epochs=2))


@dataclass
class Config(ExperimentConfig):
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
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
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
