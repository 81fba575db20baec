"""The two worlds the SPA loop runs in, behind one interface.

* :class:`ToyTask` (brief Sec. 5): prompts (topic, style1, style2), fixed-length responses over
  8 tokens, a known reward r*, pi_init trained by SFT, exact evaluation by enumeration.
* :class:`ChatTask` (brief Sec. 6): UltraFeedback prompts through the checkpoint's chat
  template, ``model.generate`` sampling, pi_init loaded from a local folder, generations on
  held-out prompts dumped in AlpacaEval's format (the GPT-4 judge itself is external).

A sequence is a list of token ids; the loop (``train.py``) never looks inside.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from papers.spa.config import Config
from papers.spa.data import (
    DEMO_PAIRS_FILE,
    DEMO_PROMPTS_FILE,
    all_responses,
    alpaca_eval_records,
    behaviour_batch,
    eval_prompts,
    load_demo_pairs,
    load_instructions,
    load_preference_rows,
    make_toy_world,
    sample_prompts,
    split_demo,
    split_rows,
)
from papers.spa.method import label_accuracy
from papers.spa.metrics import expected_reward, win_rate_from_weights, win_weights
from papers.spa.model import (
    batched_log_probs,
    build_toy_policy,
    enumerate_log_probs,
    load_local_model,
    load_local_tokenizer,
    sample_toy_responses,
)
from shared.seeding import numpy_rng, torch_generator

# RNG streams of one seed (numpy_rng(seed, stream, ...)); distinct streams never share draws.
STREAM_SFT, STREAM_SEED, STREAM_POOL, STREAM_SAMPLE, STREAM_FULL = 1, 2, 3, 4, 5
# the pinned demo files' record counts (a truncated or changed copy stops in one line)
DEMO_PAIR_RECORDS, DEMO_PROMPT_RECORDS = 300, 999


@dataclass
class Pairs:
    """Labelled preference pairs (token-id lists)."""

    prompts: list[list[int]]
    chosen: list[list[int]]
    rejected: list[list[int]]

    def __len__(self) -> int:
        return len(self.prompts)


@dataclass
class Pool:
    """An iteration's prompts: their token ids and (toy) their (topic, style1, style2)."""

    ids: list[list[int]]
    raw: torch.Tensor | None = None
    texts: list[str] | None = None


def pairs_from_labels(
    pool: Pool, responses: list[list[list[int]]], chosen: list[int], rejected: list[int], keep
) -> Pairs:
    rows = [i for i, k in enumerate(keep) if k]
    return Pairs(
        [pool.ids[i] for i in rows],
        [responses[i][chosen[i]] for i in rows],
        [responses[i][rejected[i]] for i in rows],
    )


class ToyTask:
    """Brief Sec. 5: the synthetic world of one seed."""

    has_true_reward = True

    def __init__(self, cfg: Config, seed: int):
        self.cfg, self.seed = cfg, seed
        self.world = make_toy_world(cfg.world, seed)
        self.allowed_tokens = self.world.response_tokens
        self.pad_id = 0  # never used: toy sequences all have the same length
        self.micro_batch = 4096
        self.eval_raw = eval_prompts(cfg.world, seed)
        self.eval_rewards = self.world.reward(
            self.eval_raw.repeat_interleave(self.n_responses, 0),
            all_responses(cfg.world.n_tokens, cfg.world.response_length).repeat(
                len(self.eval_raw), 1
            ),
        ).reshape(len(self.eval_raw), -1)  # (P, V^L)
        self.init_log_probs: torch.Tensor | None = None
        self.init_model = None
        self.win_weights: torch.Tensor | None = None  # (P, V^L), fixed once pi_init is

    @property
    def n_responses(self) -> int:
        return self.cfg.world.n_tokens**self.cfg.world.response_length

    def build_policy(self):
        torch.manual_seed(self.seed)  # the initial weights of pi_init (before SFT)
        w = self.cfg.world
        return build_toy_policy(self.cfg.model, self.world.vocab_size, w.response_length)

    def sft_batch(self, step: int) -> tuple[list[list[int]], list[list[int]]]:
        """Fresh behaviour samples of SFT step ``step`` (a pure function of seed and step)."""
        rng = numpy_rng(self.seed, STREAM_SFT, step)
        prompts, responses = behaviour_batch(self.world, self.cfg.sft.batch_size, rng)
        return self.world.prompt_ids(prompts).tolist(), responses.tolist()

    def set_init(self, pi_init) -> None:
        self.init_model = pi_init
        self.init_log_probs = self._enumerate(pi_init)
        self.win_weights = win_weights(
            self.init_log_probs, self.eval_rewards, self.cfg.world.tie_decimals
        )

    def _enumerate(self, model) -> torch.Tensor:
        w = self.cfg.world
        ids = self.world.prompt_ids(self.eval_raw).to(next(model.parameters()).device)
        return enumerate_log_probs(model, ids, w.n_tokens, w.response_length).cpu()

    def evaluate(self, model, tag: str, run_dir: Path) -> dict[str, float]:
        """Exact win rate against pi_init and expected reward (brief Sec. 5.3)."""
        # pi_init (frozen) was enumerated by set_init: evaluating it reuses that enumeration
        log_probs = self.init_log_probs if model is self.init_model else self._enumerate(model)
        return {
            "win_rate": win_rate_from_weights(log_probs, self.win_weights),
            "expected_reward": expected_reward(log_probs, self.eval_rewards),
        }

    def pool(self, n: int, stream: int) -> Pool:
        raw = sample_prompts(self.cfg.world, n, numpy_rng(self.seed, STREAM_POOL, stream))
        return Pool(self.world.prompt_ids(raw).tolist(), raw=raw)

    def sample(self, model, pool: Pool, k: int, temperature: float, stream: int):
        """k responses per prompt, (N, k, L) as nested lists."""
        w = self.cfg.world
        ids = torch.tensor(pool.ids).repeat_interleave(k, 0).to(next(model.parameters()).device)
        generator = torch_generator(hash((self.seed, STREAM_SAMPLE, stream)) % 2**63)
        responses = sample_toy_responses(
            model, ids, w.n_tokens, w.response_length, temperature, generator
        )
        return responses.cpu().reshape(len(pool.ids), k, -1).tolist()

    def true_rewards(self, pool: Pool, responses) -> torch.Tensor:
        """r*(x, y) of every sampled response, (N, k)."""
        tensor = torch.tensor(responses)  # (N, k, L)
        n, k, _ = tensor.shape
        prompts = pool.raw.repeat_interleave(k, 0)
        return self.world.reward(prompts, tensor.reshape(n * k, -1)).reshape(n, k)

    def iteration_pool(self, iteration: int) -> Pool:
        """Iteration i's fresh prompts (their own RNG stream; shared by every arm)."""
        return self.pool(self.cfg.spa.prompts_per_iteration[iteration - 1], iteration)

    def seed_pairs(self, pi_init) -> Pairs:
        """The human-labelled seed D_0: pool 0, two samples from pi_init, labelled by r*."""
        return self.ground_truth_pairs(
            pi_init, self.cfg.seed_dpo.n_prompts, 0, self.cfg.seed_dpo.temperature
        )

    def full_label_pairs(self, pi_init) -> Pairs:
        """Every prompt of the seed and of all iteration pools, responses from pi_init,
        labelled by r* (the "100% labels" arm)."""
        sizes = [self.cfg.seed_dpo.n_prompts, *self.cfg.spa.prompts_per_iteration]
        parts = [
            self.ground_truth_pairs(pi_init, n, stream, self.cfg.full_label.temperature)
            for stream, n in enumerate(sizes)
        ]
        return Pairs(*(sum((getattr(p, f) for p in parts), []) for f in Pairs.__annotations__))

    def ground_truth_pairs(self, model, n: int, stream: int, temperature: float) -> Pairs:
        """n prompts, 2 samples each from ``model``; identical and tied pairs dropped; the
        higher r* is chosen (the human-labelled seed and the full-label arm)."""
        pool = self.pool(n, stream)
        responses = self.sample(model, pool, 2, temperature, stream)
        reward = self.true_rewards(pool, responses)
        rounded = torch.round(reward, decimals=self.cfg.world.tie_decimals)
        keep = (rounded[:, 0] != rounded[:, 1]).tolist()
        chosen = reward.argmax(-1).tolist()
        rejected = reward.argmin(-1).tolist()
        return pairs_from_labels(pool, responses, chosen, rejected, keep)

    def label_stats(self, chosen_reward: torch.Tensor, rejected_reward: torch.Tensor):
        return label_accuracy(chosen_reward, rejected_reward, self.cfg.world.tie_decimals)


class ChatTask:
    """Brief Sec. 6: chat prompts through a checkpoint's chat template, ``model.generate``
    sampling. Paper scale: UltraFeedback from local disk, generations on held-out prompts
    dumped for AlpacaEval (the GPT-4 judge is external). Real rung (issue 54,
    ``data.source=llamafactory``): SmolLM2-135M-Instruct (or ``model.path``), LLaMA-Factory's
    human pairs (seed and held out) and Alpaca prompts; evaluated on the held-out human pairs
    by each policy's implicit reward against pi_init (a proxy for a GPT-4 judge)."""

    has_true_reward = False
    allowed_tokens = None

    def __init__(self, cfg: Config, seed: int):
        self.cfg, self.seed = cfg, seed
        self.folder = model_folder(cfg)
        self.tokenizer = load_local_tokenizer(self.folder)
        self.pad_id = self.tokenizer.pad_token_id
        self.micro_batch = cfg.data.micro_batch_size
        self.demo = cfg.data.source == "llamafactory"
        if self.demo:
            self.split = split_demo(*demo_files(cfg), cfg.data)
            self.heldout_prompts = [self.encode_messages(p.messages) for p in self.split.heldout]
            self.heldout_pairs = self.encode_pairs(self.split.heldout)
        else:
            self.split = split_rows(load_preference_rows(cfg.data.path), cfg.data)
        self.init_model = None
        self.init_log_probs: torch.Tensor | None = None  # (P, 2): held-out chosen, rejected

    def build_policy(self):
        return load_local_model(self.folder, self.cfg.model.dtype)

    def set_init(self, pi_init) -> None:
        """pi_init's log-probs of the held-out pairs: the reference of every implicit reward."""
        self.init_model = pi_init
        if self.demo:
            self.init_log_probs = self.pair_log_probs(pi_init)

    def encode_messages(self, messages: list[dict[str, str]]) -> list[int]:
        """A conversation through the chat template, ending where the assistant answers; the
        configured system message is added where the conversation has none."""
        system = self.cfg.data.system_prompt
        if system is not None and messages[0]["role"] != "system":
            messages = [{"role": "system", "content": system}, *messages]
        ids = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)[-self.cfg.data.max_prompt_length :]  # keep the end of long prompts

    def encode_prompt(self, text: str) -> list[int]:
        return self.encode_messages([{"role": "user", "content": text}])

    def encode_response(self, text: str, prompt_length: int) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ids = ids + [self.tokenizer.eos_token_id]
        return ids[: max(1, self.cfg.data.max_length - prompt_length)]

    def encode_pairs(self, pairs) -> Pairs:
        prompts, chosen, rejected = [], [], []
        for pair in pairs:
            p = self.encode_messages(pair.messages)
            prompts.append(p)
            chosen.append(self.encode_response(pair.chosen, len(p)))
            rejected.append(self.encode_response(pair.rejected, len(p)))
        return Pairs(prompts, chosen, rejected)

    def seed_pairs(self, pi_init) -> Pairs:
        """The seed D_0 with its human labels (UltraFeedback rows, or the demo's pairs)."""
        if self.demo:
            return self.encode_pairs(self.split.seed)
        prompts, chosen, rejected = [], [], []
        for row in self.split.seed:
            p = self.encode_prompt(row.prompt)
            prompts.append(p)
            chosen.append(self.encode_response(row.chosen, len(p)))
            rejected.append(self.encode_response(row.rejected, len(p)))
        return Pairs(prompts, chosen, rejected)

    def iteration_pool(self, iteration: int) -> Pool:
        texts = self.split.pools[iteration - 1]
        return Pool([self.encode_prompt(t) for t in texts], texts=texts)

    @torch.no_grad()
    def sample(self, model, pool: Pool, k: int, temperature: float, stream: int):
        """k sampled responses per prompt with ``model.generate`` (T, top-p, max_new_tokens)."""
        s = self.cfg.spa
        device = next(model.parameters()).device
        eos = self.tokenizer.eos_token_id
        model.eval()
        torch.manual_seed(hash((self.seed, STREAM_SAMPLE, stream)) % 2**63)
        out: list[list[list[int]]] = []
        starts = tqdm(  # sampling a pool takes minutes on a CPU: show it
            range(0, len(pool.ids), self.micro_batch),
            desc=f"sample it{stream} s{self.seed}",
            leave=False,
            disable=not self.cfg.runtime.progress,
        )
        for start in starts:
            chunk = pool.ids[start : start + self.micro_batch]
            width = max(map(len, chunk))  # left padding for generation
            ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, p in enumerate(chunk):
                ids[row, width - len(p) :] = torch.tensor(p)
                attention[row, width - len(p) :] = 1
            generated = model.generate(
                input_ids=ids.to(device),
                attention_mask=attention.to(device),
                do_sample=True,
                temperature=temperature,
                top_p=s.top_p,
                max_new_tokens=s.max_new_tokens,
                num_return_sequences=k,
                pad_token_id=self.pad_id,
            )[:, width:].cpu()
            for row in range(len(chunk)):
                samples = []
                for tokens in generated[row * k : (row + 1) * k].tolist():
                    if eos in tokens:
                        tokens = tokens[: tokens.index(eos) + 1]  # keep the eos, drop padding
                    samples.append(tokens or [eos])
                out.append(samples)
        return out

    def pair_log_probs(self, model) -> torch.Tensor:
        """(P, 2) summed log-probs of each held-out pair's chosen and rejected response."""
        pairs = self.heldout_pairs
        both = batched_log_probs(
            model,
            pairs.prompts * 2,
            pairs.chosen + pairs.rejected,
            self.pad_id,
            None,
            self.micro_batch,
        )
        return both.reshape(2, -1).T.double()

    def evaluate(self, model, tag: str, run_dir: Path) -> dict[str, float]:
        """Real rung: the held-out human pairs (:func:`heldout_pair_metrics`) and the mean
        length of responses to the first ``data.eval_prompts`` held-out prompts. Paper scale:
        generations for the held-out prompts, dumped for AlpacaEval (external GPT-4 judge)."""
        if self.demo:
            log_probs = self.init_log_probs if model is self.init_model else None
            if log_probs is None:
                log_probs = self.pair_log_probs(model)
            metrics = heldout_pair_metrics(log_probs, self.init_log_probs, self.cfg.spa.beta)
            prompts = self.heldout_prompts[: self.cfg.data.eval_prompts]
            responses = self.sample(model, Pool(prompts), 1, self.cfg.spa.temperature, 10_000)
            metrics["mean_response_tokens"] = sum(len(r[0]) for r in responses) / len(responses)
            return metrics
        prompts = self.split.heldout
        if not prompts:
            return {"mean_response_tokens": float("nan")}
        pool = Pool([self.encode_prompt(t) for t in prompts], texts=prompts)
        responses = self.sample(model, pool, 1, self.cfg.spa.temperature, stream=10_000)
        texts = [self.tokenizer.decode(r[0], skip_special_tokens=True) for r in responses]
        path = Path(run_dir) / f"alpaca_eval_{tag}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(alpaca_eval_records(prompts, texts, tag), indent=1))
        return {"mean_response_tokens": sum(len(r[0]) for r in responses) / len(responses)}


def heldout_pair_metrics(
    log_probs: torch.Tensor, init_log_probs: torch.Tensor, beta: float
) -> dict[str, float]:
    """A policy on held-out human pairs, from summed log-probs (P, 2) of (chosen, rejected)
    under it and under pi_init:

    * ``heldout_acc``: the share of pairs whose implicit reward r = beta [log pi - log pi_init]
      (paper Eq. 7, the judge SPA labels with) prefers the human-chosen response, ties half
      (pi_init itself ties every pair: 0.5);
    * ``reward_margin``: the mean r(chosen) - r(rejected), the same comparison on a continuous
      scale (paired: one number per pair);
    * ``loglik_margin``: the mean log pi(chosen) - log pi(rejected) of the policy alone.
    """
    reward = beta * (log_probs - init_log_probs)  # (P, 2)
    difference = reward[:, 0] - reward[:, 1]
    wins = (difference > 0).double() + 0.5 * (difference == 0).double()
    return {
        "heldout_acc": float(wins.mean()),
        "reward_margin": float(difference.mean()),
        "loglik_margin": float((log_probs[:, 0] - log_probs[:, 1]).mean()),
    }


def model_folder(cfg: Config) -> Path:
    """pi_init's folder: ``model.path``, else the pinned model asset (verified)."""
    if cfg.model.path is not None:
        return Path(cfg.model.path).expanduser()
    from shared import pretrained

    return pretrained.model_folder()


def demo_files(cfg: Config) -> tuple[list, list[str]]:
    """(pairs, instructions) of LLaMA-Factory's demo layout: ``data.path``'s two files, or the
    pinned asset's (its record counts checked beside its sha256)."""
    if cfg.data.path is not None:
        folder = Path(cfg.data.path).expanduser()
        return load_demo_pairs(folder / DEMO_PAIRS_FILE), load_instructions(
            folder / DEMO_PROMPTS_FILE
        )
    from shared import assets

    files = assets.require(cfg.data.asset)
    return (
        load_demo_pairs(files[DEMO_PAIRS_FILE], expected=DEMO_PAIR_RECORDS),
        load_instructions(files[DEMO_PROMPTS_FILE], expected=DEMO_PROMPT_RECORDS),
    )
