"""Typed config of the EM-LLM experiment (schema for configs/em_llm/*.yaml).

Every key is checked by Hydra at start: an unknown key or a wrong type fails naming it.
Defaults are the toy's values (brief Sec. 5); ``configs/em_llm/paper.yaml`` holds the
official ones (brief Sec. 3.6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    TrainLoopConfig,
    require,
    require_at_least,
    require_at_most,
    require_choice,
)


@dataclass
class MemoryConfig:
    """The episodic memory wrapped around every attention layer (brief Sec. 3)."""

    chunk: int = 8  # c: tokens per execution block (official 512)
    n_init: int = 4  # initial tokens kept forever (official 128)
    n_local: int = 32  # sliding local window (official 4096)
    n_mem: int = 64  # retrieved-token budget per layer; -1 = retrieve every stored event
    repr_topk: int = 4  # tokens averaged into an event's representative key
    min_block: int = 4  # shortest event (official 8)
    max_block: int = 16  # longest event (official 128)
    gamma: float = 1.0  # surprise threshold mu + gamma * sigma (Sec. 3.2)
    threshold_window: int = 32  # tau: past surprise values in the threshold statistics
    threshold_per_chunk: bool = False  # official: one window [e - n_local, e - c) per chunk
    # Official-code quirks (README "Official quirks"); paper.yaml sets them, the toy does not.
    # the official per-chunk window with its first / partial chunk rules; overrides
    # threshold_window and threshold_per_chunk
    official_threshold: bool = False
    official_shift: bool = False  # position t holds the surprise of token t + 1
    official_refine: bool = False  # official pre-filter, buffer offset and split range
    official_frontier: bool = False  # a boundary at the frontier waits one update
    official_contiguity: bool = False  # official buffer update order and fit tests
    uniform_blocks: bool = False  # InfLLM: fixed max_block events, no surprise boundaries
    refine: str | None = None  # None | modularity | conductance (the "M" variant, Sec. 3.3)
    refine_from_layer: int = 0  # A = sum over layers >= this (official 20 of 32)
    refine_with_buffer: bool = True  # prefix the chunk with the tail after its last boundary
    contiguity: bool = False  # the "+C" contiguity buffer (Sec. 3.5)
    contiguity_share: float = 0.3  # its share of n_mem
    global_positions: str = "one_angle"  # one_angle (InfLLM) | true (tests: exact attention)
    max_tokens: int = 100_000  # longest document accepted (a longer one fails, naming it)
    # true: the toy's summation order (padded to the full width, bit-identical to the full
    # computation, results/toy.json reproduces); false: the fast path (real rung) that computes
    # only the columns a query sees, per KV head, and surprise in float32
    exact_order: bool = True


@dataclass
class ModelConfig:
    """The base LM: a local checkpoint folder (paper) or a tiny Llama the toy trains."""

    path: str | None = None  # paper: local Mistral / Llama folder (from_pretrained)
    dtype: str = "float32"  # float32 | bfloat16 | float16
    vocab_size: int = 101
    hidden_size: int = 64
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    rope_theta: float = 10000.0
    max_position_embeddings: int = 128  # the toy trains on <= ~76 tokens


@dataclass
class TrainConfig:
    """Next-token training of the toy LM on short record streams (brief Sec. 5)."""

    steps: int = 1500
    batch_size: int = 32
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 100


@dataclass
class StreamConfig:
    """The synthetic record stream (brief Sec. 5)."""

    n_keys: int = 64
    n_passkeys: int = 16
    n_fillers: int = 16
    min_repeat: int = 4  # filler repeats per record
    max_repeat: int = 10
    train_min_records: int = 3
    train_max_records: int = 6
    test_records: int = 40
    test_seed_offset: int = 777  # test documents come from random.Random(777 + seed)


@dataclass
class EvalConfig:
    """Pass-key retrieval and the segmentation analysis (brief Sec. 5)."""

    n_documents: int = 60
    budgets: list[int] = field(default_factory=lambda: [64, -1])  # n_mem; -1 = unlimited
    segmentation_documents: int = 20
    boundary_tolerance: int = 1  # +- tokens for a detected boundary to match a record start
    refine_min_block: int = 4  # min block of the offline refinement (SM)
    refine_metric: str = "modularity"  # modularity | conductance
    variant_passkey: bool = False  # also score pass-key accuracy of the SM variant online
    plot_document: int = 0  # the test document whose surprise trace is plotted


@dataclass
class BenchmarkConfig:
    """Paper scale: LongBench / InfiniteBench jsonl files and the extended passkey."""

    root: str | None = None  # folder with <task>.jsonl files (LongBench / InfiniteBench)
    tasks: list[str] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)  # official prompt per task
    max_lengths: dict[str, int] = field(default_factory=dict)  # truncation (tokens) per task
    max_new_tokens: dict[str, int] = field(default_factory=dict)
    max_examples: int = -1  # -1 = all examples of a task
    passkey_lengths: list[int] = field(default_factory=list)  # extended passkey, in tokens
    passkey_trials: int = 5


@dataclass
class RealConfig:
    """scale=real: the pretrained SmolLM2-135M (shared.pretrained, 8,192-token window) on the
    extended pass-key and on the docutils test documents' segmentation."""

    # metric name -> document length (tokens): the memory methods' and full attention's
    passkey_lengths: dict[str, int] = field(
        default_factory=lambda: {"passkey_16k": 16384, "passkey_32k": 32768}
    )
    full_lengths: dict[str, int] = field(
        default_factory=lambda: {"passkey_4k": 4096, "passkey_8k": 8192}
    )
    documents: int = 5  # pass-key documents per length
    min_depth: float = 0.1  # the needle's relative depth is uniform in [min_depth, max_depth]
    max_depth: float = 0.9
    new_tokens: int = 7  # greedy answer length (" " + 5 digits for SmolLM2's digit tokens)
    segmentation_documents: int = -1  # test documents for the segmentation (-1 = all)
    segmentation_tokens: int = 4096  # each one's first tokens are read
    # forked workers reading documents at once (one thread each; the 2 cores): the
    # numbers do not depend on it, and the run's CPU time counts every worker
    processes: int = 1


@dataclass
class Config(ExperimentConfig):
    # full | sliding_window | infllm | em_llm (S) | em_llm_sm | em_llm_c | em_llm_smc
    # | fixed_segmentation (the segmentation analysis's evenly spaced control)
    methods: list[str] = field(
        default_factory=lambda: [
            "full",
            "sliding_window",
            "infllm",
            "em_llm",
            "em_llm_sm",
            "fixed_segmentation",
        ]
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1])
    infllm_block: int = 8  # InfLLM's fixed event size (official 128)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    real: RealConfig = field(default_factory=RealConfig)
    loop: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def validate(self) -> None:
        super().validate()
        e = self.eval
        require_at_least("eval.n_documents", e.n_documents, 1)
        require_at_least("eval.segmentation_documents", e.segmentation_documents, 1)
        require(
            bool(e.budgets), "eval.budgets", e.budgets, "name at least one n_mem (-1: unlimited)"
        )
        require(
            all(b == -1 or b >= 1 for b in e.budgets),
            "eval.budgets",
            e.budgets,
            "each n_mem must be >= 1, or -1 for unlimited",
        )
        require(
            len(set(e.budgets)) == len(e.budgets), "eval.budgets", e.budgets, "lists a budget twice"
        )
        require(
            -1 in e.budgets,
            "eval.budgets",
            e.budgets,
            "must include -1 (unlimited): the segmentation and the plotted surprise trace read "
            "the unlimited run",
        )
        require_at_least("eval.plot_document", e.plot_document, 0)  # case 4: it indexes the set
        require_at_most(
            "eval.plot_document",
            e.plot_document,
            e.n_documents - 1,
            f"eval.n_documents - 1 ({e.n_documents - 1})",
        )
        require_choice("eval.refine_metric", e.refine_metric, ("modularity", "conductance"))
