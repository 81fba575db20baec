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
    checked,
    require,
    require_at_most,
)

REFINE_METRICS = ("modularity", "conductance")  # the "M" variant's graph metric (Sec. 3.3)
GLOBAL_POSITIONS = ("one_angle", "true")  # memory.LayerMemory's two position schemes
DTYPES = ("float32", "bfloat16", "float16")  # the keys of model.DTYPES (a test checks them)
MIN_PASSKEY_TOKENS = 64  # real.py's check_real: shortest real pass-key document
# data.py's record stream: PAD, BOS, QRY, SEP and PK, then the key, pass-key and filler tokens
SPECIAL_TOKENS = 5


@dataclass
class MemoryConfig:
    """The episodic memory wrapped around every attention layer (brief Sec. 3)."""

    chunk: int = checked(8, ge=1)  # c: tokens per execution block (official 512)
    n_init: int = checked(4, ge=0)  # initial tokens kept forever (official 128)
    n_local: int = checked(32, ge=1)  # sliding local window (official 4096)
    # retrieved-token budget per layer; -1 = retrieve every stored event
    n_mem: int = checked(64, ge=-1)
    repr_topk: int = checked(4, ge=1)  # tokens averaged into an event's representative key
    min_block: int = checked(4, ge=1)  # shortest event (official 8)
    max_block: int = checked(16, ge=1)  # longest event (official 128)
    # surprise threshold mu + gamma * sigma (Sec. 3.2)
    gamma: float = checked(1.0, free="any real shifts the threshold mu + gamma * sigma")
    # tau: past surprise values in the threshold statistics
    threshold_window: int = checked(32, ge=2)
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
    # None | modularity | conductance (the "M" variant, Sec. 3.3)
    refine: str | None = checked(None, choices=REFINE_METRICS)
    refine_from_layer: int = checked(0, ge=0)  # A = sum over layers >= this (official 20 of 32)
    refine_with_buffer: bool = True  # prefix the chunk with the tail after its last boundary
    contiguity: bool = False  # the "+C" contiguity buffer (Sec. 3.5)
    contiguity_share: float = checked(0.3, ge=0, lt=1)  # its share of n_mem
    # one_angle (InfLLM) | true (tests: exact attention)
    global_positions: str = checked("one_angle", choices=GLOBAL_POSITIONS)
    # longest document accepted (a longer one fails, naming it)
    max_tokens: int = checked(100_000, ge=1)
    # true: the toy's summation order (padded to the full width, bit-identical to the full
    # computation, results/toy.json reproduces); false: the fast path (real rung) that computes
    # only the columns a query sees, per KV head, and surprise in float32
    exact_order: bool = True


@dataclass
class ModelConfig:
    """The base LM: a local checkpoint folder (paper) or a tiny Llama the toy trains."""

    path: str | None = None  # paper: local Mistral / Llama folder (from_pretrained)
    dtype: str = checked("float32", choices=DTYPES)  # float32 | bfloat16 | float16
    vocab_size: int = checked(101, ge=1)
    hidden_size: int = checked(64, ge=1)
    intermediate_size: int = checked(256, ge=1)
    num_hidden_layers: int = checked(2, ge=1)
    num_attention_heads: int = checked(4, ge=1)
    num_key_value_heads: int = checked(4, ge=1, le_key="model.num_attention_heads")
    rope_theta: float = checked(10000.0, gt=0)
    max_position_embeddings: int = checked(128, ge=1)  # the toy trains on <= ~76 tokens


@dataclass
class TrainConfig:
    """Next-token training of the toy LM on short record streams (brief Sec. 5)."""

    steps: int = checked(1500, ge=1)
    batch_size: int = checked(32, ge=1)
    lr: float = checked(3e-3, gt=0)
    weight_decay: float = checked(0.01, ge=0)
    warmup_steps: int = checked(100, ge=0)  # may exceed steps: the lr then stays in warm-up


@dataclass
class StreamConfig:
    """The synthetic record stream (brief Sec. 5)."""

    n_keys: int = checked(64, ge=1)
    n_passkeys: int = checked(16, ge=1)
    n_fillers: int = checked(16, ge=1)
    min_repeat: int = checked(4, ge=1)  # filler repeats per record
    max_repeat: int = checked(10, ge=1)
    train_min_records: int = checked(3, ge=1)
    train_max_records: int = checked(6, ge=1)
    test_records: int = checked(40, ge=1)
    test_seed_offset: int = checked(777, ge=0)  # test documents come from random.Random(777 + seed)

    def vocabulary_size(self) -> int:
        """Tokens of the record stream: the special ones, then keys, pass keys and fillers."""
        return SPECIAL_TOKENS + self.n_keys + self.n_passkeys + self.n_fillers


@dataclass
class EvalConfig:
    """Pass-key retrieval and the segmentation analysis (brief Sec. 5)."""

    n_documents: int = checked(60, ge=1)
    budgets: list[int] = checked(factory=lambda: [64, -1], ge=-1)  # n_mem; -1 = unlimited
    segmentation_documents: int = checked(20, ge=1, le_key="eval.n_documents")
    # +- tokens for a detected boundary to match a record start
    boundary_tolerance: int = checked(1, ge=0)
    refine_min_block: int = checked(4, ge=1)  # min block of the offline refinement (SM)
    refine_metric: str = checked("modularity", choices=REFINE_METRICS)  # modularity | conductance
    variant_passkey: bool = False  # also score pass-key accuracy of the SM variant online
    # the test document whose surprise trace is plotted
    plot_document: int = checked(0, ge=0, lt_key="eval.n_documents")


@dataclass
class BenchmarkConfig:
    """Paper scale: LongBench / InfiniteBench jsonl files and the extended passkey."""

    root: str | None = None  # folder with <task>.jsonl files (LongBench / InfiniteBench)
    tasks: list[str] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)  # official prompt per task
    max_lengths: dict[str, int] = checked(factory=dict, ge=1)  # truncation (tokens) per task
    max_new_tokens: dict[str, int] = checked(factory=dict, ge=1)
    max_examples: int = checked(-1, ge=-1)  # -1 = all examples of a task
    passkey_lengths: list[int] = checked(factory=list, ge=1)  # extended passkey, in tokens
    passkey_trials: int = checked(5, ge=1)


@dataclass
class RealConfig:
    """scale=real: the pretrained SmolLM2-135M (shared.pretrained, 8,192-token window) on the
    extended pass-key and on the docutils test documents' segmentation."""

    # metric name -> document length (tokens): the memory methods' and full attention's
    passkey_lengths: dict[str, int] = checked(
        factory=lambda: {"passkey_16k": 16384, "passkey_32k": 32768}, ge=MIN_PASSKEY_TOKENS
    )
    full_lengths: dict[str, int] = checked(
        factory=lambda: {"passkey_4k": 4096, "passkey_8k": 8192}, ge=MIN_PASSKEY_TOKENS
    )
    documents: int = checked(5, ge=1)  # pass-key documents per length
    # the needle's relative depth is uniform in [min_depth, max_depth]
    min_depth: float = checked(0.1, ge=0, le=1)
    max_depth: float = checked(0.9, ge=0, le=1)
    # greedy answer length (" " + 5 digits for SmolLM2's digit tokens)
    new_tokens: int = checked(7, ge=1)
    # test documents for the segmentation (-1 = all)
    segmentation_documents: int = checked(-1, ge=-1)
    segmentation_tokens: int = checked(4096, ge=1)  # each one's first tokens are read
    # forked workers reading documents at once (one thread each; the 2 cores): the
    # numbers do not depend on it, and the run's CPU time counts every worker
    processes: int = checked(1, ge=1)
    # a folder of your own UTF-8 .txt files, segmented in place of the docutils test documents
    # (None: those); with model.path, your own Llama-family checkpoint reads them
    corpus_path: str | None = None


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
    seeds: list[int] = checked(factory=lambda: [0, 1], ge=0)
    infllm_block: int = checked(8, ge=1)  # InfLLM's fixed event size (official 128)
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
        m, e = self.memory, self.eval
        # method.form_events: events of min_block..max_block tokens
        require_at_most(
            "memory.min_block", m.min_block, m.max_block, f"memory.max_block ({m.max_block})"
        )
        # data.make_document: randint(min, max)
        s = self.stream
        require_at_most(
            "stream.min_repeat", s.min_repeat, s.max_repeat, f"stream.max_repeat ({s.max_repeat})"
        )
        require_at_most(
            "stream.train_min_records",
            s.train_min_records,
            s.train_max_records,
            f"stream.train_max_records ({s.train_max_records})",
        )
        # real.passkey_documents: the needle's depth is uniform in [min_depth, max_depth]
        r = self.real
        require_at_most(
            "real.min_depth", r.min_depth, r.max_depth, f"real.max_depth ({r.max_depth})"
        )
        # smoke / toy read with the LM they train from model.* (paper and real: a checkpoint's)
        if self.model.path is None and self.scale in ("smoke", "toy"):
            layers = self.model.num_hidden_layers
            require(
                m.refine_from_layer < layers,
                "memory.refine_from_layer",
                m.refine_from_layer,
                f"must be < model.num_hidden_layers ({layers}): the toy LM's layers",
            )
        # the toy LM trained on the record stream embeds exactly its tokens (train.train_lm)
        if self.model.path is None and self.scale in ("smoke", "toy"):
            tokens = s.vocabulary_size()
            require(
                self.model.vocab_size == tokens,
                "stream.n_keys",
                s.n_keys,
                f"with stream.n_passkeys ({s.n_passkeys}), stream.n_fillers ({s.n_fillers}) "
                f"and {SPECIAL_TOKENS} special tokens the record stream has {tokens} tokens, but "
                f"model.vocab_size={self.model.vocab_size}: set model.vocab_size={tokens}",
            )
        # -1 means all / unlimited; 0 would read nothing (NaN scores, no segmentation)
        nothing = "0 reads nothing (-1: unlimited)"
        require(0 not in e.budgets, "eval.budgets", e.budgets, nothing)
        require(self.benchmark.max_examples != 0, "benchmark.max_examples", 0, nothing)
        require(r.segmentation_documents != 0, "real.segmentation_documents", 0, nothing)
        require(
            bool(e.budgets), "eval.budgets", e.budgets, "name at least one n_mem (-1: unlimited)"
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
