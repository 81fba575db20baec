"""Typed config of T2V-Turbo-v2 (schema for configs/t2v_turbo_v2/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import ExperimentConfig


@dataclass
class DataConfig:
    """1-D sprite videos (brief Sec. 5) or, at paper scale, pre-computed latent records."""

    kind: str = "sprites1d"  # sprites1d | sprites2d (selectable, not the default)
    frames: int = 8  # T
    length: int = 32  # L pixels per frame (S for the 2-D variant)
    speed: float = 2.0  # px/frame for moving clips
    n_train: int = 6000
    n_heldout: int = 1500
    long_caption_fraction: float = 0.5  # dense-caption stand-in: CD only, no RM loss
    n_distractors: int = 12  # distractor-token vocabulary of long captions
    train_seed: int = 0
    heldout_seed: int = 1
    root: str | None = None  # paper scale: folder with records/ (Algorithm 1 output)


@dataclass
class ScheduleConfig:
    """Discrete DDPM schedule and DDIM solver grid (Sec. 3, 3.1)."""

    num_train_timesteps: int = 1000
    beta_start: float = 0.00085
    beta_end: float = 0.012
    beta_schedule: str = "scaled_linear"
    solver_steps: int = 200  # N; the skip is one grid step = 1000 / N raw timesteps


@dataclass
class NetConfig:
    """Toy space-time teacher UNet (brief Sec. 5); the student adds the condition projection."""

    width: int = 24
    text_dim: int = 64
    heads: int = 2
    groups: int = 8
    cond_embed_dim: int = 256  # time_cond_proj_dim = motion_cond_proj_dim = 256 (Sec. 3.4)
    use_motion_cond: bool = True
    # NHWC weights: oneDNN's 3x3 convolutions (most of a step) run ~20 % faster on CPU.
    channels_last: bool = True


@dataclass
class PrepareConfig:
    """Run A/B of the brief: teacher, reward models and evaluation classifier (cached)."""

    assets_dir: str = "papers/t2v_turbo_v2/assets"  # committed safetensors + manifest.json
    work_dir: str = "outputs/t2v_turbo_v2/prepare"  # resumable checkpoints of the teacher run
    seed: int = 12345
    teacher_steps: int = 16000
    teacher_batch: int = 32
    teacher_lr: float = 5e-4
    teacher_ema: float = 0.999
    caption_dropout: float = 0.1
    chunk_steps: int = 500  # one resumable chunk (<= 90 s on a contended core)
    rm_steps: int = 4000
    rm_batch: int = 64
    rm_lr: float = 1e-3
    rm_noise: float = 0.1  # Gaussian input noise while training the classifiers (robustness)
    rm_width: int = 16  # image RM and video RM width
    eval_width: int = 24  # the evaluation classifier differs in width, input frames and seed
    eval_pool: str = "max"


@dataclass
class PreprocessConfig:
    """Algorithm 1 (Sec. 3.5): records with teacher outputs and motion-energy gradients."""

    n_motion: int = 1000  # moving sprites, short captions, indices in [N(1-p_max), N)
    n_other: int = 2000  # all clips, indices in [0, N(1-p_max))
    p_max: float = 0.5
    batch: int = 100
    seed: int = 7


@dataclass
class MethodConfig:
    """Consistency distillation with reward feedback and motion guidance (Sec. 3.2-3.4)."""

    w_min: float = 5.0  # CFG weight range, LCM convention (Sec. 3.2)
    w_max: float = 15.0
    huber_c: float = 0.001
    loss_type: str = "huber"  # huber | l2
    sigma_data: float = 0.5
    timestep_scaling: float = 10.0
    reward_scale: float = 0.2  # image-text RM weight
    video_reward_scale: float = 0.5  # video-text RM weight
    reward_frames: int = 2  # frames of pred scored by the image RM
    video_frames: int = 4  # strided frames scored by the video RM
    reward_batch: int = 1  # short-caption samples scored per step (paper: 1 per process)
    percentage: float = 0.5  # p: motion guidance on the noisiest p of the grid
    motion_gs: float = 0.05  # lambda_m
    temp_loss_scale: float = 100.0
    rank_k: int = 1  # top-1 mask of the reference attention
    use_target_ema: bool = False  # v2 default: the online student under no-grad
    target_ema_decay: float = 0.95


@dataclass
class StudentConfig:
    """Algorithm 2 optimiser (Sec. 3.5)."""

    steps: int = 8000
    batch: int = 24
    lr: float = 1e-5
    beta1: float = 0.9
    beta2: float = 0.999
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    grad_clip: float = 1.0
    checkpoint_every: int = 250


@dataclass
class EvalConfig:
    """Sampling and metrics (Sec. 3.6; brief Sec. 5 metrics)."""

    lcm_steps: int = 16
    guidance: float = 7.5  # w fed to the student's guidance embedding (and teacher CFG)
    p_inf: float = 0.3  # motion embedding on while t >= 1000 (1 - p_inf)
    samples_per_prompt: int = 20
    teacher_ddim_steps: list[int] = field(default_factory=lambda: [50, 4])
    dead_zone: float = 0.5  # px/frame: |slope| below this reads as static
    strip_prompts: int = 6  # columns of the PNG strip
    batch: int = 270
    seed: int = 999


@dataclass
class PaperScaleConfig:
    """Paper scale: local diffusers UNet3D teacher folder and pre-computed records."""

    teacher_dir: str | None = None  # diffusers UNet3DConditionModel folder (ModelScope layout)
    text_dim: int = 1024  # cross-attention dim of the text encoder's hidden states
    reward_models: list[str] = field(
        default_factory=lambda: ["hpsv2.1", "clip-vit-h-14", "internvideo2"]
    )


@dataclass
class Config(ExperimentConfig):
    # cd (VCM), cd_rm (+ image and video RMs), cd_rm_mg (+ motion-guided teacher target)
    methods: list[str] = field(default_factory=lambda: ["cd", "cd_rm", "cd_rm_mg"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    data: DataConfig = field(default_factory=DataConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    net: NetConfig = field(default_factory=NetConfig)
    prepare: PrepareConfig = field(default_factory=PrepareConfig)
    preprocess: PreprocessConfig = field(default_factory=PreprocessConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    student: StudentConfig = field(default_factory=StudentConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    paper_scale: PaperScaleConfig = field(default_factory=PaperScaleConfig)
    sanity_steps: int = 20  # steps of each run of the claim-4 triple (method "gs0_check")
