"""Typed config of the NUPA experiment (schema for configs/nupa/*.yaml).

Two parts: ``benchmark`` (the exact benchmark generator, brief Sec. 3.3-3.7) and the
from-scratch tokenizer study (``tokenizers``, ``model``, ``train``, ``study``; Sec. 3.9, 5b).
Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, LoopConfig


@dataclass
class PairDatasetConfig:
    """One number-pair dataset of brief Sec. 3.3 (the benchmark's raw material)."""

    name: str = "add"  # add | compare | compare_harder
    representation: str = "Integer"  # Integer | Float | Fraction | ScientificNotation
    index: int = 0  # seed = benchmark.master_seed + index (official order 0..9)
    train_lengths: list[int] = field(default_factory=lambda: [1, 8])  # [min, max] inclusive
    test_lengths: list[int] = field(default_factory=lambda: [3, 20])  # valid and test [lo, hi]
    test_shorter_len: float | None = 0.5  # shortest b of a length-L test pair: int(0.5 L)
    same_len: bool | None = None  # True: b has a's length
    harder_compare: bool = False  # b copies a prefix of a (Sec. 3.3 "harder compare")


@dataclass
class BenchmarkConfig:
    """The text benchmark (brief Sec. 3.3-3.7, 6)."""

    master_seed: int = 208171  # official benchmark_config.py
    n_train: int = 100000  # pairs per train length, every official dataset
    n_valid: int = 1000  # pairs per valid length
    n_test: int = 1000  # pairs per test length
    datasets: list[PairDatasetConfig] = field(default_factory=list)  # the 10 of Sec. 3.3
    test_samples_per_digit: int | None = 100  # LLM test subsample per (task, digit); None: all
    test_sample_seed: int = 20222943  # official benchmark_test.py


@dataclass
class TokenizerConfig:
    """A number tokenizer of brief Sec. 3.9 (one per compared method)."""

    k: int = 1  # digits per token: vocabulary of all digit strings of length 1..k
    split: str = "right"  # right (integer parts from the right) | left | random
    reverse: str = "none"  # none | int | dec | each | total
    pad_zeros: bool = False  # zero-pad input parts to the longest same part
    index_hints: bool = False
    max_index: int = 30


@dataclass
class MethodConfig:
    """One compared setting of the study: a tokenizer and a positional encoding."""

    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    pe: str = "rope"  # rope | nope | alibi (brief Sec. 3.9)


@dataclass
class ModelConfig:
    """transformers.LlamaConfig fields of the from-scratch model (brief Sec. 5b)."""

    hidden_size: int = 64
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    max_position_embeddings: int = 128
    rope_theta: float = 10000.0


@dataclass
class TrainConfig:
    """Optimisation of one run (brief Sec. 5b; paper: Sec. 3.9 official defaults)."""

    steps: int = 1500
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 100  # linear warm-up, then cosine to 0
    adam_betas: list[float] = field(default_factory=lambda: [0.9, 0.999])


@dataclass
class StudyConfig:
    """The task and lengths of the tokenizer study (brief Sec. 5b)."""

    task: str = "add_Integer_Integer_Integer"  # a benchmark task name (tasks.VARIANTS)
    train_lengths: list[int] = field(default_factory=lambda: [1, 5])  # len(a) ~ U{lo..hi}
    test_lengths: list[int] = field(default_factory=lambda: [3, 4, 5])  # in-domain
    ood_lengths: list[int] = field(default_factory=list)  # longer than trained (reported)
    n_test_per_length: int = 200
    test_seed_offset: int = 1000  # test RNG = random.Random(test_seed_offset + seed)
    extra_new_tokens: int = 3  # greedy budget: ceil((L + 2) / k) + this
    eval_batch_size: int = 512


@dataclass
class RealConfig:
    """The real rung: a pretrained LLM on the text benchmark (brief Sec. 3.7, 3.8, 6)."""

    tasks: list[str] = field(default_factory=list)  # task names; empty: all 50 (tasks.VARIANTS)
    digits: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 12, 16, 20])  # the ladder
    questions_per_cell: int = 5  # per (task, digit), official sampler
    claim_tasks: list[str] = field(default_factory=lambda: ["add_Integer_Integer_Integer"])
    claim_questions_per_cell: int = 30  # per (task, digit) of the claim tasks
    # results rows "<task>/<lo>-<hi>": the claim's 1-4 vs 12-20, and 8 digits between
    ranges: list[list[int]] = field(default_factory=lambda: [[1, 4], [5, 8], [12, 20]])
    new_tokens_per_digit: int = 2  # official budget: max_new_tokens = 2 * digit ...
    min_new_tokens: int = 4  # ... and at least this (llm_eval.py)
    batch_size: int = 32  # questions of one digit decoded together (left padding, KV cache)
    stop_when_settled: bool = True  # stop a batch once no answer can change (same scores)
    agreement_questions: int = 6  # decoded alone and batched: the answers must agree


@dataclass
class Config(ExperimentConfig):
    methods: list[str] = field(default_factory=lambda: ["one_digit", "three_digit"])
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    # method name -> its tokenizer and positional encoding; null disables one
    settings: dict[str, MethodConfig | None] = field(default_factory=dict)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    verify_benchmark: bool = True  # generate the benchmark and check it against the oracle
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    study: StudyConfig = field(default_factory=StudyConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    real: RealConfig = field(default_factory=RealConfig)  # scale=real only
