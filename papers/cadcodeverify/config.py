"""Typed config of the CADCodeVerify experiment (schema for configs/cadcodeverify/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig


@dataclass
class RefineConfig:
    """The verify-and-refine loop (paper Sec. 3, brief Sec. 3.1)."""

    rounds: int = 2  # M (paper: Refine-1 and Refine-2)
    max_repair: int = 3  # N (unstated in the paper; brief default)
    feedback_on_unclear: bool = False  # paper: only "No" answers drive edits
    random_p_no: float = 0.3  # random-answer control: "No" with this probability


@dataclass
class ToyConfig:
    """The toy world and the stylised model (brief Sec. 5)."""

    n_prompts: int = 200  # ground-truth items per seed
    cells_long: int = 40  # occupancy-grid cells along the longest extent
    n_points: int = 1024  # surface points per solid
    sampler_seed: int = 0  # one sampler seed for generated and ground truth (equal -> D = 0)
    # Stylised generator errors
    p_kind: float = 0.15
    p_dim: float = 0.25
    p_drop: float = 0.25
    p_syntax: float = 0.05
    # Stylised answerer
    epsilon: float = 0.1  # each Yes/No flipped with this probability
    box_fill: float = 0.89
    boss_narrowing: float = 0.97
    yes_tolerance: float = 0.15
    unclear_tolerance: float = 0.25
    max_questions: int = 5
    # RNG streams: seed + offset for the generator, the refiner and the answer noise
    generator_offset: int = 1000
    refiner_offset: int = 2000
    answer_offset: int = 3000


@dataclass
class ChatConfig:
    """One chat backend (brief Sec. 3.5): ``openai`` (compatible endpoint) or ``hf`` (local)."""

    backend: str = "openai"  # openai | hf
    base_url: str | None = None  # openai: e.g. https://api.openai.com/v1 or a vLLM server
    model: str = ""  # openai: the model name
    api_key_env: str | None = "OPENAI_API_KEY"  # the variable holding the key (never the key)
    timeout_s: float = 120.0
    model_dir: str | None = None  # hf: a local folder (local_files_only, nothing downloaded)
    device: str = "cpu"
    temperature: float = 0.0
    max_tokens: int = 2048


@dataclass
class SandboxConfig:
    """The sandbox that runs model-written CadQuery (brief Sec. 3.4; README "Security").
    Field names match ``sandbox.SandboxLimits``: ``SandboxLimits(**asdict(cfg))``."""

    timeout_s: float = 60.0  # wall clock; the whole sandbox is killed
    cpu_s: int = 60  # RLIMIT_CPU
    memory_mb: int = 4096  # RLIMIT_AS, per process
    file_mb: int = 256  # RLIMIT_FSIZE
    disk_mb: int = 256  # the working folder and /tmp together: a size-limited tmpfs (bwrap)
    use_bwrap: bool = True  # false: run unconfined (only with unsafe_allow_unconfined=true)
    max_processes: int = 64  # RLIMIT_NPROC: processes plus threads, as an unprivileged uid
    # UNSAFE: where bubblewrap cannot confine the program, run it anyway with resource limits
    # only (network and host files reachable); warns on every run. Default: refuse to run.
    unsafe_allow_unconfined: bool = False


@dataclass
class CADPromptConfig:
    """Paper scale (brief Sec. 6): CADPrompt from a local clone, models, sandbox, renders."""

    cadprompt_dir: str | None = None  # local clone of Kamel773/CAD_Code_Generation
    max_items: int = 0  # 0: all 200 items
    codegen: str = "few_shot"  # few_shot | zero_shot
    n_examples: int = 3  # k few-shot (prompt, code) pairs drawn from the other items
    qa_examples: str = "few_shot"  # few_shot | zero_shot question generation
    views: list[float] = field(default_factory=lambda: [0.0, 90.0, 180.0, 270.0])
    elevation: float = 30.0
    image_size: int = 512
    n_points: int = 2048
    icp: bool = True
    icp_iterations: int = 50
    output_name: str = "output.stl"
    generator: ChatConfig = field(default_factory=ChatConfig)
    separate_verifier: bool = False  # true: answer questions with `verifier` (code-only LLMs)
    verifier: ChatConfig = field(default_factory=ChatConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@dataclass
class MetricConfig:
    """Failure penalty and success bar (paper Sec. 5.2; brief Sec. 3.3 and 5)."""

    fail_distance: float = 1.7320508  # sqrt(3), the unit-cube diagonal
    fail_iogt: float = 0.0
    success_distance: float = 0.01


@dataclass
class Config(ExperimentConfig):
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
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    benchmark: str = "toy"  # toy | cadprompt
    refine: RefineConfig = field(default_factory=RefineConfig)
    toy: ToyConfig = field(default_factory=ToyConfig)
    cadprompt: CADPromptConfig = field(default_factory=CADPromptConfig)
    metric: MetricConfig = field(default_factory=MetricConfig)
    plot_seed: int = 0  # the seed whose first prompts the figure shows
    plot_items: int = 3  # prompts shown in the figure
