"""Paper-scale path: a diffusers ``UNet3DConditionModel`` teacher (VideoCrafter2 / ModelScope
layout, converted offline) loaded with ``from_pretrained(local_dir)``, Algorithm 1 records
read from local safetensors files, and the same Algorithm 2 code as the toy.

The temporal self-attention probabilities that the motion energy reads (Sec. 3.3) are
recorded by :class:`RecordingAttnProcessor`, installed on the first temporal attention
(``attn1``) of every decoder-side temporal transformer (``up_blocks.*.temp_attentions``) --
the diffusers counterpart of VideoCrafter2's ``output_blocks.3..11``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from papers.t2v_turbo_v2 import method as M
from papers.t2v_turbo_v2.model import ConditionProjection
from papers.t2v_turbo_v2.student import train_student
from shared import checkpoint
from shared.preflight import missing_packages, missing_paths

RECORD_KEYS = ("n", "z", "e_c", "e_u", "g", "context", "use_motion", "is_short")
# Reward models of Sec. 3.4 at paper scale (HPSv2.1 + CLIP ViT-H-14, InternVideo2): their
# wrappers are not part of this package; RM variants need these packages and local weights.
REWARD_PACKAGES = {"hpsv2": "hpsv2", "open_clip": "open-clip-torch"}


class RecordingAttnProcessor:
    """diffusers' plain ``AttnProcessor`` arithmetic that also keeps the softmax probabilities
    ``(B * H * W * heads, F, F)`` (batch-major, as the motion energy expects)."""

    def __init__(self, sink: list, enabled: list) -> None:
        self.sink, self.enabled = sink, enabled

    def __call__(
        self,
        attn,
        hidden_states,
        encoder_hidden_states=None,
        attention_mask=None,
        temb=None,
        **kwargs,
    ):
        residual = hidden_states
        batch_size, sequence_length, _ = hidden_states.shape
        attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
        query = attn.to_q(hidden_states)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        key, value = attn.to_k(context), attn.to_v(context)
        query, key, value = (
            attn.head_to_batch_dim(query),
            attn.head_to_batch_dim(key),
            attn.head_to_batch_dim(value),
        )
        probs = attn.get_attention_scores(query, key, attention_mask)
        if self.enabled[0]:
            self.sink.append(probs)
        hidden_states = attn.batch_to_head_dim(torch.bmm(probs, value))
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


class UNet3DEps(nn.Module):
    """``eps(z, t, encoder_hidden_states, timestep_cond=None)`` over a ``UNet3DConditionModel``
    with the attention-recording interface of the toy net."""

    def __init__(
        self, unet: nn.Module, cond_embed_dim: int = 256, use_motion_cond: bool = True
    ) -> None:
        super().__init__()
        self.unet = unet
        self.cond_embed_dim, self.use_motion_cond = cond_embed_dim, use_motion_cond
        self._probs: list[torch.Tensor] = []
        self._enabled = [False]
        self.install_recorders()

    def install_recorders(self) -> None:
        processors = {}
        for name, proc in self.unet.attn_processors.items():
            recorded = (
                name.startswith("up_blocks.")
                and ".temp_attentions." in name
                and name.endswith("attn1.processor")
            )
            processors[name] = (
                RecordingAttnProcessor(self._probs, self._enabled) if recorded else proc
            )
        if not any(isinstance(p, RecordingAttnProcessor) for p in processors.values()):
            raise ValueError(
                "the UNet3DConditionModel has no decoder-side temporal attention to record"
            )
        self.unet.set_attn_processor(processors)

    def __deepcopy__(self, memo):
        clone = UNet3DEps(copy.deepcopy(self.unet, memo), self.cond_embed_dim, self.use_motion_cond)
        return clone

    def add_condition_projection(self) -> None:
        channels = self.unet.time_embedding.linear_1.in_features
        self.unet.time_embedding.cond_proj = ConditionProjection(
            self.cond_embed_dim, channels, self.use_motion_cond
        )

    def set_attention_recording(self, on: bool) -> None:
        self._enabled[0] = on
        self._probs.clear()

    def recorded_attention_probs(self) -> list[torch.Tensor]:
        return list(self._probs)

    def forward(self, sample, timestep, encoder_hidden_states, timestep_cond=None) -> torch.Tensor:
        self._probs.clear()
        return self.unet(
            sample, timestep, encoder_hidden_states, timestep_cond=timestep_cond
        ).sample


def load_teacher(teacher_dir: str | Path, cfg) -> UNet3DEps:
    """``UNet3DConditionModel.from_pretrained(teacher_dir)``, frozen, wrapped."""
    from diffusers import UNet3DConditionModel

    path = Path(teacher_dir)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"paper_scale.teacher_dir={path} has no config.json "
            "(a diffusers UNet3DConditionModel folder)"
        )
    unet = UNet3DConditionModel.from_pretrained(path)
    teacher = UNet3DEps(unet, cfg.net.cond_embed_dim, cfg.net.use_motion_cond)
    return teacher.eval().requires_grad_(False)


def load_records(root: str | Path) -> dict[str, torch.Tensor]:
    """Concatenate ``root/records/*.safetensors`` (Algorithm 1 output, keys ``RECORD_KEYS``)."""
    from safetensors.torch import load_file

    files = sorted((Path(root) / "records").glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(
            f"{Path(root) / 'records'} holds no *.safetensors records (Algorithm 1 output)"
        )
    parts = [load_file(f) for f in files]
    for f, part in zip(files, parts, strict=True):
        missing = [k for k in RECORD_KEYS if k not in part]
        if missing:
            raise ValueError(f"{f} lacks record fields {missing}")
    records = {k: torch.cat([p[k] for p in parts]) for k in RECORD_KEYS}
    for k in ("z", "e_c", "e_u", "g", "context"):
        records[k] = records[k].float()
    records["n"] = records["n"].long()
    records["use_motion"], records["is_short"] = (
        records["use_motion"].bool(),
        records["is_short"].bool(),
    )
    return records


def save_records(records: dict[str, torch.Tensor], path: str | Path) -> None:
    """Write Algorithm 1 records (fp16 tensors like the official code, flags as uint8)."""
    from safetensors.torch import save_file

    out = {}
    for k in RECORD_KEYS:
        v = records[k]
        out[k] = (
            v.half().contiguous()
            if v.is_floating_point()
            else v.to(torch.int64 if k == "n" else torch.uint8).contiguous()
        )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_file(out, str(path))


def preflight(cfg) -> list[str]:
    problems = missing_paths(
        {"paper_scale.teacher_dir": cfg.paper_scale.teacher_dir, "data.root": cfg.data.root},
        hint=" (a local path; see papers/t2v_turbo_v2/README.md, paper scale)",
    )
    if (
        cfg.data.root
        and Path(cfg.data.root).is_dir()
        and not (Path(cfg.data.root) / "records").is_dir()
    ):
        problems.append(f"{Path(cfg.data.root) / 'records'} (Algorithm 1 records) is missing")
    if any(m in ("cd_rm", "cd_rm_mg") for m in cfg.methods):
        problems += missing_packages(REWARD_PACKAGES)
    return problems


def run_paper(cfg, out_dir: Path, image_reward=None, video_reward=None, decode=None) -> dict:
    """Algorithm 2 on the local teacher and records for every method; returns training losses.

    RM variants need reward callables (HPSv2.1 + CLIP on VAE-decoded frames, InternVideo2);
    evaluation is external (VBench, T2V-CompBench).
    """
    teacher = load_teacher(cfg.paper_scale.teacher_dir, cfg)
    records = load_records(cfg.data.root)
    schedule = M.NoiseSchedule.from_config(cfg.schedule)
    grid = M.SolverGrid.build(schedule.num_train_timesteps, cfg.schedule.solver_steps)
    results: dict[str, dict[str, list[float]]] = {}
    for variant in cfg.methods:
        for seed in cfg.seeds:
            run_dir = Path(out_dir) / "runs" / f"{variant}-s{seed}"
            rewards = {
                "reward_factory": lambda batch: (image_reward, video_reward),
                "decode": decode,
            }
            student = train_student(
                variant,
                seed,
                cfg.student.steps,
                cfg,
                {"teacher": teacher, **rewards},
                records,
                schedule,
                grid,
                run_dir,
                None,
                progress=cfg.runtime.progress,
            )
            state = checkpoint.load_checkpoint(run_dir / "checkpoint.pt")
            results.setdefault(variant, {}).setdefault("steps", []).append(float(state["step"]))
            del student
    return results
