"""How sure is the real rung's held-out comparison? (issue 54)

The real rung scores every model on the 94 held-out human pairs by one number, the share of
pairs whose implicit reward against pi_init prefers the human-chosen answer. Its claims compare
those shares between arms (SPA against DPO-on-seed by 0.02, SPA against SPA-noSR within 0.03).
This experiment reloads the run's final policies from its run folder (``checkpoint.pt`` of the
seed DPO and of each arm's last iteration), scores each held-out pair again, checks that the
accuracies equal the run's (``results/real.json``: a reproduction of the scoring), and, pair by
pair, measures each comparison's resolution: the paired difference with a bootstrap 95 %
interval over pairs, and the exact two-sided sign test on the discordant pairs (McNemar).

The rung's iterations are small beside its seed (64 prompts each after 100 seed pairs; the
paper's first iteration has 8K prompts after a 2K seed, four times as many). The experiment
that the gain claim's failure asks for (``--ratio-run``) runs one iteration at the paper's
ratio, 400 prompts (:data:`PAPER_RATIO`), from the same pi_0 (its run folder starts with a
copy of the rung's ``runs/base-s0``, whose checkpoint the loop resumes), self-judged (SPA)
and coin-flipped (the control), and scores it the same way. Its rule, fixed before it ran
(:func:`ratio_word`): ``protocol`` when SPA gains at least the claim's +0.02 over DPO-on-seed
with the interval's low end above 0, ``method`` when the interval's high end is below +0.02,
``open`` otherwise.

    python -m papers.spa.train scale=real hydra.run.dir=outputs/spa/real   # the run (~1.5 h)
    mkdir -p outputs/spa/ratio/runs && cp -r outputs/spa/real/runs/base-s0 outputs/spa/ratio/runs/
    python -m papers.spa.train scale=real hydra.run.dir=outputs/spa/ratio \
        'data.iteration_sizes=[400]' 'spa.lambdas=[0.5]' 'methods=[sft,dpo_seed,spa,coin_flip]'
    python -m papers.spa.diagnose --run outputs/spa/real --ratio-run outputs/spa/ratio --write
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import binomtest

from papers.spa.claims import GAIN_CLAIM, REAL_CLAIMS
from papers.spa.tasks import ChatTask
from shared.checkpoint import load_checkpoint
from shared.config import REAL_SCALE, compose
from shared.diagnosis import cpu_seconds, write_evidence
from shared.entry import RESULT_NAME
from shared.findings import results_file
from shared.records import read_json
from shared.seeding import numpy_rng

SLUG = "spa"
ARMS = ("spa", "spa_nosr", "coin_flip")
# (arm, baseline) comparisons of REAL_CLAIMS
COMPARISONS = (("spa", "dpo_seed"), ("spa", "spa_nosr"), ("coin_flip", "dpo_seed"))
# One iteration at the paper's ratio of fresh prompts to seed pairs (8K after 2K: x4), with the
# paper's first-iteration lambda; SPA and the coin-flip control (the run's overrides).
PAPER_RATIO = (
    "data.iteration_sizes=[400]",
    "spa.lambdas=[0.5]",
    "methods=[sft,dpo_seed,spa,coin_flip]",
)
RATIO_ARMS = ("spa", "coin_flip")
RATIO_COMPARISONS = (("spa", "dpo_seed"), ("coin_flip", "dpo_seed"), ("spa", "coin_flip"))
RATIO_PREFIX = "ratio_"  # the ratio experiment's numbers, beside the rung's
RUN_RECORD_KEYS = ("git_commit", "command", "wall_time_s", "cpu_time_s", "metrics")
# the gain claim's bar (SPA - DPO-on-seed >= 0.02), read from the claim itself
(CLAIM_GAIN,) = [c.comparator.margin for c in REAL_CLAIMS if c.name == GAIN_CLAIM]
BOOTSTRAP_DRAWS = 10_000
BOOTSTRAP_STREAM = 54  # numpy_rng(seed, stream): the resampling's own draws


def checkpoints(
    run: Path,
    seed: int,
    iterations: int,
    only: tuple[str, ...] = (),
    arms: tuple[str, ...] = ARMS,
) -> dict[str, Path]:
    """The run's final policies: pi_0 (the seed DPO's) and each arm's last iteration's
    (``only``: just those)."""
    found = {"dpo_seed": run / "runs" / f"base-s{seed}" / "seed_dpo" / "checkpoint.pt"}
    for arm in arms:
        found[arm] = run / "runs" / f"{arm}-s{seed}" / f"iter{iterations}" / "checkpoint.pt"
    if only:
        found = {name: path for name, path in found.items() if name in only}
    missing = [str(p) for p in found.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"the run folder lacks {missing} (run scale=real there first)")
    return found


def pair_wins(log_probs: torch.Tensor, init_log_probs: torch.Tensor) -> np.ndarray:
    """Per held-out pair: 1 when the implicit reward prefers the chosen answer, 0 when the
    rejected, 0.5 on a tie (beta > 0 does not change the sign)."""
    difference = (log_probs - init_log_probs) @ torch.tensor([1.0, -1.0], dtype=torch.float64)
    return ((difference > 0).double() + 0.5 * (difference == 0).double()).numpy()


def pair_margins(log_probs: torch.Tensor, init_log_probs: torch.Tensor, beta: float) -> np.ndarray:
    """Per held-out pair: the implicit reward margin r(chosen) - r(rejected)."""
    return (
        beta * (log_probs - init_log_probs) @ torch.tensor([1.0, -1.0], dtype=torch.float64)
    ).numpy()


def compare(wins: np.ndarray, baseline: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
    """Paired comparison of two arms on the same pairs: the accuracy difference, its bootstrap
    95 % interval (pairs resampled), and the exact sign test on the pairs where they disagree."""
    difference = wins - baseline
    draws = rng.integers(0, len(wins), (BOOTSTRAP_DRAWS, len(wins)))
    resampled = difference[draws].mean(1)
    better, worse = int((difference > 0).sum()), int((difference < 0).sum())
    p_value = binomtest(better, better + worse).pvalue if better + worse else 1.0
    return {
        "difference": float(difference.mean()),
        "ci_low": float(np.quantile(resampled, 0.025)),
        "ci_high": float(np.quantile(resampled, 0.975)),
        "better": better,
        "worse": worse,
        "sign_test_p": float(p_value),
    }


def run(
    run_dir: Path,
    seed: int,
    overrides: tuple[str, ...] = (),
    scale: str = REAL_SCALE,
    cache: Path | None = None,
    only: tuple[str, ...] = (),
    arms: tuple[str, ...] = ARMS,
    comparisons: tuple[tuple[str, str], ...] = COMPARISONS,
) -> tuple[dict, dict]:
    """(numbers, details): each model's held-out accuracy and each comparison's resolution.
    ``overrides`` and ``scale`` are the run's (tests: a tiny paper-scale run); ``arms`` the
    iterated methods it ran. ``cache`` keeps each model's scores (a later call reuses them);
    ``only`` scores just those models (while the run still trains the others) and returns
    nothing."""
    cfg = compose(SLUG, scale, [f"seeds=[{seed}]", *overrides])
    paths = checkpoints(run_dir, seed, len(cfg.spa.lambdas), only, arms)
    task = ChatTask(cfg, seed)
    log_probs = {}  # model -> (P, 2) held-out log-probs, cached beside the run when asked

    def scored(name: str, path: Path | None) -> torch.Tensor:
        cached = cache / f"{name}.pt" if cache is not None else None
        if cached is not None and cached.is_file():
            return torch.load(cached, weights_only=True)
        policy = task.build_policy()
        if path is not None:
            policy.load_state_dict(load_checkpoint(path)["model"])
        found = task.pair_log_probs(policy.eval())
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            torch.save(found, cached)
        return found

    log_probs["sft"] = scored("sft", None)
    for name, path in paths.items():
        log_probs[name] = scored(name, path)
    if only:
        return {}, {}
    wins = {name: pair_wins(lp, log_probs["sft"]) for name, lp in log_probs.items()}
    margins = {
        name: pair_margins(lp, log_probs["sft"], cfg.spa.beta) for name, lp in log_probs.items()
    }
    numbers: dict[str, float] = {"heldout_pairs": len(wins["sft"])}
    numbers.update({f"acc_{name}": float(w.mean()) for name, w in wins.items()})
    numbers.update({f"margin_{name}": float(m.mean()) for name, m in margins.items()})
    rng = numpy_rng(seed, BOOTSTRAP_STREAM)
    for arm, baseline in comparisons:
        for key, value in compare(wins[arm], wins[baseline], rng).items():
            numbers[f"{arm}_vs_{baseline}_{key}"] = value
        # the same pairs on the continuous scale: the reward margin r(chosen) - r(rejected)
        for key, value in compare(margins[arm], margins[baseline], rng).items():
            if key in ("difference", "ci_low", "ci_high", "sign_test_p"):
                numbers[f"{arm}_vs_{baseline}_margin_{key}"] = value
    details = {
        "per_pair_wins": {k: w.tolist() for k, w in wins.items()},
        "per_pair_reward_margins": {k: m.tolist() for k, m in margins.items()},
    }
    return numbers, details


def agreement(numbers: dict[str, float], record: dict, seed: int) -> float:
    """The largest gap between the rescored accuracies and the run record's (``real.json`` or
    a run folder's ``result.json``; 0: the same)."""
    metrics = record["metrics"]
    gaps = [
        abs(numbers[f"acc_{name}"] - metrics[name]["heldout_acc"]["per_seed"][str(seed)])
        for name in metrics
        if f"acc_{name}" in numbers
    ]
    return max(gaps)


def ratio_word(numbers: dict[str, float]) -> str:
    """The diagnosis of the gain claim that the paper-ratio iteration settles (rule fixed
    before it ran): ``protocol`` when SPA gains at least the claim's bar over DPO-on-seed with
    the bootstrap interval above 0, ``method`` when the interval excludes the bar, else
    ``open``."""
    key = f"{RATIO_PREFIX}spa_vs_dpo_seed"
    if numbers[f"{key}_difference"] >= CLAIM_GAIN and numbers[f"{key}_ci_low"] > 0:
        return "protocol"
    if numbers[f"{key}_ci_high"] < CLAIM_GAIN:
        return "method"
    return "open"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="the scale=real run folder (checkpoints)")
    parser.add_argument("--seed", type=int, default=0, help="the real rung's seed (REAL_SEEDS)")
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    parser.add_argument("--cache", help="a folder keeping each model's scores between calls")
    parser.add_argument("--only", nargs="+", default=[], help="score just these models")
    parser.add_argument(
        "--ratio-run", help="the paper-ratio iteration's run folder (PAPER_RATIO's overrides)"
    )
    args = parser.parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())
    cache = Path(args.cache) if args.cache else None
    numbers, details = run(Path(args.run), args.seed, cache=cache, only=tuple(args.only))
    if args.ratio_run:
        ratio_run = Path(args.ratio_run)
        found, found_details = run(
            ratio_run,
            args.seed,
            PAPER_RATIO,
            cache=cache / "ratio" if cache is not None else None,
            only=tuple(args.only),
            arms=RATIO_ARMS,
            comparisons=RATIO_COMPARISONS,
        )
        ratio_record = read_json(ratio_run / RESULT_NAME)
        if found:  # the rescoring against the ratio run's own record
            found["max_gap_to_run"] = agreement(found, ratio_record, args.seed)
        numbers.update({RATIO_PREFIX + key: value for key, value in found.items()})
        details["paper_ratio"] = {
            "overrides": list(PAPER_RATIO),
            # the run's own record: which commit trained it, its cost and its table
            **{key: ratio_record[key] for key in RUN_RECORD_KEYS},
            **found_details,
        }
    if args.only:
        return 0
    real = results_file(SLUG, "real.json")
    if real is not None:
        numbers["max_gap_to_run"] = agreement(numbers, real, args.seed)
    for key, value in numbers.items():
        print(f"{key}: {value:.4g}")
    if args.ratio_run:
        print(f"the paper-ratio iteration's rule says: {ratio_word(numbers)}")
    if args.write:
        ratio = f" --ratio-run {args.ratio_run}" if args.ratio_run else ""
        command = f"python -m papers.spa.diagnose --run {args.run}{ratio} --write"
        print(write_evidence(SLUG, numbers, command, started, details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
