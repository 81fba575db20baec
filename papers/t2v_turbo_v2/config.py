"""Typed config of T2V-Turbo-v2 (schema for configs/t2v_turbo_v2/*.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import (
    ExperimentConfig,
    checked,
    require,
    require_choices,
    require_divides,
    require_multiple,
)

# data.kind: pixel sprites (the toy) or pre-computed latent records (paper scale, data.root)
SPRITE_KINDS = ("sprites1d", "sprites2d")
DATA_KINDS = (*SPRITE_KINDS, "latents")
PAPER_SCALE = "paper"  # the scale whose run is paper_scale.run_paper (train.run dispatches on it)
BETA_SCHEDULES = ("linear", "scaled_linear", "squaredcos_cap_v2")  # diffusers' DDIMScheduler
POOLS = ("avg", "max")  # ClipClassifier's pooling
LOSS_TYPES = ("huber", "l2")  # method.cd_loss
# the toy's methods (train.py): the students; claim 4's check (cd_rm, and cd_rm_mg at motion_gs
# = 0 and at the configured one, trained sanity_steps each from one seed; nothing is sampled);
# teacher_ddim<k>, the teacher sampled with k DDIM steps for each k of eval.teacher_ddim_steps
STUDENTS = ("cd", "cd_rm", "cd_rm_mg")
GS0_CHECK = "gs0_check"
TEACHER_PREFIX = "teacher_ddim"


@dataclass
class DataConfig:
    """1-D sprite videos (brief Sec. 5) or, at paper scale, pre-computed latent records."""

    # sprites1d | sprites2d (selectable, with models prepared for it: the committed ones are
    # sprites1d's) | latents (paper scale)
    kind: str = checked("sprites1d", choices=DATA_KINDS)
    frames: int = checked(8, ge=2)  # T (the direction metric fits a slope over the frames)
    length: int = checked(32, ge=1)  # L pixels per frame (S for the 2-D variant)
    speed: float = checked(2.0, gt=0)  # px/frame for moving clips
    n_train: int = checked(6000, ge=1)
    n_heldout: int = checked(1500, ge=2)  # the FD's covariance needs two clips
    # dense-caption stand-in: CD only, no RM loss
    long_caption_fraction: float = checked(0.5, ge=0, le=1)
    n_distractors: int = checked(12, ge=1)  # distractor-token vocabulary of long captions
    train_seed: int = checked(0, ge=0)
    heldout_seed: int = checked(1, ge=0)
    root: str | None = None  # paper scale: folder with records/ (Algorithm 1 output)


@dataclass
class ScheduleConfig:
    """Discrete DDPM schedule and DDIM solver grid (Sec. 3, 3.1)."""

    num_train_timesteps: int = checked(1000, ge=1)
    beta_start: float = checked(0.00085, gt=0, lt=1)
    beta_end: float = checked(0.012, gt=0, lt=1)
    beta_schedule: str = checked("scaled_linear", choices=BETA_SCHEDULES)
    # N; the skip is one grid step = 1000 / N raw timesteps
    solver_steps: int = checked(200, ge=1, le_key="schedule.num_train_timesteps")


@dataclass
class NetConfig:
    """Toy space-time teacher UNet (brief Sec. 5); the student adds the condition projection."""

    width: int = checked(24, ge=1)
    text_dim: int = checked(64, ge=1)
    heads: int = checked(2, ge=1)
    groups: int = checked(8, ge=1)
    # time_cond_proj_dim = motion_cond_proj_dim = 256 (Sec. 3.4)
    cond_embed_dim: int = checked(256, ge=4)
    use_motion_cond: bool = True
    # NHWC weights: oneDNN's 3x3 convolutions (most of a step) run ~20 % faster on CPU.
    channels_last: bool = True


@dataclass
class PrepareConfig:
    """Run A/B of the brief: teacher, reward models and evaluation classifier (cached)."""

    assets_dir: str = "papers/t2v_turbo_v2/assets"  # committed safetensors + manifest.json
    work_dir: str = "outputs/t2v_turbo_v2/prepare"  # resumable checkpoints of the teacher run
    seed: int = checked(12345, ge=0)
    teacher_steps: int = checked(16000, ge=1)
    teacher_batch: int = checked(32, ge=1)
    teacher_lr: float = checked(5e-4, gt=0)
    teacher_ema: float = checked(0.999, ge=0, lt=1)  # 1 would save the untrained init
    caption_dropout: float = checked(0.1, ge=0, le=1)
    chunk_steps: int = checked(500, ge=1)  # one resumable chunk (<= 90 s on a contended core)
    rm_steps: int = checked(4000, ge=1)
    rm_batch: int = checked(64, ge=1)
    rm_lr: float = checked(1e-3, gt=0)
    # Gaussian input noise while training the classifiers (robustness)
    rm_noise: float = checked(0.1, ge=0)
    rm_width: int = checked(16, ge=1)  # image RM and video RM width
    # the evaluation classifier differs in width, input frames and seed
    eval_width: int = checked(24, ge=1)
    eval_pool: str = checked("max", choices=POOLS)


@dataclass
class PreprocessConfig:
    """Algorithm 1 (Sec. 3.5): records with teacher outputs and motion-energy gradients."""

    # moving sprites, short captions, indices in [N(1-p_max), N)
    n_motion: int = checked(1000, ge=0)
    n_other: int = checked(2000, ge=0)  # all clips, indices in [0, N(1-p_max))
    p_max: float = checked(0.5, gt=0, lt=1)
    batch: int = checked(100, ge=1)
    seed: int = checked(7, ge=0)


@dataclass
class MethodConfig:
    """Consistency distillation with reward feedback and motion guidance (Sec. 3.2-3.4)."""

    # CFG weight range, LCM convention (Sec. 3.2)
    w_min: float = checked(5.0, ge=0)
    w_max: float = checked(15.0, ge=0)
    huber_c: float = checked(0.001, gt=0)
    loss_type: str = checked("huber", choices=LOSS_TYPES)
    sigma_data: float = checked(0.5, gt=0)
    timestep_scaling: float = checked(10.0, gt=0)
    reward_scale: float = checked(0.2, ge=0)  # image-text RM weight
    video_reward_scale: float = checked(0.5, ge=0)  # video-text RM weight
    # frames of pred scored by the image RM
    reward_frames: int = checked(2, ge=1, le_key="data.frames")
    # strided frames scored by the video RM
    video_frames: int = checked(4, ge=1, le_key="data.frames")
    # short-caption samples scored per step (paper: 1 per process)
    reward_batch: int = checked(1, ge=1)
    percentage: float = checked(0.5, ge=0, le=1)  # p: motion guidance on the noisiest p of the grid
    motion_gs: float = checked(0.05, ge=0)  # lambda_m
    temp_loss_scale: float = checked(100.0, ge=0)
    rank_k: int = checked(1, ge=1, le_key="data.frames")  # top-1 mask of the reference attention
    use_target_ema: bool = False  # v2 default: the online student under no-grad
    target_ema_decay: float = checked(0.95, ge=0, le=1)


@dataclass
class StudentConfig:
    """Algorithm 2 optimiser (Sec. 3.5)."""

    steps: int = checked(8000, ge=1)
    batch: int = checked(24, ge=1)
    lr: float = checked(1e-5, gt=0)
    beta1: float = checked(0.9, ge=0, lt=1)
    beta2: float = checked(0.999, ge=0, lt=1)
    weight_decay: float = checked(0.0, ge=0)
    adam_eps: float = checked(1e-8, gt=0)
    grad_clip: float = checked(1.0, gt=0)  # max global grad norm
    checkpoint_every: int = checked(250, ge=1)  # (the last step always saves)


@dataclass
class EvalConfig:
    """Sampling and metrics (Sec. 3.6; brief Sec. 5 metrics)."""

    lcm_steps: int = checked(16, ge=1)
    # w fed to the student's guidance embedding (and teacher CFG)
    guidance: float = checked(7.5, ge=0)
    p_inf: float = checked(0.3, ge=0, le=1)  # motion embedding on while t >= 1000 (1 - p_inf)
    samples_per_prompt: int = checked(20, ge=1)
    teacher_ddim_steps: list[int] = checked(
        factory=lambda: [50, 4], ge=1, le_key="schedule.num_train_timesteps"
    )
    # px/frame: |slope| below this reads as static
    dead_zone: float = checked(0.5, gt=0, lt_key="data.speed")
    strip_prompts: int = checked(6, ge=1)  # columns of the PNG strip
    batch: int = checked(270, ge=1)
    seed: int = checked(999, ge=0)


@dataclass
class PaperScaleConfig:
    """Paper scale: local diffusers UNet3D teacher folder and pre-computed records. The reward
    models (HPSv2.1, CLIP ViT-H-14, InternVideo2) are callables passed to
    ``paper_scale.run_paper``, not named here."""

    teacher_dir: str | None = None  # diffusers UNet3DConditionModel folder (ModelScope layout)
    text_dim: int = checked(1024, ge=1)  # cross-attention dim of the text encoder's hidden states


@dataclass
class Config(ExperimentConfig):
    # shared.config.ExperimentConfig.CPU_ONLY: runtime.device=cuda and mixed precision refused
    CPU_ONLY = "toy U-Nets trained on CPU tensors: nothing moves to a device"
    # cd (VCM), cd_rm (+ image and video RMs), cd_rm_mg (+ motion-guided teacher target)
    methods: list[str] = field(default_factory=lambda: ["cd", "cd_rm", "cd_rm_mg"])
    seeds: list[int] = checked(factory=lambda: [0, 1, 2], ge=0)
    data: DataConfig = field(default_factory=DataConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    net: NetConfig = field(default_factory=NetConfig)
    prepare: PrepareConfig = field(default_factory=PrepareConfig)
    preprocess: PreprocessConfig = field(default_factory=PreprocessConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    student: StudentConfig = field(default_factory=StudentConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    paper_scale: PaperScaleConfig = field(default_factory=PaperScaleConfig)
    # steps of each run of the claim-4 triple (method "gs0_check")
    sanity_steps: int = checked(20, ge=1)

    def validate(self) -> None:
        super().validate()
        s, n = self.schedule, self.net
        # SolverGrid.build: the DDIM grid's skip k = num_train_timesteps / solver_steps is whole
        require_divides(
            "schedule.solver_steps",
            s.solver_steps,
            s.num_train_timesteps,
            "schedule.num_train_timesteps",
        )
        # scalar_embedding: dim / 2 sine and dim / 2 cosine features feed a dim-wide projection
        require(n.cond_embed_dim % 2 == 0, "net.cond_embed_dim", n.cond_embed_dim, "must be even")
        # Algorithm 2 draws w ~ U[w_min, w_max]
        w_min, w_max = self.method.w_min, self.method.w_max
        require(w_min <= w_max, "method.w_min", w_min, f"must be <= method.w_max ({w_max})")
        if self.scale == PAPER_SCALE:
            return  # the UNet3D teacher and the records of data.root: none of the toy's keys
        # the toy's run (train.run): pixel sprites, the toy teacher, Algorithm 1, sampling
        require(
            self.data.kind in SPRITE_KINDS,
            "data.kind",
            self.data.kind,
            f"choose one of {', '.join(SPRITE_KINDS)} (latents are the paper scale's)",
        )
        # a teacher_ddim<k> method samples with k steps, one of eval.teacher_ddim_steps
        steps = self.eval.teacher_ddim_steps
        for name in self.methods:
            k = name.removeprefix(TEACHER_PREFIX)
            require(
                not (name.startswith(TEACHER_PREFIX) and k.isdigit()) or int(k) in steps,
                "eval.teacher_ddim_steps",
                steps,
                f"must list {k} for the method {name} (methods={self.methods})",
            )
        teachers = [f"{TEACHER_PREFIX}{k}" for k in steps]
        require_choices("methods", self.methods, [*teachers, *STUDENTS, GS0_CHECK])
        # SpaceTimeUNet: sinusoidal features of width dims, GroupNorm(groups, width) and
        # width / heads channels per attention head
        require(n.width % 2 == 0, "net.width", n.width, "must be even")
        require_multiple("net.width", n.width, n.groups, "net.groups")
        require_multiple("net.width", n.width, n.heads, "net.heads")
        # the down/up pair along the strip (L, or S * S for sprites2d) halves and doubles it
        require(self.data.length % 2 == 0, "data.length", self.data.length, "must be even")
        # diffusers' LCMScheduler takes the S sampling steps from the N-step solver grid
        require(
            self.eval.lcm_steps <= s.solver_steps,
            "eval.lcm_steps",
            self.eval.lcm_steps,
            f"must be <= schedule.solver_steps ({s.solver_steps})",
        )
        # Algorithm 1 draws both kinds of records from the training set
        p = self.preprocess
        require(
            p.n_motion + p.n_other >= 1,
            "preprocess.n_motion",
            p.n_motion,
            "with preprocess.n_other=0 there are no records to train on",
        )
        require(
            p.n_motion + p.n_other <= self.data.n_train,
            "preprocess.n_motion",
            p.n_motion,
            f"+ preprocess.n_other ({p.n_other}) must be <= data.n_train ({self.data.n_train})",
        )
        # sample_solver_indices: motion clips on the noisiest p_max of the grid, the others on
        # the rest; each part needs at least one grid index
        split = round(s.solver_steps * (1 - p.p_max))
        require(
            1 <= split <= s.solver_steps - 1,
            "preprocess.p_max",
            p.p_max,
            f"must leave both parts of schedule.solver_steps ({s.solver_steps}) a grid index",
        )
