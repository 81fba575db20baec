"""LeReT experiment: ``python -m papers.leret.train [scale=smoke|toy|paper] [key=value ...]``.

Per seed (shared by every arm): the task (toy: synthetic corpus; paper: local HotpotQA / HoVer
and Wikipedia abstracts), the BM25 retriever, the base query policy (toy: a pointer network
trained on the habit "restate subject and first relation"; paper: a local causal LM), and the
bootstrapped few-shot prompts (brief Sec. 3.3.1). Arms:

* ``base``: the zero-shot base policy, greedy; ``few_shot``: greedy with the best prompt;
* ``leret_cd`` / ``leret``: iterative LeReT (Sec. 3.3-3.4): per iteration, collect on a fresh
  chunk with the 4 prompts, SFT on the top-level queries (LeReT-CD), then IPO from the SFT model
  with it as reference (LeReT); the next iteration samples with the LeReT policy;
* ``temperature_only``: the same loop sampling 8 queries at T = 1 from the zero-shot prompt
  only (Sec. 5.5 ablation);
* ``ipo_flipped``: the LeReT loop with every IPO pair's sign flipped (negative control).

Metrics: recall and AP of the test questions after the last hop (greedy, zero-shot prompt for
trained policies), per iteration.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import torch

from papers.leret.claims import LABELS
from papers.leret.collection import (
    CollectedData,
    Environment,
    HopState,
    bootstrap_prompts,
    collect_iteration,
    retrieval_metrics,
    rollout,
)
from papers.leret.config import LOOP_METHODS, Config, OptimConfig
from papers.leret.data import load_paper_task, make_toy_task
from papers.leret.method import PREFERENCE_LOSSES, preference_margin, sft_loss
from papers.leret.model import (
    Featurizer,
    PointerPolicy,
    ScoreNet,
    smoothed_plackett_luce_loss,
)
from papers.leret.retrieval import TextRetriever, ToyRetriever
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_model_folders, missing_packages, missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng

METHODS = ("base", "few_shot", *LOOP_METHODS)
VARIANTS = {  # keyed by config.LOOP_METHODS
    "leret_cd": "prompts",
    "leret": "prompts",
    "temperature_only": "temperature",
    "ipo_flipped": "flipped",
}
STREAM_INIT, STREAM_PROMPTS, STREAM_COLLECT, STREAM_ORDER, STREAM_HABIT = 10, 11, 12, 13, 14


class Runtime:
    """What every training stage needs besides its data: accelerator, loop, logger."""

    def __init__(self, cfg: Config, out_dir: Path):
        self.cfg = cfg
        self.accelerator = make_accelerator(cfg.runtime)
        self.logger = MetricsLogger(
            out_dir / "metrics.jsonl", cfg.loop.console_every_s, self.accelerator.is_main_process
        )


def frozen(module: torch.nn.Module) -> torch.nn.Module:
    copy_ = copy.deepcopy(module).eval()
    for parameter in copy_.parameters():
        parameter.requires_grad_(False)
    return copy_


# keyed by config.OPTIMIZERS (a test checks the keys)
OPTIMIZER_CLASSES = {"adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}


def make_optimizer(parameters, optim: OptimConfig):
    """Adam (toy) or RMSprop (official config.yaml) with a linear warm-up."""
    optimizer = OPTIMIZER_CLASSES[optim.name](parameters, lr=optim.lr)
    warmup = max(optim.warmup_steps, 0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / (warmup + 1)) if warmup else 1.0
    )
    return optimizer, schedule


def train_stage(
    module: torch.nn.Module,
    n_rows: int,
    loss_of_rows,
    optim: OptimConfig,
    rt: Runtime,
    run_dir: Path,
    tags: dict,
    order_seed: tuple[int, ...],
) -> torch.nn.Module:
    """Minibatch epochs over ``n_rows`` training rows through :func:`shared.loop.fit`
    (checkpoint / resume, progress bar, logging). Returns the trained module."""
    cfg, accelerator = rt.cfg, rt.accelerator
    per_epoch = math.ceil(n_rows / optim.batch_size)
    total = per_epoch * optim.epochs
    orders = [numpy_rng(*order_seed, e).permutation(n_rows) for e in range(optim.epochs)]
    optimizer, schedule = make_optimizer(module.parameters(), optim)
    module, optimizer = accelerator.prepare(module, optimizer)

    def next_batch(step: int):
        epoch, index = divmod(step - 1, per_epoch)
        return orders[epoch][index * optim.batch_size : (index + 1) * optim.batch_size]

    fit(
        model=module,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=total,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=loss_of_rows,
        after_step=lambda step, batch, aux: schedule.step(),
        stateful={"schedule": schedule},
        logger=rt.logger,
        tags=tags,
        progress=cfg.runtime.progress,
        desc=f"{tags['method']} {tags['stage']} s{tags['seed']}",
    )
    accelerator.free_memory()
    return accelerator.unwrap_model(module)


def train_sft(policy, data: CollectedData, rt: Runtime, run_dir: Path, tags, order_seed):
    """LeReT-CD: maximise log pi(sft_target | zero-shot input) (Sec. 3.4.1), from ``policy``."""
    module = copy.deepcopy(policy.module).train().requires_grad_(True)
    if not data.sft_queries:
        return policy.with_module(module)
    encoded = policy.encode(data.sft_states, data.sft_queries)

    def loss_of_rows(model, rows):
        return sft_loss(policy.sequence_log_probs(model, encoded.select(rows))), {}

    module = train_stage(
        module, len(encoded), loss_of_rows, rt.cfg.sft.optim, rt, run_dir, tags, order_seed
    )
    return policy.with_module(module)


def train_preference(
    sft_policy,
    data: CollectedData,
    rt: Runtime,
    run_dir: Path,
    tags,
    order_seed,
    flip: bool = False,
):
    """LeReT: IPO from the SFT model with the SFT model as frozen reference (Sec. 3.4.2).

    The reference log-probs are computed once (the reference never changes). ``flip`` swaps
    every pair (the negative control)."""
    p = rt.cfg.preference
    loss_fn = PREFERENCE_LOSSES[p.loss]
    module = copy.deepcopy(sft_policy.module).train().requires_grad_(True)
    if not data.chosen:
        return sft_policy.with_module(module)
    chosen, rejected = (data.rejected, data.chosen) if flip else (data.chosen, data.rejected)
    enc_w = sft_policy.encode(data.pair_states, chosen)
    enc_l = sft_policy.encode(data.pair_states, rejected)
    reference = frozen(sft_policy.module)
    with torch.no_grad():
        ref_w = torch.cat(
            [
                sft_policy.sequence_log_probs(reference, enc_w.select(r))
                for r in np.array_split(np.arange(len(enc_w)), max(1, len(enc_w) // 256))
            ]
        )
        ref_l = torch.cat(
            [
                sft_policy.sequence_log_probs(reference, enc_l.select(r))
                for r in np.array_split(np.arange(len(enc_l)), max(1, len(enc_l) // 256))
            ]
        )

    def loss_of_rows(model, rows):
        rows_t = torch.as_tensor(rows, dtype=torch.long)
        log_w = sft_policy.sequence_log_probs(model, enc_w.select(rows))
        log_l = sft_policy.sequence_log_probs(model, enc_l.select(rows))
        h = preference_margin(log_w, log_l, ref_w[rows_t].to(log_w), ref_l[rows_t].to(log_l))
        aux = {"margin": float(h.detach().mean()), "pair_accuracy": float((h > 0).float().mean())}
        return loss_fn(h, p.beta).mean(), aux

    module = train_stage(module, len(enc_w), loss_of_rows, p.optim, rt, run_dir, tags, order_seed)
    return sft_policy.with_module(module)


# ------------------------------------------------------------------ the toy's base policy


def train_habit(
    policy: PointerPolicy, env: Environment, questions, rt: Runtime, run_dir: Path, seed: int
) -> PointerPolicy:
    """The toy "instruction-tuned" base: the habit [subject A, first relation r1] at every hop
    (hop-2 context = what the habit retrieves), label-smoothed Plackett-Luce (Sec. 5.4)."""
    cfg = rt.cfg.base
    task = env.task
    states, targets = [], []
    hop_states = [HopState(q, (), 0) for q in questions]
    for hop in range(env.hops):
        habits = [task.questions[s.question].habit_query for s in hop_states]
        states += hop_states
        targets += habits
        after = env.step(hop_states, habits)
        hop_states = [
            HopState(s.question, c, hop + 1) for s, c in zip(hop_states, after, strict=True)
        ]
    encoded = policy.encode(states, targets)
    draws = numpy_rng(seed, STREAM_HABIT)
    batches = [draws.integers(len(encoded), size=cfg.batch_size) for _ in range(cfg.steps)]
    optimizer = torch.optim.Adam(policy.module.parameters(), lr=cfg.lr, foreach=True)
    module, optimizer = rt.accelerator.prepare(policy.module, optimizer)

    def compute_loss(model, rows):
        batch = encoded.select(rows)
        loss = smoothed_plackett_luce_loss(
            model(batch.features), batch.mask, batch.positions, cfg.target_weight
        )
        return loss.mean(), {}

    fit(
        model=module,
        optimizer=optimizer,
        accelerator=rt.accelerator,
        max_steps=cfg.steps,
        loop=rt.cfg.loop,
        run_dir=run_dir,
        next_batch=lambda step: batches[step - 1],
        compute_loss=compute_loss,
        logger=rt.logger,
        tags={"method": "base", "seed": seed, "stage": "habit"},
        progress=rt.cfg.runtime.progress,
        desc=f"base habit s{seed}",
    )
    return policy.with_module(rt.accelerator.unwrap_model(module))


# ------------------------------------------------------------------ one seed


def make_environment(cfg: Config, seed: int) -> Environment:
    r = cfg.retriever
    if cfg.model.path is None:
        task = make_toy_task(cfg.world, seed)
        retriever = ToyRetriever(task.documents, len(task.vocab), r.k1, r.b)
    else:
        task = load_paper_task(cfg.data, seed)
        retriever = TextRetriever(task.documents, r.k1, r.b)
    return Environment(task, retriever, r.top_k, r.hops)


class SeedStudy:
    """Everything one seed's arms share, built on first use: environment, base policy,
    prompts, baseline metrics, and the LeReT loop per sampling variant."""

    def __init__(self, cfg: Config, seed: int, rt: Runtime, out_dir: Path):
        self.cfg, self.seed, self.rt = cfg, seed, rt
        self.shared_dir = out_dir / "runs" / f"shared-s{seed}"
        self.env = make_environment(cfg, seed)
        self.splits = self.env.task.splits
        self.base = self._base_policy()
        p = cfg.prompts
        self.prompts, self.prompt_scores = bootstrap_prompts(
            self.base,
            self.env,
            self.splits.demo,
            self.splits.validation,
            n_keep=p.n_few_shot,
            demos_per_prompt=p.demos_per_prompt,
            n_candidates=p.n_candidates,
            temperature=p.mining_temperature,
            rng=numpy_rng(seed, STREAM_PROMPTS),
        )
        self.baselines = {
            "base": self.evaluate(self.base, None, "base"),
            "few_shot": self.evaluate(self.base, self.prompts[0], "few_shot"),
        }
        self.loops: dict[str, list[dict[str, float]]] = {}

    def _base_policy(self):
        cfg = self.cfg
        if cfg.model.path is not None:
            from papers.leret.lm_policy import CausalLMPolicy

            return CausalLMPolicy.from_pretrained(cfg.model, self.env, cfg.policy.query_length)
        torch.manual_seed(hash((self.seed, STREAM_INIT)) % 2**31)
        featurizer = Featurizer(self.env.task, self.env.hops)
        policy = PointerPolicy(
            ScoreNet(cfg.policy.hidden),
            featurizer,
            cfg.policy.query_length,
            cfg.prompts.prior_weight,
        )
        return train_habit(
            policy, self.env, self.splits.habit, self.rt, self.shared_dir / "habit", self.seed
        )

    def evaluate(self, policy, prompt, tag: str) -> dict[str, float]:
        rollouts = rollout(policy, self.env, self.splits.test, prompt)
        if self.cfg.data.log_contexts:
            self._log_contexts(rollouts, tag)
        return retrieval_metrics(self.env, rollouts)

    def _log_contexts(self, rollouts, tag: str) -> None:
        """Retrieved contexts per test question, for a later generator (Sec. 6)."""
        path = self.shared_dir / f"contexts_{tag}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        docs = self.env.task.documents
        with path.open("w") as f:
            for q, queries, contexts in zip(
                rollouts.questions, rollouts.queries, rollouts.contexts, strict=True
            ):
                question = self.env.task.questions[q].text
                f.write(
                    json.dumps(
                        {
                            "question": question if isinstance(question, str) else list(question),
                            "queries": [q_ if isinstance(q_, str) else list(q_) for q_ in queries],
                            "passages": [docs[d] for d in contexts[-1]],
                        }
                    )
                    + "\n"
                )

    def leret_loop(self, variant: str) -> list[dict[str, float]]:
        """Iterative LeReT (Sec. 3.4.3): per iteration, metrics of LeReT-CD and LeReT."""
        if variant in self.loops:
            return self.loops[variant]
        c = self.cfg.collection
        prompts, n = sampling_plan(variant, self.prompts, c)
        policy, history = self.base, []
        loop_dir = self.shared_dir / f"leret-{variant}"
        for iteration, questions in enumerate(self.splits.iterations, start=1):
            tags = {"method": f"leret-{variant}", "seed": self.seed}
            # Iteration 1's data does not depend on the variant's training: the same stream.
            stream = (self.seed, STREAM_COLLECT, iteration, int(variant == "temperature"))
            data = collect_iteration(
                policy,
                self.env,
                questions,
                prompts,
                n,
                c.temperature,
                c.top_bonus,
                numpy_rng(*stream),
            )
            it_dir = loop_dir / f"it{iteration}"
            sft = train_sft(
                policy,
                data,
                self.rt,
                it_dir / "sft",
                {**tags, "stage": f"sft_it{iteration}"},
                (self.seed, STREAM_ORDER, iteration, 0),
            )
            policy = train_preference(
                sft,
                data,
                self.rt,
                it_dir / "ipo",
                {**tags, "stage": f"ipo_it{iteration}"},
                (self.seed, STREAM_ORDER, iteration, 1),
                flip=variant == "flipped",
            )
            cd_metrics = self.evaluate(sft, None, f"{variant}_cd_it{iteration}")
            metrics = self.evaluate(policy, None, f"{variant}_it{iteration}")
            history.append(
                {
                    **{f"cd_{k}": v for k, v in cd_metrics.items()},
                    **metrics,
                    **{
                        f"best_sampled_ap_hop{h + 1}": data.best_sampled_ap(h)
                        for h in range(self.env.hops)
                    },
                    "pairs": float(len(data.chosen)),
                    "sft_targets": float(len(data.sft_queries)),
                    "skipped_inputs": float(data.skipped),
                }
            )
        self.loops[variant] = history
        return history


def sampling_plan(variant: str, few_shot_prompts: list, collection) -> tuple[list, int]:
    """The prompts a LeReT variant samples with and the queries each draws per hop input.

    ``prompts`` / ``flipped``: the zero-shot prompt and every bootstrapped few-shot prompt,
    ``samples_per_prompt`` each (prompt-driven diversity, Sec. 3.3.2); ``temperature``: the
    zero-shot prompt only, ``temperature_only_samples`` at the same temperature (the Sec. 4
    ablation: no few-shot prompt, the same sample budget in the toy config)."""
    if variant == "temperature":
        return [None], collection.temperature_only_samples
    if variant in ("prompts", "flipped"):
        return [None, *few_shot_prompts], collection.samples_per_prompt
    raise ValueError(f"unknown LeReT variant {variant!r}")


# ------------------------------------------------------------------ experiment


def check_config(cfg: Config) -> None:
    check_names("methods", cfg.methods, METHODS)


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads the query-writing LM, the corpus and the questions from local disk."""
    hint = " (a local path; nothing is downloaded, see configs/leret/paper.yaml)"
    problems = missing_model_folders({"model.path": cfg.model.path}, hint) + missing_paths(
        {
            "data.corpus_path": cfg.data.corpus_path,
            "data.train_path": cfg.data.train_path,
            "data.dev_path": cfg.data.dev_path,
        },
        hint,
    )
    return problems + missing_packages({"bm25s": "pip install bm25s"})


def method_metrics(study: SeedStudy, method: str) -> RunOutput:
    base, few_shot = study.baselines["base"], study.baselines["few_shot"]
    if method == "base":
        return RunOutput(dict(base), {"recall": [base["recall"]]})
    if method == "few_shot":
        metrics = {
            **few_shot,
            "gain_over_base": few_shot["recall"] - base["recall"],
            "prompt_validation_recall": max(study.prompt_scores),
        }
        return RunOutput(metrics, {"recall": [few_shot["recall"]]})
    history = study.leret_loop(VARIANTS[method])
    prefix = "cd_" if method == "leret_cd" else ""
    per_it = {
        f"{name}_it{i}": h[f"{prefix}{name}"]
        for i, h in enumerate(history, start=1)
        for name in ("recall", "ap", "recall_hop1")
    }
    last = history[-1]
    metrics = {name: last[f"{prefix}{name}"] for name in ("recall", "ap", "recall_hop1")}
    metrics.update(per_it)
    if method != "leret_cd":
        metrics["pairs_it1"] = history[0]["pairs"]
        # what the iteration-1 sampler explored: the best sampled AP per hop-2 input
        metrics["best_sampled_ap_hop2_it1"] = history[0].get("best_sampled_ap_hop2", math.nan)
        metrics["gain_over_few_shot"] = metrics["recall"] - few_shot["recall"]
        metrics["gain_over_base"] = metrics["recall"] - base["recall"]
        metrics["margin_over_cd"] = min(h["recall"] - h["cd_recall"] for h in history)
        metrics["last_minus_first"] = history[-1]["recall"] - history[0]["recall"]
    curve = [base["recall"], *(h[f"{prefix}recall"] for h in history)]
    return RunOutput(metrics, {"recall": curve})


def run(cfg: Config, out_dir: Path) -> Results:
    check_config(cfg)
    out_dir = Path(out_dir)
    rt = Runtime(cfg, out_dir)
    studies: dict[int, SeedStudy] = {}

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        if seed not in studies:
            studies[seed] = SeedStudy(cfg, seed, rt, out_dir)
        return method_metrics(studies[seed], method)

    results, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=rt.accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=rt.logger,
    )
    if rt.accelerator.is_main_process:
        print_iterations(results)
        plot(curves, cfg, out_dir / "recall.png")
    return results


def print_iterations(results: Results) -> None:
    """Recall / AP after the last hop, mean over seeds, per LeReT iteration."""
    print("\ntest recall / AP after the last hop, mean over seeds:")
    for method, metrics in results.items():
        label = LABELS.get(method, method)
        if "recall_it1" not in metrics:
            print(f"  {label:<42} {np.mean(metrics['recall']):.3f} / {np.mean(metrics['ap']):.3f}")
            continue
        iterations = sorted(
            int(k[len("recall_it") :]) for k in metrics if k.startswith("recall_it")
        )
        cells = [
            f"it{i} {np.mean(metrics[f'recall_it{i}']):.3f} / {np.mean(metrics[f'ap_it{i}']):.3f}"
            for i in iterations
        ]
        print(f"  {label:<42} " + "; ".join(cells))


def plot(curves, cfg: Config, path: Path) -> None:
    """Test recall after the last hop by method and LeReT iteration (0 = the base policy)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    for method, by_name in curves.items():
        values = np.asarray(by_name["recall"], dtype=float)  # (S, iterations + 1) or (S, 1)
        label = LABELS.get(method, method)
        if values.shape[1] == 1:
            ax.axhline(
                values.mean(),
                linestyle=":" if method == "base" else "--",
                color="grey" if method == "base" else "black",
                label=label,
            )
            continue
        x = np.arange(values.shape[1])
        mean, std = values.mean(0), values.std(0)
        (line,) = ax.plot(x, mean, marker="o", label=label)
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.15)
    ax.set_xticks(
        np.arange(
            len(cfg.world.per_iteration) + 1
            if cfg.model.path is None
            else len(cfg.data.per_iteration) + 1
        )
    )
    ax.set_xlabel("LeReT iteration (0 = base policy)")
    ax.set_ylabel(f"test recall after {cfg.retriever.hops} hops")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"LeReT toy, mean ± std over seeds {list(cfg.seeds)}")
    ax.grid(alpha=0.3)
    ax.legend(frameon=False, fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("leret")
