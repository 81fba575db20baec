"""T2V-Turbo-v2 (Li et al., ICLR 2025, arXiv 2410.05677): the student's post-training.

Consistency distillation (CD) of an epsilon-prediction video teacher into a few-step
consistency model, with three supervision signals combined inside CD:

* the teacher ODE solver is a DDIM step on a sub-sampled grid (Sec. 3.1) with LCM-convention
  classifier-free guidance on x0 predictions (Sec. 3.2);
* an energy gradient enters that solver: a MotionClone-style motion energy read from the
  teacher's temporal self-attention probabilities, with the reference from DDIM inversion of
  the same clip (Sec. 3.3), applied only on the noisiest half of the grid;
* image-text and video-text reward losses on the one-step output, for short-caption samples
  only (Sec. 3.4).

Section numbers refer to the implementation brief (``shared/papers/t2v_turbo_v2.md``),
which follows the paper's Algorithms 1-2 and the official code. No Hydra, no I/O.
Deviations (toy only): pixel space replaces the VAE latent, so the samplers clamp x0 to
[-1, 1] (never inside the CD target).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from diffusers import DDIMScheduler
from torch import nn

EpsModel = Callable[..., torch.Tensor]  # (z, t, encoder_hidden_states, timestep_cond=None) -> eps


# ----------------------------------------------------------------------------- schedule (Sec. 3)
@dataclass
class NoiseSchedule:
    """Discrete DDPM schedule: ``abar_t``, ``a_t = sqrt(abar_t)``, ``s_t = sqrt(1 - abar_t)``.

    ``alphas_cumprod`` comes from diffusers' ``DDIMScheduler`` (scaled-linear betas
    ``beta_i = linspace(sqrt(0.00085), sqrt(0.012), 1000)_i^2``), pinned by a unit test.
    """

    alphas_cumprod: torch.Tensor  # (1000,)

    @classmethod
    def from_config(cls, cfg) -> NoiseSchedule:
        scheduler = DDIMScheduler(
            num_train_timesteps=cfg.num_train_timesteps,
            beta_start=cfg.beta_start,
            beta_end=cfg.beta_end,
            beta_schedule=cfg.beta_schedule,
        )
        return cls(scheduler.alphas_cumprod.clone())

    @property
    def num_train_timesteps(self) -> int:
        return len(self.alphas_cumprod)

    def abar(self, t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """``abar_t`` broadcast against ``like`` (B, ...)."""
        value = self.alphas_cumprod.to(like.dtype)[t.long()]
        return value.reshape(-1, *([1] * (like.dim() - 1)))

    def add_noise(self, x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``z_t = a_t z0 + s_t eps``."""
        abar = self.abar(t, x0)
        return abar.sqrt() * x0 + (1 - abar).sqrt() * eps

    def x0_from_eps(self, z: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``x0(eps) = (z_t - s_t eps) / a_t``."""
        abar = self.abar(t, z)
        return (z - (1 - abar).sqrt() * eps) / abar.sqrt()

    def eps_from_x0(self, z: torch.Tensor, x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        abar = self.abar(t, z)
        return (z - abar.sqrt() * x0) / (1 - abar).sqrt()


# ------------------------------------------------------------------ DDIM solver grid (Sec. 3.1)
@dataclass
class SolverGrid:
    """``tau_i = k (i + 1) - 1`` for i = 0..N-1 with step ratio ``k = 1000 / N`` (N=200: 4..999).

    The grid is diffusers' ``DDIMScheduler`` "trailing" spacing (pinned by a unit test). The
    skip is one grid step: start ``tau_n``, target ``tau_n - k`` clipped at 0.
    """

    timesteps: torch.Tensor  # (N,) ascending: tau_0 .. tau_{N-1}
    step_ratio: int

    @classmethod
    def build(cls, num_train_timesteps: int, solver_steps: int) -> SolverGrid:
        if solver_steps <= 0 or num_train_timesteps % solver_steps:
            raise ValueError(
                f"schedule.solver_steps={solver_steps} must divide schedule.num_train_timesteps="
                f"{num_train_timesteps} (the DDIM grid needs a whole step ratio)"
            )
        scheduler = DDIMScheduler(
            num_train_timesteps=num_train_timesteps, timestep_spacing="trailing"
        )
        scheduler.set_timesteps(solver_steps)
        return cls(scheduler.timesteps.flip(0).long().clone(), num_train_timesteps // solver_steps)

    @property
    def n_steps(self) -> int:
        return len(self.timesteps)

    def start(self, n: torch.Tensor) -> torch.Tensor:
        """``tau_n``."""
        return self.timesteps[n]

    def target(self, n: torch.Tensor) -> torch.Tensor:
        """``tau_n - k`` clipped at 0 (= ``tau_{n-1}`` for n >= 1)."""
        return (self.timesteps[n] - self.step_ratio).clamp_min(0)


def ddim_step(
    schedule: NoiseSchedule,
    grid: SolverGrid,
    x0_hat: torch.Tensor,
    eps_hat: torch.Tensor,
    n: torch.Tensor,
) -> torch.Tensor:
    """Sec. 3.1 DDIM step (eta = 0):
    ``z_prev = sqrt(abar_prev) x0_hat + sqrt(1 - abar_prev) eps_hat``.

    ``abar_prev(n) = abar[tau_n - k]`` with index 0 for n = 0 (not 1.0).
    """
    abar_prev = schedule.abar(grid.target(n), x0_hat)
    return abar_prev.sqrt() * x0_hat + (1 - abar_prev).sqrt() * eps_hat


def ddim_inversion_step(
    schedule: NoiseSchedule, grid: SolverGrid, z: torch.Tensor, e: torch.Tensor, i: torch.Tensor
) -> torch.Tensor:
    """Sec. 3.1 inversion: from level ``tau_i - k`` to ``tau_i`` with ``e = eps(z, tau_i, c)``.

    ``z_next = sqrt(abar[tau_i] / abar[tau_i - k]) (z - sqrt(1 - abar[tau_i - k]) e)
    + sqrt(1 - abar[tau_i]) e``.
    """
    abar_from = schedule.abar(grid.target(i), z)
    abar_to = schedule.abar(grid.start(i), z)
    return (abar_to / abar_from).sqrt() * (z - (1 - abar_from).sqrt() * e) + (
        1 - abar_to
    ).sqrt() * e


@torch.no_grad()
def ddim_invert(
    eps_model: EpsModel,
    schedule: NoiseSchedule,
    grid: SolverGrid,
    z0: torch.Tensor,
    context: torch.Tensor,
    n: torch.Tensor,
) -> torch.Tensor:
    """Reference latents ``z_ref`` at level ``tau_n`` by ``n + 1`` inversion steps (Sec. 3.3).

    Batched over clips (brief Sec. 5, run C): the loop runs to the largest ``n``; step ``i``
    advances only the clips with ``n >= i`` (a clip is done after its own ``n + 1`` steps), so
    the cost is ``sum(n + 1)`` forward rows, not ``len(n) * (max(n) + 1)``. Conditional on the
    caption, no CFG; the *target* timestep ``tau_i`` is fed with the current latent (faithful
    to the code).
    """
    z_ref = z0.clone()
    for i in range(int(n.max()) + 1):
        active = (n >= i).nonzero().squeeze(1)
        z = z_ref[active]
        step = torch.full_like(active, i)
        ctx = None if context is None else context[active]
        eps = eps_model(z, grid.start(step), ctx)
        z_ref[active] = ddim_inversion_step(schedule, grid, z, eps, step)
    return z_ref


# ------------------------------------------------ CFG and the motion-guided target (Sec. 3.2)
def cfg_lcm(
    schedule: NoiseSchedule,
    z: torch.Tensor,
    t: torch.Tensor,
    e_c: torch.Tensor,
    e_u: torch.Tensor,
    w: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """LCM-convention CFG on x0 and eps: ``x0_hat = x0(e_c) + w (x0(e_c) - x0(e_u))``,
    ``eps_hat = e_c + w (e_c - e_u)`` (w counts the *extra* weight; Sec. 3.2 step 2)."""
    w = w.reshape(-1, *([1] * (z.dim() - 1))).to(z.dtype)
    x0_c, x0_u = schedule.x0_from_eps(z, e_c, t), schedule.x0_from_eps(z, e_u, t)
    return x0_c + w * (x0_c - x0_u), e_c + w * (e_c - e_u)


def motion_scale(
    n: torch.Tensor, use_motion: torch.Tensor, motion_gs: float, percentage: float, n_steps: int
) -> torch.Tensor:
    """``lambda`` per sample: ``motion_gs`` where flagged and ``n >= (1 - p) N``, else 0
    (Algorithm 2)."""
    on = use_motion.bool() & (n >= (1 - percentage) * n_steps)
    return torch.where(on, torch.full(n.shape, motion_gs), torch.zeros(n.shape))


def guided_teacher_target(
    schedule: NoiseSchedule,
    grid: SolverGrid,
    z: torch.Tensor,
    n: torch.Tensor,
    e_c: torch.Tensor,
    e_u: torch.Tensor,
    w: torch.Tensor,
    g: torch.Tensor,
    lam: torch.Tensor,
) -> torch.Tensor:
    """The augmented ODE solver (Sec. 3.2): CFG, then ``eps_tilde = eps_hat - lam sqrt(1 - a_t) g``
    with the code's ``a_t = sqrt(abar_t)`` (quirk: coefficient ``sqrt(1 - sqrt(abar_t))``), then
    a DDIM step with the *unguided* ``x0_hat``. Samples with ``lam = 0`` get exactly ``eps_hat``.
    """
    t = grid.start(n)
    x0_hat, eps_hat = cfg_lcm(schedule, z, t, e_c, e_u, w)
    a_t = schedule.abar(t, z).sqrt()
    coef = lam.reshape(-1, *([1] * (z.dim() - 1))).to(z.dtype) * (1 - a_t).sqrt()
    eps_tilde = eps_hat - coef * g
    return ddim_step(schedule, grid, x0_hat, eps_tilde, n)


# ------------------------------------------------------------ the motion energy (Sec. 3.3)
def top_k_mask(reference_probs: torch.Tensor, k: int = 1) -> torch.Tensor:
    """``M``: True at the top-k keys of every query row of the reference attention (rank_k)."""
    idx = reference_probs.topk(k, dim=-1).indices
    return torch.zeros_like(reference_probs, dtype=torch.bool).scatter_(-1, idx, True)


def motion_energy(
    reference_probs: Sequence[torch.Tensor],
    probs: Sequence[torch.Tensor],
    batch: int,
    temp_loss_scale: float = 100.0,
    rank_k: int = 1,
) -> torch.Tensor:
    """Per-sample energy (B,): ``100 * temp_loss_scale * mean_l MSE_masked(A_l(z_ref) - A_l(z))``.

    Each ``A_l`` is ``(B * positions * heads, T, T)`` in batch-major order; the reference maps
    are detached and only their top-``rank_k`` entries per query row enter the loss. The
    per-sample split (the official code runs batch 1) keeps each clip's gradient its own.
    """
    total = 0.0
    for ref, cur in zip(reference_probs, probs, strict=True):
        ref = ref.detach().reshape(batch, -1, *ref.shape[-2:])
        cur = cur.reshape(batch, -1, *cur.shape[-2:])
        mask = top_k_mask(ref, rank_k).to(cur.dtype)
        sq = ((ref - cur) ** 2 * mask).flatten(1).sum(1) / mask.flatten(1).sum(1)
        total = total + sq
    return 100.0 * temp_loss_scale * total / len(probs)


def motion_energy_gradient(
    eps_model: nn.Module,
    z: torch.Tensor,
    t: torch.Tensor,
    context: torch.Tensor,
    z_ref: torch.Tensor,
    temp_loss_scale: float = 100.0,
    rank_k: int = 1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``g = dE/dz`` at ``z = z_{tau_n}`` (Sec. 3.3) and the same pass's ``e_c``.

    ``eps_model`` offers ``set_attention_recording`` / ``recorded_attention_probs`` (the toy
    net, or the diffusers adapter). Returns ``(g, e_c, E)`` with E per sample.
    """
    eps_model.set_attention_recording(True)
    try:
        with torch.no_grad():
            eps_model(z_ref, t, context)
            reference = [p.detach() for p in eps_model.recorded_attention_probs()]
        with torch.enable_grad():
            z_in = z.detach().requires_grad_(True)
            e_c = eps_model(z_in, t, context)
            energy = motion_energy(
                reference, eps_model.recorded_attention_probs(), len(z), temp_loss_scale, rank_k
            )
            (g,) = torch.autograd.grad(energy.sum(), z_in)
    finally:
        eps_model.set_attention_recording(False)
    return g.detach(), e_c.detach(), energy.detach()


# ---------------------------------------------------------- Algorithm 1: preprocessing
@torch.no_grad()
def sample_solver_indices(
    is_motion: torch.Tensor, n_steps: int, p_max: float, generator: torch.Generator
) -> torch.Tensor:
    """Motion clips: ``n ~ U{N(1-p_max), ..., N-1}``; others: ``n ~ U{0, ..., N(1-p_max)-1}``."""
    split = int(round(n_steps * (1 - p_max)))
    u = torch.rand(is_motion.shape, generator=generator)
    high = split + (u * (n_steps - split)).long().clamp_max(n_steps - split - 1)
    low = (u * split).long().clamp_max(split - 1)
    return torch.where(is_motion.bool(), high, low)


def preprocess_records(
    teacher: nn.Module,
    schedule: NoiseSchedule,
    grid: SolverGrid,
    z0: torch.Tensor,
    context: torch.Tensor,
    empty_context: torch.Tensor,
    is_motion: torch.Tensor,
    n: torch.Tensor,
    eps: torch.Tensor,
    temp_loss_scale: float = 100.0,
    rank_k: int = 1,
) -> dict[str, torch.Tensor]:
    """Algorithm 1 on a batch: noise, invert (motion clips), store ``e_c, e_u, g``.

    ``z = a_{tau_n} z0 + s_{tau_n} eps`` with fresh noise; motion clips get ``z_ref`` by
    ``n + 1`` inversion steps and ``g, e_c`` from the energy; the others ``g = 0``.
    """
    t = grid.start(n)
    z = schedule.add_noise(z0, eps, t)
    with torch.no_grad():
        e_c = teacher(z, t, context)
        e_u = teacher(z, t, empty_context)
    g = torch.zeros_like(z)
    energy = torch.zeros(len(z))
    motion = is_motion.bool()
    if motion.any():
        idx = motion.nonzero().squeeze(1)
        z_ref = ddim_invert(teacher, schedule, grid, z0[idx], context[idx], n[idx])
        g_m, e_c_m, energy_m = motion_energy_gradient(
            teacher, z[idx], t[idx], context[idx], z_ref, temp_loss_scale, rank_k
        )
        g[idx], e_c[idx], energy[idx] = g_m, e_c_m, energy_m
    return {"n": n, "z": z, "e_c": e_c, "e_u": e_u, "g": g, "use_motion": motion, "energy": energy}


# ------------------------------------------------- student and consistency map (Sec. 3.4)
def scalar_embedding(v: torch.Tensor, dim: int = 256) -> torch.Tensor:
    """VDM/LCM embedding of a scalar: ``v * 1000``, ``dim/2`` frequencies
    ``exp(-log(10000) k / (dim/2 - 1))``, ``concat(sin, cos)``. Shape (B, dim)."""
    half = dim // 2
    freqs = torch.exp(torch.arange(half, dtype=torch.float32) * -(math.log(10000.0) / (half - 1)))
    args = (v.float() * 1000.0)[:, None] * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


def student_condition(
    w: torch.Tensor, lam: torch.Tensor, dim: int = 256, use_motion_cond: bool = True
) -> torch.Tensor:
    """``timestep_cond = [e(w) ; e(lambda)]`` (B, 2 dim), or ``e(w)`` without the motion input."""
    cond = scalar_embedding(w, dim)
    return torch.cat([cond, scalar_embedding(lam, dim)], dim=1) if use_motion_cond else cond


def boundary_scalings(
    t: torch.Tensor, sigma_data: float = 0.5, timestep_scaling: float = 10.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``c_skip = sd^2 / ((10 t)^2 + sd^2)``, ``c_out = 10 t / sqrt((10 t)^2 + sd^2)`` on raw
    integer t (LCM; equals ``LCMScheduler.get_scalings_for_boundary_condition_discrete``)."""
    scaled = t.double() * timestep_scaling
    c_skip = sigma_data**2 / (scaled**2 + sigma_data**2)
    c_out = scaled / (scaled**2 + sigma_data**2).sqrt()
    return c_skip, c_out


def consistency_map(
    schedule: NoiseSchedule,
    eps_model: EpsModel,
    z: torch.Tensor,
    t: torch.Tensor,
    context: torch.Tensor,
    cond: torch.Tensor,
    sigma_data: float = 0.5,
    timestep_scaling: float = 10.0,
) -> torch.Tensor:
    """``f_theta(z, t) = c_skip(t) z + c_out(t) x0(eps_theta(z, t, w, lambda, c))`` (Sec. 3.4)."""
    c_skip, c_out = boundary_scalings(t, sigma_data, timestep_scaling)
    shape = (-1, *([1] * (z.dim() - 1)))
    x0 = schedule.x0_from_eps(z, eps_model(z, t, context, timestep_cond=cond), t)
    return c_skip.to(z.dtype).reshape(shape) * z + c_out.to(z.dtype).reshape(shape) * x0


def pseudo_huber(pred: torch.Tensor, target: torch.Tensor, c: float) -> torch.Tensor:
    """CD loss: ``mean(sqrt((pred - target)^2 + c^2) - c)``."""
    return (torch.sqrt((pred.float() - target.float()) ** 2 + c**2) - c).mean()


def cd_loss(pred: torch.Tensor, target: torch.Tensor, loss_type: str, c: float) -> torch.Tensor:
    if loss_type == "huber":
        return pseudo_huber(pred, target, c)
    if loss_type == "l2":
        return ((pred.float() - target.float()) ** 2).mean()
    raise ValueError(f"method.loss_type must be 'huber' or 'l2', got {loss_type!r}")


# ------------------------------------------------------------- reward losses (Sec. 3.4)
RewardFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (frames, sample index) -> (k,)


def reward_losses(
    pred: torch.Tensor,
    is_short: torch.Tensor,
    decode: Callable[[torch.Tensor], torch.Tensor],
    image_reward: RewardFn | None,
    video_reward: RewardFn | None,
    reward_batch: int,
    reward_frames: int,
    video_frames: int,
    reward_scale: float,
    video_reward_scale: float,
    generator: torch.Generator,
) -> dict[str, torch.Tensor]:
    """``L_img = -reward_scale mean R_img`` on ``reward_frames`` random frames and
    ``L_vid = -video_reward_scale R_vid`` on ``video_frames`` frames with stride ``T / F`` from a
    random offset, for ``reward_batch`` samples drawn among the *short-caption* ones only.

    ``pred``: (B, C, T, ...) one-step consistency outputs. With no short caption in the batch
    no reward model is called and both losses are 0 (data routing, Sec. 3.4).
    """
    zero = pred.new_zeros(())
    out = {"image": zero, "video": zero, "r_img": zero, "r_vid": zero}
    short = is_short.bool().nonzero().squeeze(1)
    if len(short) == 0 or (image_reward is None and video_reward is None):
        return out
    chosen = short[torch.randperm(len(short), generator=generator)[:reward_batch]]
    frames_total = pred.shape[2]
    if image_reward is not None:
        frames = torch.stack(
            [torch.randperm(frames_total, generator=generator)[:reward_frames] for _ in chosen]
        )
        pixels = decode(pred[chosen[:, None], :, frames])  # (k, F, C, ...)
        r_img = image_reward(pixels.flatten(0, 1), chosen.repeat_interleave(reward_frames))
        out["r_img"] = r_img.mean()
        out["image"] = -reward_scale * r_img.mean()
    if video_reward is not None:
        stride = frames_total // video_frames
        offset = torch.randint(0, stride, (len(chosen),), generator=generator)
        frames = offset[:, None] + stride * torch.arange(video_frames)[None]
        pixels = decode(pred[chosen[:, None], :, frames]).transpose(1, 2)  # (k, C, F, ...)
        r_vid = video_reward(pixels, chosen)
        out["r_vid"] = r_vid.mean()
        out["video"] = -video_reward_scale * r_vid.mean()
    return out


# ---------------------------------------------------------- Algorithm 2: one training step
def t2v_turbo_v2_loss(
    student: EpsModel,
    target_model: EpsModel,
    schedule: NoiseSchedule,
    grid: SolverGrid,
    batch: dict[str, torch.Tensor],
    cfg,
    generator: torch.Generator,
    decode: Callable[[torch.Tensor], torch.Tensor] | None = None,
    image_reward: RewardFn | None = None,
    video_reward: RewardFn | None = None,
    cond_dim: int = 256,
    use_motion_cond: bool = True,
) -> dict[str, torch.Tensor]:
    """Algorithm 2 on a batch of Algorithm 1 records ``{n, z, e_c, e_u, g, context, use_motion,
    is_short}``: ``L = L_CD + L_img + L_vid``; the target is ``target_model`` (the online
    student) under no-grad at ``(z_prev, tau_n - k)``. ``cfg`` is a ``MethodConfig``.
    """
    n, z, context = batch["n"], batch["z"], batch["context"]
    b = len(n)
    w = cfg.w_min + (cfg.w_max - cfg.w_min) * torch.rand(b, generator=generator)
    lam = motion_scale(n, batch["use_motion"], cfg.motion_gs, cfg.percentage, grid.n_steps)
    cond = student_condition(w, lam, cond_dim, use_motion_cond)
    t = grid.start(n)
    pred = consistency_map(
        schedule, student, z, t, context, cond, cfg.sigma_data, cfg.timestep_scaling
    )
    rewards = reward_losses(
        pred,
        batch["is_short"],
        decode or (lambda x: x),
        image_reward,
        video_reward,
        cfg.reward_batch,
        cfg.reward_frames,
        cfg.video_frames,
        cfg.reward_scale,
        cfg.video_reward_scale,
        generator,
    )
    with torch.no_grad():
        z_prev = guided_teacher_target(
            schedule, grid, z, n, batch["e_c"], batch["e_u"], w, batch["g"], lam
        )
        target = consistency_map(
            schedule,
            target_model,
            z_prev,
            grid.target(n),
            context,
            cond,
            cfg.sigma_data,
            cfg.timestep_scaling,
        )
    loss_cd = cd_loss(pred, target, cfg.loss_type, cfg.huber_c)
    total = loss_cd + rewards["image"] + rewards["video"]
    return {
        "loss": total,
        "cd": loss_cd.detach(),
        "image": rewards["image"].detach(),
        "video": rewards["video"].detach(),
        "r_img": rewards["r_img"].detach(),
        "r_vid": rewards["r_vid"].detach(),
        "lam_mean": lam.mean(),
    }


# ------------------------------------------------------------------ samplers (Sec. 3.6)
@torch.no_grad()
def lcm_sample(
    student: EpsModel,
    schedule_cfg,
    shape: Sequence[int],
    context: torch.Tensor,
    steps: int,
    solver_steps: int,
    guidance: float,
    motion_gs: float,
    p_inf: float,
    generator: torch.Generator,
    clip_sample: bool,
    cond_dim: int = 256,
    use_motion_cond: bool = True,
    timestep_scaling: float = 10.0,
) -> torch.Tensor:
    """LCM multistep sampling with diffusers' ``LCMScheduler`` (Sec. 3.6).

    Origin grid = the N-step solver grid; S steps take every N/S-th grid time from the end
    (N=200, S=4: 999, 749, 499, 249). Guidance embedding ``w``; motion embedding ``motion_gs``
    while ``t >= 1000 (1 - p_inf)``, else 0. ``clip_sample`` clamps x0 (pixel-space toy only).
    """
    from diffusers import LCMScheduler

    scheduler = LCMScheduler(
        num_train_timesteps=len(schedule_cfg.alphas_cumprod),
        trained_betas=None,
        clip_sample=clip_sample,
        clip_sample_range=1.0,
        timestep_scaling=timestep_scaling,
        set_alpha_to_one=True,
    )
    scheduler.alphas_cumprod = schedule_cfg.alphas_cumprod.clone()
    scheduler.set_timesteps(steps, original_inference_steps=solver_steps)
    b = shape[0]
    z = torch.randn(tuple(shape), generator=generator)
    w = torch.full((b,), guidance)
    denoised = z
    for t in scheduler.timesteps:
        on = float(t) >= len(schedule_cfg.alphas_cumprod) * (1 - p_inf)
        lam = torch.full((b,), motion_gs if on else 0.0)
        cond = student_condition(w, lam, cond_dim, use_motion_cond)
        eps = student(z, torch.full((b,), int(t)), context, timestep_cond=cond)
        z, denoised = scheduler.step(eps, t, z, generator=generator, return_dict=False)
    return denoised


@torch.no_grad()
def teacher_ddim_sample(
    teacher: EpsModel,
    schedule_cfg,
    shape: Sequence[int],
    context: torch.Tensor,
    empty_context: torch.Tensor,
    steps: int,
    guidance: float,
    generator: torch.Generator,
    clip_sample: bool,
) -> torch.Tensor:
    """Teacher baseline: DDIM (eta = 0, diffusers ``DDIMScheduler``, trailing spacing) with
    LCM-convention CFG ``e_c + w (e_c - e_u)``; with ``clip_sample`` x0 is clamped and eps
    recomputed from it (``use_clipped_model_output``; pixel-space toy only)."""
    scheduler = DDIMScheduler(
        num_train_timesteps=len(schedule_cfg.alphas_cumprod),
        clip_sample=clip_sample,
        clip_sample_range=1.0,
        set_alpha_to_one=True,
        timestep_spacing="trailing",
    )
    scheduler.alphas_cumprod = schedule_cfg.alphas_cumprod.clone()
    scheduler.set_timesteps(steps)
    b = shape[0]
    z = torch.randn(tuple(shape), generator=generator)
    for t in scheduler.timesteps:
        tt = torch.full((b,), int(t))
        e_c, e_u = teacher(z, tt, context), teacher(z, tt, empty_context)
        eps = e_c + guidance * (e_c - e_u)
        z = scheduler.step(eps, t, z, eta=0.0, use_clipped_model_output=clip_sample).prev_sample
    return z
