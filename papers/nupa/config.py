"""Typed config of the NUPA experiment (schema for configs/nupa/*.yaml).

Two parts: ``benchmark`` (the exact benchmark generator, brief Sec. 3.3-3.7) and the
from-scratch tokenizer study (``tokenizers``, ``model``, ``train``, ``study``; Sec. 3.9, 5b).
Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    REAL_SCALE,
    ExperimentConfig,
    LoopConfig,
    checked,
    require,
    require_at_least,
    require_divides,
)

# The names the code accepts, defined only here (tasks.py, formats.py, tokenizer.py and model.py
# import them; oracle.py, the independent answer checker, keeps its own spelling on purpose).
# pair datasets (tasks.py ADD, COMPARE, COMPARE_HARDER) and number representations (formats.py
# INTEGER, FLOAT, FRACTION, SCIENTIFIC)
PAIR_DATASETS = ("add", "compare", "compare_harder")
REPRESENTATIONS = ("Integer", "Float", "Fraction", "ScientificNotation")
# benchmark.make_harder: the representations a harder compare is defined for
HARDER_REPRESENTATIONS = ("Integer", "Float", "ScientificNotation")
# tokenizer.py SPLITS and REVERSES; the config also takes "no", the official spelling of "none"
TOKENIZER_SPLITS = ("right", "left", "random")
TOKENIZER_REVERSE_MODES = ("none", "int", "dec", "each", "total")
TOKENIZER_REVERSES = (*TOKENIZER_REVERSE_MODES, "no")
POSITIONAL_ENCODINGS = ("rope", "nope", "alibi")  # model.py


@dataclass
class PairDatasetConfig:
    """One number-pair dataset of brief Sec. 3.3 (the benchmark's raw material)."""

    name: str = checked("add", choices=PAIR_DATASETS)  # add | compare | compare_harder
    # Integer | Float | Fraction | ScientificNotation
    representation: str = checked("Integer", choices=REPRESENTATIONS)
    index: int = checked(0, ge=0)  # seed = benchmark.master_seed + index (official order 0..9)
    train_lengths: list[int] = checked(factory=lambda: [1, 8], ge=1)  # [min, max] inclusive
    test_lengths: list[int] = checked(factory=lambda: [3, 20], ge=1)  # valid and test [lo, hi]
    # shortest b of a length-L test pair: int(0.5 L)
    test_shorter_len: float | None = checked(0.5, ge=0, le=1)
    same_len: bool | None = None  # True: b has a's length
    harder_compare: bool = False  # b copies a prefix of a (Sec. 3.3 "harder compare")


@dataclass
class BenchmarkConfig:
    """The text benchmark (brief Sec. 3.3-3.7, 6)."""

    master_seed: int = checked(208171, ge=0)  # official benchmark_config.py
    n_train: int = checked(100000, ge=0)  # pairs per train length, every official dataset
    n_valid: int = checked(1000, ge=0)  # pairs per valid length
    n_test: int = checked(1000, ge=0)  # pairs per test length
    datasets: list[PairDatasetConfig] = field(default_factory=list)  # the 10 of Sec. 3.3
    # LLM test subsample per (task, digit); None: all
    test_samples_per_digit: int | None = checked(100, ge=1)
    test_sample_seed: int = checked(20222943, ge=0)  # official benchmark_test.py


@dataclass
class TokenizerConfig:
    """A number tokenizer of brief Sec. 3.9 (one per compared method)."""

    k: int = checked(1, ge=1)  # digits per token: vocabulary of all digit strings of length 1..k
    # right (integer parts from the right) | left | random
    split: str = checked("right", choices=TOKENIZER_SPLITS)
    reverse: str = checked("none", choices=TOKENIZER_REVERSES)  # none | int | dec | each | total
    pad_zeros: bool = False  # zero-pad input parts to the longest same part
    index_hints: bool = False
    max_index: int = checked(30, ge=1)  # index hints per part (digit positions)


@dataclass
class MethodConfig:
    """One compared setting of the study: a tokenizer and a positional encoding."""

    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    pe: str = checked("rope", choices=POSITIONAL_ENCODINGS)  # rope | nope | alibi (brief Sec. 3.9)


@dataclass
class ModelConfig:
    """transformers.LlamaConfig fields of the from-scratch model (brief Sec. 5b)."""

    hidden_size: int = checked(64, ge=1)
    intermediate_size: int = checked(256, ge=1)
    num_hidden_layers: int = checked(2, ge=1)
    num_attention_heads: int = checked(4, ge=1, le_key="model.hidden_size")
    num_key_value_heads: int = checked(4, ge=1, le_key="model.num_attention_heads")
    max_position_embeddings: int = checked(128, ge=1)
    rope_theta: float = checked(10000.0, gt=0)


@dataclass
class TrainConfig:
    """Optimisation of one run (brief Sec. 5b; paper: Sec. 3.9 official defaults)."""

    steps: int = checked(1500, ge=1)
    batch_size: int = checked(64, ge=1)
    lr: float = checked(1e-3, gt=0)
    weight_decay: float = checked(0.01, ge=0)
    warmup_steps: int = checked(100, ge=0, le_key="train.steps")  # linear warm-up, then cosine to 0
    adam_betas: list[float] = checked(factory=lambda: [0.9, 0.999], ge=0, lt=1)  # AdamW betas


@dataclass
class StudyConfig:
    """The task and lengths of the tokenizer study (brief Sec. 5b)."""

    task: str = "add_Integer_Integer_Integer"  # a benchmark task name (tasks.VARIANTS)
    train_lengths: list[int] = checked(factory=lambda: [1, 5], ge=1)  # len(a) ~ U{lo..hi}
    test_lengths: list[int] = checked(factory=lambda: [3, 4, 5], ge=1)  # in-domain
    ood_lengths: list[int] = checked(factory=list, ge=1)  # longer than trained (reported)
    n_test_per_length: int = checked(200, ge=1)
    # test RNG = random.Random(test_seed_offset + seed)
    test_seed_offset: int = checked(1000, free="an offset: random.Random takes any int")
    extra_new_tokens: int = checked(3, ge=0)  # greedy budget: ceil((L + 2) / k) + this
    eval_batch_size: int = checked(512, ge=1)


@dataclass
class RealConfig:
    """The real rung: a pretrained LLM on the text benchmark (brief Sec. 3.7, 3.8, 6)."""

    tasks: list[str] = field(default_factory=list)  # task names; empty: all 50 (tasks.VARIANTS)
    digits: list[int] = checked(factory=lambda: [1, 2, 4, 8, 12, 16, 20], ge=1)  # the ladder
    questions_per_cell: int = checked(5, ge=1)  # per (task, digit), official sampler
    claim_tasks: list[str] = field(default_factory=lambda: ["add_Integer_Integer_Integer"])
    claim_questions_per_cell: int = checked(30, ge=1)  # per (task, digit) of the claim tasks
    # results rows "<task>/<lo>-<hi>": the claim's 1-4 vs 12-20, and 8 digits between
    ranges: list[list[int]] = checked(factory=lambda: [[1, 4], [5, 8], [12, 20]], ge=1)
    new_tokens_per_digit: int = checked(2, ge=0)  # official budget: max_new_tokens = 2 * digit ...
    min_new_tokens: int = checked(4, ge=1)  # ... and at least this (llm_eval.py)
    # questions of one digit decoded together (left padding, KV cache)
    batch_size: int = checked(32, ge=1)
    stop_when_settled: bool = True  # stop a batch once no answer can change (same scores)
    # decoded alone and batched: the answers must agree (0: no check)
    agreement_questions: int = checked(6, ge=0)
    # methods=[own]: your own Llama-family checkpoint folder (from_pretrained(local_dir))
    model_path: str | None = None


@dataclass
class Config(ExperimentConfig):
    methods: list[str] = field(default_factory=lambda: ["one_digit", "three_digit"])
    seeds: list[int] = checked(factory=lambda: [0, 1], ge=0)
    # method name -> its tokenizer and positional encoding; null disables one
    settings: dict[str, MethodConfig | None] = field(default_factory=dict)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    verify_benchmark: bool = True  # generate the benchmark and check it against the oracle
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    study: StudyConfig = field(default_factory=StudyConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    real: RealConfig = field(default_factory=RealConfig)  # scale=real only

    def validate(self) -> None:
        super().validate()
        if self.scale == REAL_SCALE:  # the LLM is asked test questions only
            require_at_least("benchmark.n_test", self.benchmark.n_test, 1)
        seen: set[tuple[str, str]] = set()
        for i, spec in enumerate(self.benchmark.datasets):
            key = f"benchmark.datasets.{i}"
            for name in ("train_lengths", "test_lengths"):
                _require_span(f"{key}.{name}", getattr(spec, name))
            # benchmark.iter_benchmark keys the datasets by (name, representation): a second
            # one would silently replace the first
            pair = (spec.name, spec.representation)
            require(pair not in seen, f"{key}.name", spec.name, f"{pair} is configured twice")
            seen.add(pair)
            if spec.harder_compare:  # benchmark.make_harder
                require(
                    spec.representation in HARDER_REPRESENTATIONS,
                    f"{key}.harder_compare",
                    True,
                    f"is not defined for {spec.representation}; "
                    f"representations: {', '.join(HARDER_REPRESENTATIONS)}",
                )
                require(
                    spec.representation != "Integer" or spec.same_len is True,
                    f"{key}.same_len",
                    spec.same_len,
                    "a harder compare between Integers needs same_len=true",
                )
        if self.scale == REAL_SCALE:
            return  # the from-scratch study below does not run
        _require_span("study.train_lengths", self.study.train_lengths)
        require(bool(self.study.test_lengths), "study.test_lengths", [], "name at least one length")
        both = sorted(set(self.study.test_lengths) & set(self.study.ood_lengths))
        require(
            not both,
            "study.ood_lengths",
            self.study.ood_lengths,
            f"repeats study.test_lengths {both} (a length is in-domain or longer than trained)",
        )
        t = self.train
        require(len(t.adam_betas) == 2, "train.adam_betas", t.adam_betas, "give two betas")
        m = self.model
        require_divides(
            "model.num_key_value_heads",
            m.num_key_value_heads,
            m.num_attention_heads,
            "model.num_attention_heads",
        )
        used = [self.settings.get(name) for name in self.methods]
        if any(s is not None and s.pe == "rope" for s in used):
            head = m.hidden_size // m.num_attention_heads
            require(
                head % 2 == 0,
                "model.hidden_size",
                m.hidden_size,
                f"RoPE needs an even head size (hidden_size // num_attention_heads = {head})",
            )


def _require_span(key: str, span: list[int]) -> None:
    """``[low, high]``, inclusive (``data.training_batch``, ``benchmark.generate_pairs``)."""
    require(
        len(span) == 2 and span[0] <= span[1], key, span, "must be [low, high] with low <= high"
    )
