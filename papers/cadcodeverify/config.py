"""Typed config of the CADCodeVerify experiment (schema for configs/cadcodeverify/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig, ReadOnlyWhere, checked, require

BENCHMARKS = ("toy", "cadprompt")
CHAT_BACKENDS = ("openai", "hf")  # backends.make_chat
EXAMPLE_MODES = ("few_shot", "zero_shot")  # code generation and question generation


@dataclass
class RefineConfig:
    """The verify-and-refine loop (paper Sec. 3, brief Sec. 3.1)."""

    rounds: int = checked(2, ge=0)  # M (paper: Refine-1 and Refine-2)
    max_repair: int = checked(3, ge=0)  # N (unstated in the paper; brief default)
    feedback_on_unclear: bool = False  # paper: only "No" answers drive edits
    # random-answer control: "No" with this probability
    random_p_no: float = checked(0.3, ge=0, le=1)


@dataclass
class ToyConfig:
    """The toy world and the stylised model (brief Sec. 5)."""

    n_prompts: int = checked(200, ge=1)  # ground-truth items per seed
    cells_long: int = checked(40, ge=2)  # occupancy-grid cells along the longest extent
    n_points: int = checked(1024, ge=1)  # surface points per solid
    # one sampler seed for generated and ground truth (equal -> D = 0)
    sampler_seed: int = checked(0, ge=0)
    # Stylised generator errors
    p_kind: float = checked(0.15, ge=0, le=1)
    p_dim: float = checked(0.25, ge=0, le=1)
    p_drop: float = checked(0.25, ge=0, le=1)
    p_syntax: float = checked(0.05, ge=0, le=1)
    # Stylised answerer
    epsilon: float = checked(0.1, ge=0, le=1)  # each Yes/No flipped with this probability
    box_fill: float = checked(0.89, ge=0, le=1)  # a fill ratio of the top mask
    boss_narrowing: float = checked(0.97, gt=0, le=1)  # top row / bottom row width
    yes_tolerance: float = checked(0.15, ge=0)  # relative error of a ratio
    unclear_tolerance: float = checked(0.25, ge=0)
    max_questions: int = checked(5, ge=1)
    # RNG streams: seed + offset for the generator, the refiner and the answer noise
    generator_offset: int = checked(1000, ge=0)  # seed + offset seeds numpy: >= 0
    refiner_offset: int = checked(2000, ge=0)
    answer_offset: int = checked(3000, ge=0)


@dataclass
class ChatConfig:
    """One chat backend (brief Sec. 3.5): ``openai`` (compatible endpoint) or ``hf`` (local)."""

    backend: str = checked("openai", choices=CHAT_BACKENDS)  # openai | hf
    base_url: str | None = None  # openai: e.g. https://api.openai.com/v1 or a vLLM server
    model: str = ""  # openai: the model name
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable holding the key (never the key)
    timeout_s: float = checked(120.0, gt=0)
    model_dir: str | None = None  # hf: a local folder (local_files_only, nothing downloaded)
    device: str = "cpu"
    temperature: float = checked(0.0, ge=0)  # 0: greedy
    max_tokens: int = checked(2048, ge=1)


@dataclass
class SandboxConfig:
    """The sandbox that runs model-written CadQuery (brief Sec. 3.4; README "Security").
    Field names match ``sandbox.SandboxLimits``: ``SandboxLimits(**asdict(cfg))``."""

    timeout_s: float = checked(60.0, gt=0)  # wall clock; the whole sandbox is killed
    cpu_s: int = checked(60, ge=1)  # RLIMIT_CPU
    memory_mb: int = checked(4096, ge=1)  # RLIMIT_AS, per process
    file_mb: int = checked(256, ge=1)  # RLIMIT_FSIZE
    # the working folder and /tmp together: a size-limited tmpfs (bwrap)
    disk_mb: int = checked(256, ge=1)
    use_bwrap: bool = True  # false: run unconfined (only with unsafe_allow_unconfined=true)
    # RLIMIT_NPROC: processes plus threads, as an unprivileged uid
    max_processes: int = checked(64, ge=1)
    # UNSAFE: where bubblewrap cannot confine the program, run it anyway with resource limits
    # only (network and host files reachable); warns on every run. Default: refuse to run.
    unsafe_allow_unconfined: bool = False


@dataclass
class CADPromptConfig:
    """Paper scale (brief Sec. 6): CADPrompt from a local clone, models, sandbox, renders."""

    cadprompt_dir: str | None = None  # local clone of Kamel773/CAD_Code_Generation
    max_items: int = checked(0, ge=0)  # 0: all 200 items
    codegen: str = checked("few_shot", choices=EXAMPLE_MODES)  # few_shot | zero_shot
    n_examples: int = checked(3, ge=0)  # k few-shot (prompt, code) pairs drawn from the other items
    # few_shot | zero_shot question generation
    qa_examples: str = checked("few_shot", choices=EXAMPLE_MODES)
    # camera azimuths in degrees, one rendered view each
    views: list[float] = checked(
        factory=lambda: [0.0, 90.0, 180.0, 270.0], free="an angle: any real azimuth is a view"
    )
    elevation: float = checked(30.0, free="an angle: any real elevation is a view")
    image_size: int = checked(512, ge=1)
    n_points: int = checked(2048, ge=1)
    icp: bool = True
    icp_iterations: int = checked(50, ge=0)  # 0: no ICP step
    output_name: str = "output.stl"
    generator: ChatConfig = field(default_factory=ChatConfig)
    separate_verifier: bool = False  # true: answer questions with `verifier` (code-only LLMs)
    verifier: ChatConfig = field(default_factory=ChatConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@dataclass
class MetricConfig:
    """Failure penalty and success bar (paper Sec. 5.2; brief Sec. 3.3 and 5)."""

    fail_distance: float = checked(1.7320508, gt=0)  # sqrt(3), the unit-cube diagonal
    fail_iogt: float = checked(0.0, ge=0, le=1)
    # a failed item (D = fail_distance) must not count as a success
    success_distance: float = checked(0.01, gt=0, le_key="metric.fail_distance")


@dataclass
class Config(ExperimentConfig):
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = (
        "numpy geometry and a chat model behind an API; a local hf model's device is "
        "cadprompt.generator.device / cadprompt.verifier.device"
    )
    # the CADPrompt benchmark's keys (benchmark=cadprompt, scale=paper)
    READ_ONLY_WHERE = (
        ReadOnlyWhere(
            keys=("cadprompt",),
            where="benchmark=cadprompt (scale=paper)",
            reads=lambda _, root: root.benchmark == "cadprompt",
        ),
    )
    # generated (no feedback), cadcodeverify, premise3d (3D-Premise-style), random_answer
    # (negative control), geometric_solver (upper reference: uses the ground truth)
    methods: list[str] = field(
        default_factory=lambda: [
            "generated",
            "cadcodeverify",
            "premise3d",
            "random_answer",
            "geometric_solver",
        ]
    )
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    benchmark: str = checked("toy", choices=BENCHMARKS)  # toy | cadprompt
    refine: RefineConfig = field(default_factory=RefineConfig)
    toy: ToyConfig = field(default_factory=ToyConfig)
    cadprompt: CADPromptConfig = field(default_factory=CADPromptConfig)
    metric: MetricConfig = field(default_factory=MetricConfig)
    # the seed whose first prompts the figure shows (not among seeds, e.g. the held-out ones:
    # the figure has no example rows)
    plot_seed: int = checked(0, ge=0)
    plot_items: int = checked(3, ge=0)  # prompts shown in the figure

    def validate(self) -> None:
        super().validate()
        if self.benchmark == "cadprompt":
            c = self.cadprompt
            # the answerer sees these renders; premise3d shows the model the first one
            require(bool(c.views), "cadprompt.views", c.views, "name at least one azimuth")
            require(
                c.sandbox.use_bwrap or c.sandbox.unsafe_allow_unconfined,
                "cadprompt.sandbox.use_bwrap",
                c.sandbox.use_bwrap,
                "false runs model-written code unconfined: set "
                "cadprompt.sandbox.unsafe_allow_unconfined=true as well, or use bubblewrap",
            )
