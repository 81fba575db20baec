"""Seconds per step: LiMAC (AcT, the VLM only for text actions) against the VLM every step.

    python -m papers.limac.benchmark                          # both VLMs, paper sizes, CPU
    python -m papers.limac.benchmark --vlm florence2 --episodes 2 --new-tokens 8
    python -m papers.limac.benchmark --tiny --out /tmp/b.json # tiny configs (the smoke test)

The paper's Table 1 gives seconds per step: LiMAC (AcT + Florence-2 for text) 0.34 against
Florence-2 alone 0.50, LiMAC with Qwen2-VL 0.63 against Qwen2-VL alone 3.03. The saving comes
from the gate (paper Sec. 3.3; ``method.gated_text_actions``): the VLM is called only when the
action type is input-text or open-app, never for clicks, scrolls or navigation. This script
times both agents on the same ToyDroid episodes (the first ``--episodes`` of
``toydroid.make_episodes(n, --seed)``), step by step, as they run online:

* **LiMAC**: per step, the element encoders embed the new screen only (a random-weight
  CLIPVisionModel at ViT-B/32 shapes on 224 px crops of each element, a random BertModel at
  BERT-base shapes on 16 tokens of each element's text, plus the goal at step 0 and the last
  typed text; earlier screens' vectors are kept), then AcT at the paper scale of
  ``configs/limac/paper.yaml`` (d = 768, 12 layers, 12 heads, ``PretrainedElementEncoder``)
  reads the episode prefix for the type at END_t, and for click and long-press a second pass
  with TYPE_t appended for the target (brief Sec. 3.4; AcT has no KV cache). The type head is
  taken to be perfect: the gold type gates the VLM, so the share of steps calling it is the
  episodes' share of input-text and open-app steps. The VLM is called through
  ``gated_text_actions`` and counted by ``RecordingTextModel``.
* **VLM every step**: the same VLM, the same inputs, called on every step.

The VLMs are transformers' own classes with random weights at the paper's sizes, built from a
config (nothing is downloaded; no tokenizer or processor exists locally):

* ``florence2``: ``Florence2ForConditionalGeneration`` at Florence-2-large's shapes (DaViT
  256/512/1024/2048 wide, depths 1/1/9/1; BART-large 12 + 12 layers of 1024; 0.77 B
  parameters), a 768 x 768 image (577 image tokens);
* ``qwen2vl``: ``Qwen2VLForConditionalGeneration`` at Qwen2-VL-2B's shapes (vision 32 layers
  of 1280; LM 28 layers of 1536, 12 heads, 2 KV heads; 2.2 B parameters), a portrait
  screenshot of ``--qwen-size`` (default 616 x 280: 220 image tokens; a 1080 x 2400 phone
  screenshot at the processor's default pixel cap would give 3354 and cost ~15x more).

Inputs are synthetic tensors of the right shapes: ``input_ids`` with the image-token slots and
as many text tokens as the step's prompt (``text_model.prompt_for``: goal and element listing)
has word pieces, ``pixel_values`` at the model's image size (and ``image_grid_thw`` for
Qwen2-VL), then ``generate`` greedy with exactly ``--new-tokens`` new tokens (8 ~ a typed
text or an app name). Speed depends on shapes, not on weights or token values.

Timing: one torch and BLAS thread, one untimed warm-up call of each agent, then per step the
two agents' step ``t`` are timed with ``shared.benchmarks.interleaved`` (median of ``--repeats``
rounds, the order reversed every other step and round). Seconds per step = the summed step
times over the number of steps. Ratios are printed and written to ``results/benchmark.json``
(``--out`` elsewhere), never asserted.
"""

from __future__ import annotations

import os

# Single thread, set before numpy and torch are imported (BLAS reads these once, at load time).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import re  # noqa: E402
import zlib  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from papers.limac import toydroid  # noqa: E402
from papers.limac.config import VLMS  # noqa: E402
from papers.limac.episodes import ATTRIBUTES, CLICK_TYPES, TEXT_TYPES, Episode  # noqa: E402
from papers.limac.method import gated_text_actions  # noqa: E402
from papers.limac.model import ActionTransformer, PretrainedElementEncoder  # noqa: E402
from papers.limac.text_model import RecordingTextModel, prompt_for  # noqa: E402
from shared.benchmarks import interleaved, timed, write_benchmark  # noqa: E402
from shared.config import REPO_ROOT  # noqa: E402

SLUG = "limac"
# Paper Table 1, seconds per step (brief Sec. 2): LiMAC with the VLM for text, the VLM alone.
PAPER_SECONDS = {"florence2": (0.34, 0.50), "qwen2vl": (0.63, 3.03)}
QWEN_CHAT_TOKENS = 20  # Qwen2-VL's chat template around the prompt (system, user, assistant)
N_CLASS_BUCKETS = 64  # element class ids at paper scale (config data.n_class_buckets)
TOY_SHARE_EPISODES = 300  # test episodes over which the toy's gated share is counted
COLUMNS = (
    "VLM",
    "LiMAC (s/step)",
    "VLM every step (s/step)",
    "ratio",
    "VLM calls",
    "paper LiMAC",
    "paper VLM",
    "paper ratio",
)


# ------------------------------------------------------------------ sizes


@dataclass
class Sizes:
    """Every shape the benchmark builds: AcT, the element encoders, the two VLMs."""

    act: dict
    clip: dict
    bert: dict
    element_tokens: int  # word pieces per element text fed to BERT
    florence: dict
    florence_image: int  # square side, px
    qwen: dict
    qwen_image: tuple[int, int]  # (height, width), px, multiples of 28
    label: str = "paper"
    notes: dict = field(default_factory=dict)


def paper_sizes(qwen_size: tuple[int, int]) -> Sizes:
    model = OmegaConf.load(REPO_ROOT / "configs" / SLUG / "paper.yaml").model
    act = {k: int(model[k]) for k in ("d", "layers", "heads", "ff", "max_steps")}
    return Sizes(
        act=act,
        clip=dict(  # CLIP ViT-B/32 vision tower (the brief's image encoder)
            hidden_size=768,
            intermediate_size=3072,
            num_hidden_layers=12,
            num_attention_heads=12,
            image_size=224,
            patch_size=32,
        ),
        bert=dict(  # BERT-base / all-mpnet-base-v2 sized sentence encoder
            vocab_size=30522,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
        ),
        element_tokens=16,
        florence=dict(  # microsoft/Florence-2-large config.json
            vision_config=dict(
                embed_dim=[256, 512, 1024, 2048],
                num_heads=[8, 16, 32, 64],
                num_groups=[8, 16, 32, 64],
                depths=[1, 1, 9, 1],
                window_size=12,
                projection_dim=1024,
            ),
            text_config=dict(
                vocab_size=51290,  # 51289 + the image token id that transformers' port adds
                d_model=1024,
                encoder_layers=12,
                decoder_layers=12,
                encoder_attention_heads=16,
                decoder_attention_heads=16,
                encoder_ffn_dim=4096,
                decoder_ffn_dim=4096,
            ),
            image_token_id=51289,
        ),
        florence_image=768,
        qwen=dict(  # Qwen/Qwen2-VL-2B-Instruct config.json
            text_config=dict(
                vocab_size=151936,
                hidden_size=1536,
                intermediate_size=8960,
                num_hidden_layers=28,
                num_attention_heads=12,
                num_key_value_heads=2,
                max_position_embeddings=32768,
                rope_theta=1e6,
                rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]},
                tie_word_embeddings=True,
            ),
            vision_config=dict(
                depth=32,
                embed_dim=1280,
                hidden_size=1536,
                num_heads=16,
                mlp_ratio=4,
                patch_size=14,
                spatial_merge_size=2,
                temporal_patch_size=2,
            ),
            image_token_id=151655,
            video_token_id=151656,
            vision_start_token_id=151652,
            vision_end_token_id=151653,
            tie_word_embeddings=True,
        ),
        qwen_image=qwen_size,
    )


def tiny_sizes() -> Sizes:
    """The same classes at toy widths: the smoke test's seconds."""
    return Sizes(
        act={"d": 16, "layers": 1, "heads": 2, "ff": 32, "max_steps": 32},
        clip=dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=16,
        ),
        bert=dict(
            vocab_size=100,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
        ),
        element_tokens=4,
        florence=dict(
            vision_config=dict(
                embed_dim=[8, 16, 32, 64],
                num_heads=[1, 1, 2, 2],
                num_groups=[1, 1, 2, 2],
                depths=[1, 1, 1, 1],
                window_size=2,
                projection_dim=32,
            ),
            text_config=dict(
                vocab_size=101,
                d_model=32,
                encoder_layers=1,
                decoder_layers=1,
                encoder_attention_heads=2,
                decoder_attention_heads=2,
                encoder_ffn_dim=64,
                decoder_ffn_dim=64,
            ),
            image_token_id=100,
        ),
        florence_image=64,
        qwen=dict(
            text_config=dict(
                vocab_size=200,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=1,
                num_attention_heads=2,
                num_key_value_heads=1,
                max_position_embeddings=4096,
                rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                bos_token_id=154,
                eos_token_id=155,
            ),
            vision_config=dict(
                depth=1,
                embed_dim=32,
                hidden_size=32,
                num_heads=2,
                mlp_ratio=2,
                patch_size=14,
                spatial_merge_size=2,
                temporal_patch_size=2,
            ),
            image_token_id=150,
            video_token_id=151,
            vision_start_token_id=152,
            vision_end_token_id=153,
        ),
        qwen_image=(56, 56),
        label="tiny",
    )


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ------------------------------------------------------------------ the VLM (random weights)


def prompt_tokens(text: str) -> int:
    """Word pieces of a prompt (words and punctuation marks), about its BPE token count."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class SyntheticVLM:
    """A random-weight Florence-2 or Qwen2-VL behind the ``TextActionModel`` interface:
    ``generate`` builds inputs of the step's shapes and decodes exactly ``new_tokens`` tokens.
    Speed depends on the shapes only, not on the weights or the token values."""

    def __init__(self, kind: str, sizes: Sizes, new_tokens: int, seed: int = 0):
        from transformers import (
            Florence2Config,
            Florence2ForConditionalGeneration,
            Qwen2VLConfig,
            Qwen2VLForConditionalGeneration,
        )

        torch.manual_seed(seed)
        self.kind, self.new_tokens = kind, new_tokens
        self.generator = torch.Generator().manual_seed(seed)
        if kind == "florence2":
            self.config = Florence2Config(**sizes.florence)
            self.model = Florence2ForConditionalGeneration(self.config).eval()
            side = sizes.florence_image
            self.image = (side, side)
            # DaViT downsamples 32x; the projector adds one pooled token (768 px: 577).
            self.image_tokens = (side // 32) ** 2 + 1
            self.pixels = torch.randn(1, 3, side, side, generator=self.generator)
            self.fixed = {"pixel_values": self.pixels}
            self.text_high = min(self.config.image_token_id, 50000)
        elif kind == "qwen2vl":
            self.config = Qwen2VLConfig(**sizes.qwen)
            self.model = Qwen2VLForConditionalGeneration(self.config).eval()
            vision = self.config.vision_config
            height, width = sizes.qwen_image
            grid_h, grid_w = height // vision.patch_size, width // vision.patch_size
            self.image = (height, width)
            self.image_tokens = grid_h * grid_w // vision.spatial_merge_size**2
            patch = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
            self.pixels = torch.randn(grid_h * grid_w, patch, generator=self.generator)
            self.fixed = {
                "pixel_values": self.pixels,
                "image_grid_thw": torch.tensor([[1, grid_h, grid_w]]),
            }
            self.text_high = min(self.config.image_token_id, 150000)
        else:
            raise ValueError(f"--vlm must be one of {VLMS}, got {kind!r}")
        self.params = n_params(self.model)
        self.prompt_lengths: list[int] = []

    def input_ids(self, n_text: int) -> torch.Tensor:
        text = torch.randint(3, self.text_high, (1, n_text), generator=self.generator)
        if self.kind == "florence2":  # image tokens, then <s> text </s> (the processor's layout)
            image = torch.full((1, self.image_tokens), self.config.image_token_id)
            return torch.cat([image, torch.tensor([[0]]), text, torch.tensor([[2]])], dim=1)
        image = torch.full((1, self.image_tokens), self.config.image_token_id)
        start = torch.tensor([[self.config.vision_start_token_id]])
        end = torch.tensor([[self.config.vision_end_token_id]])
        chat = torch.randint(3, self.text_high, (1, QWEN_CHAT_TOKENS), generator=self.generator)
        return torch.cat([chat[:, :10], start, image, end, text, chat[:, 10:]], dim=1)

    @torch.no_grad()
    def generate(self, goal, screenshot, elements, action_type) -> str:
        n_text = prompt_tokens(prompt_for(goal, elements, action_type))
        self.prompt_lengths.append(n_text)
        ids = self.input_ids(n_text)
        out = self.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            **self.fixed,
            max_new_tokens=self.new_tokens,
            min_new_tokens=self.new_tokens,
            do_sample=False,
            num_beams=1,
        )
        new = out[0, -self.new_tokens :] if self.kind == "qwen2vl" else out[0, 1:]
        return " ".join(str(int(i)) for i in new)


# ------------------------------------------------------------------ AcT online


class OnlineAcT:
    """AcT as it runs on a phone: per step, embed the new screen's elements (CLIP crops, BERT
    texts), keep the earlier screens' vectors, read the prefix [g, e_0, END_0, TYPE_0, SPEC_0,
    ..., e_t, END_t] for the type, and re-read with TYPE_t for a click's target."""

    def __init__(self, sizes: Sizes, types: tuple[str, ...], seed: int = 0):
        from transformers import BertConfig, BertModel, CLIPVisionConfig, CLIPVisionModel

        torch.manual_seed(seed)
        self.sizes, self.types = sizes, types
        self.clip = CLIPVisionModel(CLIPVisionConfig(**sizes.clip)).eval()
        self.bert = BertModel(BertConfig(**sizes.bert), add_pooling_layer=False).eval()
        a = sizes.act
        encoder = PretrainedElementEncoder(
            a["d"],
            text_dim=sizes.bert["hidden_size"],
            image_dim=sizes.clip["hidden_size"],
            n_attrs=len(ATTRIBUTES),
            n_classes=N_CLASS_BUCKETS,
        )
        self.act = ActionTransformer(
            encoder,
            d=a["d"],
            layers=a["layers"],
            heads=a["heads"],
            ff=a["ff"],
            dropout=0.0,
            max_steps=a["max_steps"],
            n_types=len(types),
            tau=0.1,
        ).eval()
        self.generator = torch.Generator().manual_seed(seed)
        self.screens: list[dict] = []
        self.goal_vec: torch.Tensor | None = None
        self.passes = 0

    def params(self) -> dict[str, int]:
        return {
            "act_transformer": n_params(self.act),
            "clip_vision": n_params(self.clip),
            "text_encoder": n_params(self.bert),
        }

    def _texts(self, n: int) -> torch.Tensor:
        """Sentence vectors of ``n`` texts of ``element_tokens`` word pieces (mean pooled)."""
        ids = torch.randint(
            1000 % self.sizes.bert["vocab_size"],
            self.sizes.bert["vocab_size"],
            (n, self.sizes.element_tokens),
            generator=self.generator,
        )
        states = self.bert(input_ids=ids).last_hidden_state  # (n, L, H)
        return torch.nn.functional.normalize(states.mean(1), dim=-1)

    @torch.no_grad()
    def step(self, episode: Episode, t: int) -> str:
        """Step ``t`` online; returns the (gold, i.e. a perfect head's) action type."""
        step = episode.steps[t]
        n = len(step.elements)
        extra = 1 if t == 0 else int(episode.steps[t - 1].action.type in TEXT_TYPES)
        side = self.sizes.clip["image_size"]
        crops = torch.randn(n, 3, side, side, generator=self.generator)
        image = self.clip(pixel_values=crops).pooler_output  # (n, 768)
        texts = self._texts(n + extra)  # the elements [+ the goal or the last typed text]
        if t == 0:
            self.goal_vec, self.screens = texts[n], []
        del self.screens[t:]
        self.screens.append(
            {
                "text": texts[:n],
                "image": image,
                "attrs": torch.tensor(
                    [[float(getattr(e, a)) for a in ATTRIBUTES] for e in step.elements]
                ),
                "cls": torch.tensor(
                    [zlib.crc32(e.cls.encode()) % N_CLASS_BUCKETS for e in step.elements]
                ),
                "box": torch.tensor([e.box for e in step.elements], dtype=torch.float32),
                "spec": texts[n] if t > 0 and extra else None,  # SPEC of step t - 1
            }
        )
        batch = self._batch(episode, t)
        self.act(batch)  # type at END_t
        self.passes += 1
        gold = step.action.type
        if gold in CLICK_TYPES:  # TYPE_t appended, the target from the contrastive head
            types = batch["type_target"].clone()
            types[0, t] = self.types.index(gold)
            self.act(batch, types)
            self.passes += 1
        return gold

    def _batch(self, episode: Episode, t: int) -> dict[str, torch.Tensor]:
        steps = t + 1
        k = max(s["text"].shape[0] for s in self.screens)
        text_dim, image_dim = self.goal_vec.shape[-1], self.screens[0]["image"].shape[-1]
        b = {
            "goal_vec": self.goal_vec[None],
            "spec_vec": torch.zeros(1, steps, text_dim),
            "elem_text_vec": torch.zeros(1, steps, k, text_dim),
            "elem_image": torch.zeros(1, steps, k, image_dim),
            "elem_attrs": torch.zeros(1, steps, k, len(ATTRIBUTES)),
            "elem_cls": torch.zeros(1, steps, k, dtype=torch.long),
            "elem_box": torch.zeros(1, steps, k, 4),
            "elem_mask": torch.zeros(1, steps, k, dtype=torch.bool),
            "step_mask": torch.ones(1, steps, dtype=torch.bool),
            "type_target": torch.zeros(1, steps, dtype=torch.long),  # TYPE_t unknown yet
            "click_target": torch.full((1, steps), -1, dtype=torch.long),
        }
        for s, screen in enumerate(self.screens):
            n = screen["text"].shape[0]
            b["elem_text_vec"][0, s, :n] = screen["text"]
            b["elem_image"][0, s, :n] = screen["image"]
            b["elem_attrs"][0, s, :n] = screen["attrs"]
            b["elem_cls"][0, s, :n] = screen["cls"]
            b["elem_box"][0, s, :n] = screen["box"]
            b["elem_mask"][0, s, :n] = True
            if s < t:  # executed actions of the history
                action = episode.steps[s].action
                b["type_target"][0, s] = self.types.index(action.type)
                if action.type in CLICK_TYPES:
                    b["click_target"][0, s] = action.target
                if self.screens[s + 1]["spec"] is not None:
                    b["spec_vec"][0, s] = self.screens[s + 1]["spec"]
        return b


# ------------------------------------------------------------------ the two agents


def gated_share(episodes: list[Episode]) -> float:
    steps = [s.action.type for e in episodes for s in e.steps]
    return sum(t in TEXT_TYPES for t in steps) / len(steps)


def paper_implied() -> dict[str, float]:
    """Solve the paper's four times for t_LiMAC = a + s t_VLM (one a and s for both VLMs):
    s is the share of steps calling the VLM, a AcT's own seconds per step."""
    (l_f, v_f), (l_q, v_q) = PAPER_SECONDS["florence2"], PAPER_SECONDS["qwen2vl"]
    share = (l_q - l_f) / (v_q - v_f)
    return {"share": share, "act_s": l_f - share * v_f}


def measure_vlm(kind: str, sizes: Sizes, act: OnlineAcT, episodes: list[Episode], args) -> dict:
    """Build one VLM, time both agents on every step of ``episodes``, return the row."""
    build_s, vlm = timed(lambda: SyntheticVLM(kind, sizes, args.new_tokens, args.seed))
    limac_vlm, every_vlm = RecordingTextModel(vlm), RecordingTextModel(vlm)
    first = episodes[0]

    def limac_step(episode: Episode, t: int, recorder) -> None:
        action_type = act.step(episode, t)
        step = episode.steps[t]
        gated_text_actions([action_type], recorder, episode.goal, [step.elements], [None])

    def every_step(episode: Episode, t: int, recorder) -> None:
        step = episode.steps[t]
        recorder.generate(episode.goal, None, step.elements, step.action.type)

    warmup = RecordingTextModel(vlm)  # one untimed call of each, outside the counts
    act.step(first, 0)
    warmup.generate(first.goal, None, first.steps[0].elements, "input_text")
    vlm.prompt_lengths.clear()

    limac_s, every_s, act_only = [], [], []
    i = 0
    for episode in episodes:
        for t in range(len(episode.steps)):
            candidates = {
                "limac": lambda e=episode, t=t: limac_step(e, t, limac_vlm),
                "every": lambda e=episode, t=t: every_step(e, t, every_vlm),
            }
            if i % 2:
                candidates = dict(reversed(candidates.items()))
            seconds = interleaved(candidates, repeats=args.repeats, warmup=0)
            limac_s.append(seconds["limac"])
            every_s.append(seconds["every"])
            if episode.steps[t].action.type not in TEXT_TYPES:
                act_only.append(seconds["limac"])
            i += 1
            print(
                f"  {kind} step {i}: {episode.steps[t].action.type:14s} "
                f"LiMAC {seconds['limac']:.3f} s, VLM {seconds['every']:.3f} s",
                flush=True,
            )
    n_steps = len(limac_s)
    limac_per_step, every_per_step = sum(limac_s) / n_steps, sum(every_s) / n_steps
    calls = len(limac_vlm.calls) // args.repeats
    vlm_call_s = every_per_step
    act_s = sum(act_only) / len(act_only) if act_only else float("nan")
    paper_limac, paper_vlm = PAPER_SECONDS[kind]
    implied = paper_implied()
    toy_share = args.toy_share

    def projected(share: float) -> float:
        return (act_s + share * vlm_call_s) / vlm_call_s

    row = {
        "vlm": kind,
        "vlm_params": vlm.params,
        "image_px": list(vlm.image),
        "image_tokens": vlm.image_tokens,
        "prompt_tokens_mean": sum(vlm.prompt_lengths) / len(vlm.prompt_lengths),
        "new_tokens": args.new_tokens,
        "build_s": build_s,
        "steps": n_steps,
        "vlm_calls_limac": calls,
        "vlm_calls_every_step": len(every_vlm.calls) // args.repeats,
        "vlm_call_share": calls / n_steps,
        "limac_s_per_step": limac_per_step,
        "vlm_s_per_step": every_per_step,
        "ratio": limac_per_step / every_per_step,
        "act_s_per_step": act_s,  # LiMAC's steps without a VLM call: encoders + AcT
        "projected_ratio_toy_share": projected(toy_share),
        "projected_ratio_paper_share": projected(implied["share"]),
        "paper_limac_s_per_step": paper_limac,
        "paper_vlm_s_per_step": paper_vlm,
        "paper_ratio": paper_limac / paper_vlm,
        "per_step": {"limac_s": limac_s, "vlm_s": every_s},
    }
    return row


def markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [
            r["vlm"],
            f"{r['limac_s_per_step']:.3f}",
            f"{r['vlm_s_per_step']:.3f}",
            f"{r['ratio']:.3f}",
            f"{r['vlm_calls_limac']}/{r['steps']} ({r['vlm_call_share']:.0%})",
            f"{r['paper_limac_s_per_step']:.2f}",
            f"{r['paper_vlm_s_per_step']:.2f}",
            f"{r['paper_ratio']:.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """Run the benchmark, print the table, write the results file and return the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vlm", choices=[*VLMS, "both"], default="both")
    parser.add_argument("--episodes", type=int, default=1, help="first N ToyDroid episodes")
    parser.add_argument("--seed", type=int, default=0, help="ToyDroid seed and weight seed")
    parser.add_argument("--new-tokens", type=int, default=8, help="tokens each VLM call decodes")
    parser.add_argument("--repeats", type=int, default=1, help="timed rounds per step (median)")
    parser.add_argument(
        "--qwen-size",
        type=int,
        nargs=2,
        default=[616, 280],
        metavar=("H", "W"),
        help="Qwen2-VL screenshot size in px (multiples of 28)",
    )
    parser.add_argument("--tiny", action="store_true", help="tiny configs (the smoke test)")
    parser.add_argument(
        "--out", type=Path, default=None, help="default: papers/limac/results/benchmark.json"
    )
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.repeats < 1 or args.new_tokens < 1:
        parser.error("--episodes, --repeats and --new-tokens must be >= 1")
    if any(s % 28 for s in args.qwen_size):
        parser.error("--qwen-size must be multiples of 28 (patch 14 x merge 2)")

    torch.set_num_threads(1)
    sizes = tiny_sizes() if args.tiny else paper_sizes(tuple(args.qwen_size))
    episodes = toydroid.make_episodes(args.episodes, args.seed)
    test_episodes = toydroid.make_episodes(TOY_SHARE_EPISODES, args.seed + 10000)
    args.toy_share = gated_share(test_episodes)
    act_build_s, act = timed(lambda: OnlineAcT(sizes, toydroid.ACTION_TYPES, args.seed))
    kinds = VLMS if args.vlm == "both" else (args.vlm,)
    print(
        f"{sizes.label} sizes; {len(episodes)} episode(s), "
        f"{sum(len(e.steps) for e in episodes)} steps"
    )
    rows = []
    for kind in kinds:  # one VLM in memory at a time
        rows.append(measure_vlm(kind, sizes, act, episodes, args))
        gc.collect()
    print(markdown(rows))
    implied = paper_implied()
    for r in rows:
        print(
            f"{r['vlm']}: AcT + encoders {r['act_s_per_step']:.3f} s/step, VLM call "
            f"{r['vlm_s_per_step']:.2f} s; ratio projected at the toy's share "
            f"{args.toy_share:.0%}: {r['projected_ratio_toy_share']:.3f}, at the paper's "
            f"implied share {implied['share']:.1%}: {r['projected_ratio_paper_share']:.3f}"
        )
    results = {
        "sizes": sizes.label,
        "episodes": len(episodes),
        "families": [e.family for e in episodes],
        "steps": sum(len(e.steps) for e in episodes),
        "episode_gated_share": gated_share(episodes),
        "toy_gated_share": args.toy_share,
        "toy_share_episodes": TOY_SHARE_EPISODES,
        "paper_implied": implied,
        "act": {
            **sizes.act,
            "params": act.params(),
            "build_s": act_build_s,
            "element_tokens": sizes.element_tokens,
            "crop_px": sizes.clip["image_size"],
            "passes": act.passes,
        },
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "rows": rows,
    }
    write_benchmark(SLUG, results, argv, args.out)
    return results


if __name__ == "__main__":
    main()
