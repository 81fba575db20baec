"""SPA experiment: ``python -m papers.spa.train [scale=smoke|toy|paper] [key=value ...]``.

Per seed (shared by every arm): pi_init (toy: SFT of a tiny GPT-2; paper: a local
checkpoint), the seed D_0 and pi_0 = DPO on it (brief Sec. 3.1). Per (method, seed), from
pi_0: the SPA iterations (Sec. 3.2) with the judge of the method

* ``spa``: implicit reward of pi_{i-1} against pi_init, self-refinement loss (Sec. 3.3);
* ``spa_nosr``: the same labels, alpha = 0 (plain DPO on self-labels);
* ``oracle``: the true reward r* labels the pairs (upper bound of the loop);
* ``coin_flip``: a fair coin labels them (negative control);

and ``full_label``: DPO from pi_init on every prompt labelled by r* (the "100% labels" row).
``sft`` and ``dpo_seed`` evaluate pi_init and pi_0. Toy metrics are exact (enumeration).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from papers.spa.claims import LABELS, REAL_LABELS, REAL_PLOT
from papers.spa.config import JUDGE_REFERENCES, Config, OptimConfig
from papers.spa.method import (
    RollingThreshold,
    distinct_pairs,
    dpo_loss,
    dpo_margin,
    extrapolated_logits,
    flag_lowest_margins,
    in_warmup,
    judge_pairs,
    self_refinement_loss,
    sequence_log_probs,
)
from papers.spa.model import batched_log_probs, collate, forward_logits
from papers.spa.tasks import ChatTask, Pairs, ToyTask, pairs_from_labels
from shared import pretrained
from shared.entry import main
from shared.experiment import RunOutput, check_names, run_grid
from shared.logger import MetricsLogger
from shared.loop import fit
from shared.plotting import plt
from shared.preflight import missing_model_folders, missing_paths
from shared.records import Results
from shared.runtime import make_accelerator
from shared.seeding import numpy_rng, torch_generator

METHODS = ("sft", "dpo_seed", "spa", "spa_nosr", "oracle", "coin_flip", "full_label")
ITERATING = ("spa", "spa_nosr", "oracle", "coin_flip")
PAPER_METHODS = ("sft", "dpo_seed", "spa", "spa_nosr", "coin_flip")  # no r* at paper scale
DEMO_ASSET = "llamafactory_demo"  # LLaMA-Factory's human pairs and Alpaca prompts (issue 54)
REAL_ASSETS = (pretrained.MODEL_ASSET, DEMO_ASSET)
STREAM_ORDER, STREAM_COIN = 6, 7
CURVE_METRICS = ("win_rate", "heldout_acc")  # the toy's, the real rung's


class Runtime:
    """What every training stage needs besides its data: accelerator, loop, logger."""

    def __init__(self, cfg: Config, out_dir: Path):
        self.cfg = cfg
        self.accelerator = make_accelerator(cfg.runtime)
        self.logger = MetricsLogger(
            out_dir / "metrics.jsonl", cfg.loop.console_every_s, self.accelerator.is_main_process
        )


def make_optimizer(parameters, optim: OptimConfig, total_steps: int):
    """Adam(W) with a constant or warm-up + cosine schedule (paper: AdamW, cosine, 0.1)."""
    kind = torch.optim.AdamW if optim.name == "adamw" else torch.optim.Adam
    optimizer = kind(parameters, lr=optim.lr, weight_decay=optim.weight_decay, foreach=True)
    if optim.schedule == "cosine":
        warmup = math.ceil(optim.warmup_ratio * total_steps)
        schedule = get_cosine_schedule_with_warmup(optimizer, warmup, total_steps)
    else:  # constant (optim.name and optim.schedule are checked by the schema's choices)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    return optimizer, schedule


def release_stage(accelerator) -> None:
    """After a training stage: ``free_memory`` drops the accelerator's references to the
    stage's model and optimizer and empties the GPU cache. On CPU it would only add a full
    ``gc.collect()`` over every object of the process (~0.2 CPU s a call, ~9 CPU s of a toy
    run); the few tiny toy models the accelerator then keeps referenced go with the run."""
    if accelerator.device.type != "cpu":
        accelerator.free_memory()


def frozen(model):
    """A frozen copy (the reference pi_{i-1}, or pi_init for the judge)."""
    copy_ = copy.deepcopy(model).eval()
    for parameter in copy_.parameters():
        parameter.requires_grad_(False)
    return copy_


# ------------------------------------------------------------------ training stages


def train_sft(task: ToyTask, model, run_dir: Path, rt: Runtime, seed: int):
    """Toy pi_init: maximum likelihood on the behaviour responses (brief Sec. 5.2)."""
    cfg = rt.cfg
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.sft.lr, foreach=True)
    model, optimizer = rt.accelerator.prepare(model, optimizer)
    length = cfg.world.response_length

    def compute_loss(m, batch):
        ids, attention, response = collate(*batch, task.pad_id)
        logits = forward_logits(m, ids, attention)
        log_probs = sequence_log_probs(logits, ids.to(logits.device), response, task.allowed_tokens)
        return -log_probs.mean() / length, {}  # per-token cross-entropy

    fit(
        model=model,
        optimizer=optimizer,
        accelerator=rt.accelerator,
        max_steps=cfg.sft.steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=task.sft_batch,
        compute_loss=compute_loss,
        logger=rt.logger,
        tags={"method": "base", "seed": seed, "stage": "sft"},
        progress=cfg.runtime.progress,
        desc=f"sft s{seed}",
    )
    release_stage(rt.accelerator)
    return rt.accelerator.unwrap_model(model)


def train_on_pairs(
    policy,
    reference,
    pairs: Pairs,
    task,
    *,
    optim: OptimConfig,
    beta: float,
    alpha: float,
    decouple_lambda: float,
    run_dir: Path,
    rt: Runtime,
    tags: dict,
    order_seed: tuple[int, ...],
):
    """DPO (alpha = 0) or the self-refinement loss (brief Sec. 3.3) on labelled pairs.

    Per minibatch: summed log-probs of chosen and rejected under the policy (with grad) and
    the reference (no grad); the margin h; with alpha > 0 the extrapolated logits' margin
    h_g (no grad) flags the lowest-confidence pairs (per minibatch or rolling window), which
    get label smoothing alpha, except during the first ``warmup_fraction`` of the steps.
    """
    cfg, accelerator = rt.cfg, rt.accelerator
    s = cfg.spa
    n = len(pairs)
    if n == 0:
        return policy
    per_epoch = math.ceil(n / optim.batch_size)
    total_steps = per_epoch * optim.epochs
    orders = [numpy_rng(*order_seed, epoch).permutation(n) for epoch in range(optim.epochs)]
    optimizer, schedule = make_optimizer(policy.parameters(), optim, total_steps)
    stateful = {"schedule": schedule}
    rolling = RollingThreshold(s.flag_fraction, s.threshold_window)
    if s.threshold == "rolling":
        stateful["threshold"] = rolling
    policy, optimizer = accelerator.prepare(policy, optimizer)
    reference = reference.to(accelerator.device)
    world, rank = accelerator.num_processes, accelerator.process_index

    def next_batch(step: int):
        epoch, index = divmod(step - 1, per_epoch)
        rows = orders[epoch][index * optim.batch_size : (index + 1) * optim.batch_size]
        return step, rows[rank::world].tolist()  # this process's share of the minibatch

    def compute_loss(model, batch):
        step, rows = batch
        size = len(rows)
        prompts = [pairs.prompts[i] for i in rows] * 2
        responses = [pairs.chosen[i] for i in rows] + [pairs.rejected[i] for i in rows]
        ids, attention, response = collate(prompts, responses, task.pad_id)
        z_theta = forward_logits(model, ids, attention)  # (2B, T, V)
        ids, response = ids.to(z_theta.device), response.to(z_theta.device)
        allowed = task.allowed_tokens
        with torch.no_grad():
            z_ref = forward_logits(reference, ids, attention)
            log_ref = sequence_log_probs(z_ref, ids, response, allowed)
        log_policy = sequence_log_probs(z_theta, ids, response, allowed)
        h = dpo_margin(log_policy[:size], log_policy[size:], log_ref[:size], log_ref[size:])
        aux = {"margin": float(h.detach().mean()), "pair_accuracy": float((h > 0).float().mean())}
        if alpha == 0.0:  # SPA-noSR and (seed) DPO: the plain sigmoid loss
            return dpo_loss(h, beta).mean(), aux
        with torch.no_grad():  # de-coupled noise detection, paper Eq. (12)
            z_g = extrapolated_logits(z_theta.detach(), z_ref, decouple_lambda)
            log_g = sequence_log_probs(z_g, ids, response, allowed)
            h_g = dpo_margin(log_g[:size], log_g[size:], log_ref[:size], log_ref[size:])
            warm = in_warmup(step, total_steps, s.warmup_fraction)
            if s.threshold == "rolling":
                flagged = rolling.flag(beta * h_g, warm)
            else:
                flagged = flag_lowest_margins(beta * h_g, s.flag_fraction, warm)
        aux["flagged"] = float(flagged.float().mean())
        loss = self_refinement_loss(h, flagged, beta, 0.0 if warm else alpha)
        return loss.mean(), aux

    fit(
        model=policy,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=total_steps,
        loop=cfg.loop,
        run_dir=run_dir,
        next_batch=next_batch,
        compute_loss=compute_loss,
        after_step=lambda step, batch, aux: schedule.step(),
        stateful=stateful,
        logger=rt.logger,
        tags=tags,
        progress=cfg.runtime.progress,
        desc=f"{tags['method']} {tags['stage']} s{tags['seed']}",
    )
    release_stage(accelerator)
    return accelerator.unwrap_model(policy)


# ------------------------------------------------------------------ the SPA iterations


def judge_reference_model(kind: str, pi_init, before_policy):
    """The judge's reference: SPA's pi_init; ``previous``, the model pi_{i-1} was trained from
    (pi_{i-2}; pi_init at iteration 1: our reading of Table 7's "previous-iteration model",
    README Deviations); ``none``, no reference (None)."""
    if kind == "init":
        return pi_init
    if kind == "previous":
        return before_policy
    if kind == "none":
        return None
    raise ValueError(f"spa.judge_reference must be one of {JUDGE_REFERENCES}, got {kind!r}")


def judge(method: str, task, policy, reference, pool, responses, seed: int, iteration: int):
    """Label each prompt's K responses: (chosen, rejected, keep) per prompt.

    SPA: direct preference judgment with r_i = beta [log pi_{i-1} - log reference] (paper Eq.
    7-8), the reference being pi_init (SPA), the model before pi_{i-1}, or None (no reference:
    r_i = beta log pi_{i-1}; paper Table 7); oracle: the true reward (tied pairs dropped);
    coin flip: a fair coin. Identical pairs are dropped for every judge (brief Sec. 3.5).
    """
    s = task.cfg.spa
    k = s.samples_per_prompt
    keep = distinct_pairs(_padded(responses))
    if method in ("spa", "spa_nosr"):
        prompts = [p for p in pool.ids for _ in range(k)]
        flat = [r for rs in responses for r in rs]
        args = (prompts, flat, task.pad_id, task.allowed_tokens, task.micro_batch)
        log_policy = batched_log_probs(policy, *args).reshape(-1, k)
        if reference is None:
            log_reference = torch.zeros_like(log_policy)
        else:
            log_reference = batched_log_probs(reference, *args).reshape(-1, k)
        chosen, rejected = judge_pairs(log_policy, log_reference, s.beta)
    elif method == "oracle":
        reward = task.true_rewards(pool, responses)
        chosen, rejected = reward.argmax(-1), reward.argmin(-1)
        decimals = task.cfg.world.tie_decimals
        keep &= torch.round(reward.max(-1).values, decimals=decimals) != torch.round(
            reward.min(-1).values, decimals=decimals
        )
    elif method == "coin_flip":
        generator = torch_generator(hash((seed, STREAM_COIN, iteration)) % 2**63)
        order = torch.argsort(torch.rand(len(responses), k, generator=generator), dim=-1)
        chosen, rejected = order[:, 0], order[:, -1]
    else:
        raise ValueError(f"{method!r} has no judge")
    return chosen.tolist(), rejected.tolist(), keep.tolist()


def _padded(responses) -> torch.Tensor:
    """(N, K, L_max) tensor of responses, padded with -1, for comparing samples."""
    width = max(len(r) for rs in responses for r in rs)
    return torch.tensor([[r + [-1] * (width - len(r)) for r in rs] for rs in responses])


def run_iterations(method, task, pi_init, pi_0, eval_0, run_dir, rt: Runtime, seed: int):
    """Iterations i = 1..T from pi_0: sample from pi_{i-1}, judge, train from pi_{i-1} with
    reference pi_{i-1} on the new pairs only (brief Sec. 3.2)."""
    cfg = rt.cfg
    s = cfg.spa
    policy = copy.deepcopy(pi_0)
    before_policy = pi_init  # the model pi_{i-1} was trained from (pi_0's is pi_init)
    metrics = {f"{k}_it0": v for k, v in eval_0.items()}
    for iteration, decouple_lambda in enumerate(s.lambdas, start=1):
        pool = task.iteration_pool(iteration)
        responses = task.sample(policy, pool, s.samples_per_prompt, s.temperature, iteration)
        judge_reference = judge_reference_model(s.judge_reference, pi_init, before_policy)
        chosen, rejected, keep = judge(
            method, task, policy, judge_reference, pool, responses, seed, iteration
        )
        pairs = pairs_from_labels(pool, responses, chosen, rejected, keep)
        metrics[f"pairs_it{iteration}"] = float(len(pairs))
        if task.has_true_reward:
            reward = task.true_rewards(pool, responses)
            rows = [i for i, k in enumerate(keep) if k]
            accuracy, ties = task.label_stats(
                reward[rows, [chosen[i] for i in rows]], reward[rows, [rejected[i] for i in rows]]
            )
            metrics[f"judge_acc_it{iteration}"] = accuracy
            metrics[f"ties_it{iteration}"] = float(ties)
        training_reference = frozen(policy)  # pi_{i-1}
        policy = train_on_pairs(
            policy,
            training_reference,
            pairs,
            task,
            optim=s.optim,
            beta=s.beta,
            alpha=0.0 if method == "spa_nosr" else s.alpha,
            decouple_lambda=decouple_lambda,
            run_dir=run_dir / f"iter{iteration}",
            rt=rt,
            tags={"method": method, "seed": seed, "stage": f"iter{iteration}"},
            order_seed=(seed, STREAM_ORDER, iteration),
        )
        before_policy = training_reference
        evaluation = task.evaluate(policy, f"{method}-s{seed}-it{iteration}", run_dir)
        metrics.update({f"{k}_it{iteration}": v for k, v in evaluation.items()})
    last = len(s.lambdas)
    for name in eval_0:
        metrics[name] = metrics[f"{name}_it{last}"]
    if "win_rate" in eval_0:
        metrics["gain"] = metrics["win_rate"] - eval_0["win_rate"]
    return metrics


# ------------------------------------------------------------------ experiment


def make_task(cfg: Config, seed: int):
    return ToyTask(cfg, seed) if cfg.toy else ChatTask(cfg, seed)


def check_config(cfg: Config) -> None:
    check_names("methods", cfg.methods, METHODS if cfg.toy else PAPER_METHODS)
    # the judge reference, the iteration count and the sample count: Config.validate


def preflight(cfg: Config) -> list[str]:
    """Paper scale reads pi_init (and its tokenizer) and UltraFeedback from local disk."""
    hint = " (a local path; nothing is downloaded, see configs/spa/paper.yaml)"
    return missing_model_folders({"model.path": cfg.model.path}, hint) + missing_paths(
        {"data.path": cfg.data.path}, hint
    )


def real_preflight(cfg: Config) -> list[str]:
    """scale=real reads the pinned model and demo sets (``REAL_ASSETS``, verified by the entry
    point): name each setting that points elsewhere."""
    problems = []
    if cfg.model.asset != pretrained.MODEL_ASSET or cfg.model.path is not None:
        problems.append(
            f"model.asset={cfg.model.asset!r} model.path={cfg.model.path!r}: scale=real runs "
            f"{pretrained.MODEL_ASSET} (model.path null)"
        )
    if cfg.data.source != "llamafactory" or cfg.data.asset != DEMO_ASSET:
        problems.append(
            f"data.source={cfg.data.source!r} data.asset={cfg.data.asset!r}: scale=real reads "
            f"the {DEMO_ASSET} asset (data.source=llamafactory)"
        )
    if cfg.data.path is not None:  # the real claims are about the pinned pairs
        problems.append(
            f"data.path={cfg.data.path}: scale=real reads the pinned pairs; your own folder in "
            "the same layout runs at scale=paper (README: Real data)"
        )
    return problems


def run(cfg: Config, out_dir: Path) -> Results:
    check_config(cfg)
    out_dir = Path(out_dir)
    rt = Runtime(cfg, out_dir)
    bases: dict[int, tuple] = {}

    def base(seed: int):
        """pi_init and pi_0 of a seed, shared by every arm (brief Sec. 5.2)."""
        if seed not in bases:
            task = make_task(cfg, seed)
            base_dir = out_dir / "runs" / f"base-s{seed}"
            pi_init = task.build_policy()
            if isinstance(task, ToyTask):
                pi_init = train_sft(task, pi_init, base_dir / "sft", rt, seed)
            pi_init = frozen(pi_init).to(rt.accelerator.device)
            task.set_init(pi_init)
            eval_init = task.evaluate(pi_init, f"sft-s{seed}", base_dir)
            seed_pairs = task.seed_pairs(pi_init)
            pi_0 = train_on_pairs(
                copy.deepcopy(pi_init).train().requires_grad_(True),
                pi_init,
                seed_pairs,
                task,
                optim=cfg.seed_dpo.optim,
                beta=cfg.seed_dpo.beta,
                alpha=0.0,  # the seed stage is plain DPO (official initial config)
                decouple_lambda=0.0,
                run_dir=base_dir / "seed_dpo",
                rt=rt,
                tags={"method": "base", "seed": seed, "stage": "seed_dpo"},
                order_seed=(seed, STREAM_ORDER, 0),
            )
            eval_0 = task.evaluate(pi_0, f"dpo_seed-s{seed}", base_dir)
            bases[seed] = (task, pi_init, pi_0, eval_init, eval_0, len(seed_pairs))
        return bases[seed]

    def train_one(method: str, seed: int, run_dir: Path) -> RunOutput:
        task, pi_init, pi_0, eval_init, eval_0, n_seed = base(seed)
        if method == "sft":
            return RunOutput(dict(eval_init))
        if method == "dpo_seed":
            return RunOutput({**eval_0, "pairs": float(n_seed)})
        if method == "full_label":
            pairs = task.full_label_pairs(pi_init)
            policy = train_on_pairs(
                copy.deepcopy(pi_init).train().requires_grad_(True),
                pi_init,
                pairs,
                task,
                optim=cfg.full_label.optim,
                beta=cfg.seed_dpo.beta,
                alpha=0.0,
                decouple_lambda=0.0,
                run_dir=run_dir,
                rt=rt,
                tags={"method": method, "seed": seed, "stage": "dpo"},
                order_seed=(seed, STREAM_ORDER, 100),
            )
            metrics = task.evaluate(policy, f"full_label-s{seed}", run_dir)
            metrics["gain"] = metrics["win_rate"] - eval_0["win_rate"]
            return RunOutput({**metrics, "pairs": float(len(pairs))})
        metrics = run_iterations(method, task, pi_init, pi_0, eval_0, run_dir, rt, seed)
        # the toy's exact win rate, the real rung's held-out pair accuracy, per iteration
        # (paper scale: generations for AlpacaEval, no curve)
        name = CURVE_METRICS[0] if task.has_true_reward else CURVE_METRICS[1]
        if f"{name}_it0" not in metrics:
            return RunOutput(metrics)
        curve = [metrics[f"{name}_it{i}"] for i in range(len(cfg.spa.lambdas) + 1)]
        return RunOutput(metrics, {name: curve})

    if not cfg.toy:  # pi_init and pi_0 first, so forked runs inherit them instead of each
        for seed in cfg.seeds:  # training pi_0 again
            base(seed)

    results, curves = run_grid(
        cfg.methods,
        cfg.seeds,
        out_dir,
        train_one,
        is_main_process=rt.accelerator.is_main_process,
        progress=cfg.runtime.progress,
        logger=rt.logger,
    )
    add_gap_closed(results)
    if rt.accelerator.is_main_process:
        if cfg.toy:
            print_iterations(results, len(cfg.spa.lambdas))
            plot(results, curves, cfg, out_dir / "win_rate.png")
        elif cfg.data.source == "llamafactory":
            plot_heldout(results, curves, cfg, out_dir / REAL_PLOT)
        else:
            plot(results, curves, cfg, out_dir / "win_rate.png")
    return results


def add_gap_closed(results: Results) -> None:
    """Per seed, the share of the DPO-seed -> full-label DPO gap that SPA closes (Sec. 5.4)."""
    if not {"spa", "dpo_seed", "full_label"} <= set(results):
        return
    if "win_rate" not in results["dpo_seed"]:
        return
    seed_wr = np.asarray(results["dpo_seed"]["win_rate"])
    full_wr = np.asarray(results["full_label"]["win_rate"])
    spa_wr = np.asarray(results["spa"]["win_rate"])
    results["spa"]["gap_closed"] = list((spa_wr - seed_wr) / (full_wr - seed_wr))


def print_iterations(results: Results, iterations: int) -> None:
    """Exact win rate and expected reward after each iteration, mean over seeds."""
    print("\nexact win rate vs pi_init / expected reward, mean over seeds, per iteration:")
    for method, metrics in results.items():
        if "win_rate_it0" not in metrics:
            if "win_rate" in metrics:
                wr, er = np.mean(metrics["win_rate"]), np.mean(metrics["expected_reward"])
                print(f"  {LABELS.get(method, method):<38} {wr:.4f} / {er:+.4f}")
            continue
        cells = []
        for i in range(iterations + 1):
            wr = np.mean(metrics[f"win_rate_it{i}"])
            er = np.mean(metrics[f"expected_reward_it{i}"])
            acc = f", judge acc {np.mean(metrics[f'judge_acc_it{i}']):.2f}" if i else ""
            cells.append(f"it{i} {wr:.4f} / {er:+.4f}{acc}")
        print(f"  {LABELS.get(method, method):<38} " + "; ".join(cells))


def plot(results: Results, curves, cfg: Config, path: Path) -> None:
    """Exact win rate against pi_init per iteration, mean ± std over seeds."""
    iterations = np.arange(len(cfg.spa.lambdas) + 1)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    for method, by_name in curves.items():
        if "win_rate" not in by_name:
            continue
        values = np.asarray(by_name["win_rate"])  # (S, T + 1)
        mean, std = values.mean(0), values.std(0)
        (line,) = ax.plot(iterations, mean, marker="o", label=LABELS.get(method, method))
        ax.fill_between(iterations, mean - std, mean + std, color=line.get_color(), alpha=0.15)
    for method, style in (("dpo_seed", ":"), ("full_label", "--"), ("sft", "-.")):
        if method in results and "win_rate" in results[method]:
            ax.axhline(
                np.mean(results[method]["win_rate"]),
                linestyle=style,
                color="grey",
                label=LABELS.get(method, method),
            )
    ax.set_xticks(iterations)
    ax.set_xlabel("SPA iteration (0 = DPO on the seed)")
    ax.set_ylabel("exact win rate vs pi_init")
    ax.set_title(f"SPA toy, mean over seeds {list(cfg.seeds)}")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # paper scale has no exact win rate to draw
        ax.legend(frameon=False, fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_heldout(results: Results, curves, cfg: Config, path: Path) -> None:
    """Real rung: the implicit reward's accuracy on the held-out human pairs per iteration
    (left; DPO on the seed and pi_init as lines) and each model's mean response length
    (right: DPO tends to lengthen answers)."""
    iterations = np.arange(len(cfg.spa.lambdas) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    for method, by_name in curves.items():
        if "heldout_acc" in by_name:
            values = np.asarray(by_name["heldout_acc"]).mean(0)
            left.plot(iterations, values, marker="o", label=REAL_LABELS.get(method, method))
    for method, style in (("dpo_seed", ":"), ("sft", "-.")):
        if method in results:
            mean = np.mean(results[method]["heldout_acc"])
            left.axhline(mean, linestyle=style, color="grey", label=REAL_LABELS.get(method))
    left.set_xticks(iterations)
    left.set_xlabel("SPA iteration (0 = DPO on the seed)")
    left.set_ylabel("held-out human pairs: implicit reward prefers chosen")
    left.grid(alpha=0.3)
    left.legend(frameon=False, fontsize=7)
    names = [m for m in results if "mean_response_tokens" in results[m]]
    right.bar(range(len(names)), [np.mean(results[m]["mean_response_tokens"]) for m in names])
    right.set_xticks(range(len(names)))
    right.set_xticklabels(names, fontsize=7)
    right.set_ylabel(f"mean response tokens (cap {cfg.spa.max_new_tokens})")
    model = Path(cfg.model.path).name if cfg.model.path else "SmolLM2-135M-Instruct"
    fig.suptitle(f"SPA on {model}, LLaMA-Factory's human pairs, seeds {list(cfg.seeds)}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main("spa")
