"""Issue 51: why AdamCB's real claims failed, settled by experiment.

``python -m papers.adamcb.diagnose [--write] [--official-json PATH]``

The first real protocol (``results/real_first.json``: Fashion-MNIST, MLP 784-512-256-10, K = 128,
the official constants, 3 epochs x 4 seeds) found AdamCB level with Adam. Two experiments:

1. **The paper's protocol, with the feedback ablated.** 10 epochs x the five official seeds
   (TJLJT0929/AdamCB@49c2c7f main.py: ``max_iter = 10 * one_epoch``, ``seeds = [10, ..., 50]``)
   for Adam, AdamCB and ``adamcb_no_feedback`` (AdamCB with every normalised gradient norm set
   to 0, ``AdamCBSampler(feedback=False)``). If AdamCB beats Adam there, the failure was the
   protocol's length; if AdamCB equals its ablation, the gradient feedback does nothing.
2. **What the bandit learns in one epoch** (seed 10, 468 steps, recording samplers): the share
   of step 5.2's loss that the feedback term $\\bar g^2 / \\bar p^2$ carries relative to
   $1/p_{\\min}^2$, the median normalised norm $\\bar g$, and the $R^2$ of the log-weights
   regressed on each arm's play count (1 means the weights are a function of the plays).

``--official-json`` reads the output of an instrumented run of the official ``ADAMCB`` loop
on the same arrays (run outside the repo; see the README's "Official code"), whose
per-epoch losses and weight statistics are compared with ours.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from papers.adamcb import train
from papers.adamcb.method import AdamCBSampler, Draw, Norms
from shared.config import REPO_ROOT, compose_dict, to_object
from shared.diagnosis import cpu_seconds, write_evidence
from shared.entry import execute
from shared.logger import MetricsLogger
from shared.records import read_json
from shared.runtime import make_accelerator

SLUG = "adamcb"
PAPER_SEEDS = [10, 20, 30, 40, 50]  # official main.py
PAPER_EPOCHS = 10  # official main.py: max_iter = 10 * (n // K)
PROTOCOL_METHODS = ["adamcb", "adamcb_no_feedback", "adam"]
METRIC = "final_train_ce"  # the real claims' metric (claims.METRIC)
OUT_DIR = REPO_ROOT / "outputs" / SLUG / "diagnose"  # resumable: finished runs are reused


class RecordingAdamCB(AdamCBSampler):
    """AdamCB's sampler that also records, per step, the plays, the normalised norms and the
    feedback term's share of step 5.2's loss, $(\\bar g_j^2/\\bar p_j^2) / (1/p_{\\min}^2)$."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.plays = np.zeros(self.n)  # (n,)
        self.g_bar: list[np.ndarray] = []
        self.share: list[np.ndarray] = []

    def update(self, draw: Draw, grad_norms: Norms) -> None:
        super().update(draw, grad_norms)
        norms = self._check_feedback(draw, grad_norms)  # (K,)
        # the range update() just widened is the one it normalised with
        g_bar = self.norm_range.normalise(norms) if self.feedback else np.zeros_like(norms)
        p_bar = draw.probs[draw.indices]  # (K,)
        self.plays[draw.indices] += 1
        self.g_bar.append(g_bar)
        self.share.append(g_bar**2 * self.p_min**2 / p_bar**2)


def r_squared(y: np.ndarray, x: np.ndarray) -> float:
    """$R^2$ of the least-squares line of ``y`` on ``x`` (both (n,))."""
    design = np.stack([x, np.ones_like(x)], axis=1)  # (n, 2)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    return float(1.0 - residual @ residual / ((y - y.mean()) @ (y - y.mean())))


def real_overrides(epochs: int, seeds: list[int], methods: list[str]) -> list[str]:
    return [
        f"epochs={epochs}",
        f"seeds=[{','.join(map(str, seeds))}]",
        f"methods=[{','.join(methods)}]",
        "runtime.progress=false",
    ]


def paper_protocol(seeds: list[int], epochs: int) -> dict[str, dict[str, dict[int, float]]]:
    """Experiment 1: per method, metric and seed, one real-rung run per seed (seed-major, so
    a run cut short leaves every method with the same seeds). Returns
    ``{method: {metric: {seed: value}}}`` and the per-epoch curves under ``"curves"``."""
    out: dict = {m: {} for m in PROTOCOL_METHODS}
    curves: dict = {m: {} for m in PROTOCOL_METHODS}
    for seed in seeds:
        cfg = compose_dict(SLUG, "real", real_overrides(epochs, [seed], PROTOCOL_METHODS))
        run_dir = OUT_DIR / f"paper_protocol_e{epochs}" / f"s{seed}"
        record = execute(SLUG, cfg, run_dir, "python -m papers.adamcb.diagnose")
        for method in PROTOCOL_METHODS:
            for metric in (METRIC, "final_test_ce", "final_test_acc"):
                value = record["metrics"][method][metric]["per_seed"][str(seed)]
                out[method].setdefault(metric, {})[seed] = value
            final = read_json(run_dir / "runs" / f"{method}-s{seed}" / "final.json")
            curves[method][seed] = final["curves"]["train_ce"]
    out["curves"] = curves
    return out


def bandit_in_one_epoch(seed: int) -> dict[str, float]:
    """Experiment 2: AdamCB and its ablation for one epoch with recording samplers."""
    cfg = to_object(compose_dict(SLUG, "real", real_overrides(1, [seed], ["adamcb"])))
    data = train.load_data(cfg)
    n, s = len(data.y_train), cfg.sampler
    accelerator = make_accelerator(cfg.runtime)
    numbers: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="adamcb-diagnose-") as tmp:
        logger = MetricsLogger(Path(tmp) / "metrics.jsonl", cfg.loop.console_every_s, True)
        for method, feedback in (("adamcb", True), ("adamcb_no_feedback", False)):
            sampler = RecordingAdamCB(
                n, s.batch_size, seed, gamma=s.gamma, alpha_p=s.alpha_p, feedback=feedback
            )
            train.train_one(
                method, seed, Path(tmp) / method, cfg, data, accelerator, logger, sampler
            )
            tag = "" if feedback else "_no_feedback"
            numbers[f"r2_logw_plays{tag}"] = r_squared(sampler.log_weights, sampler.plays)
            if feedback:
                g_bar, share = np.concatenate(sampler.g_bar), np.concatenate(sampler.share)
                numbers["median_gbar"] = float(np.median(g_bar))
                numbers["mean_loss_share"] = float(share.mean())
                numbers["median_loss_share"] = float(np.median(share))
                numbers["max_loss_share"] = float(share.max())
                numbers["never_played_fraction"] = float((sampler.plays == 0).mean())
                numbers["logw_std"] = float(sampler.log_weights.std())
    return numbers


def summarise_protocol(proto: dict) -> tuple[dict[str, float], dict]:
    """Ratios, paired wins and per-epoch mean curves of experiment 1."""
    seeds = sorted(proto["adam"][METRIC])
    mean = {m: float(np.mean([proto[m][METRIC][s] for s in seeds])) for m in PROTOCOL_METHODS}
    test = {m: float(np.mean([proto[m]["final_test_ce"][s] for s in seeds])) for m in mean}

    def wins(a: str, b: str) -> int:
        return sum(proto[a][METRIC][s] < proto[b][METRIC][s] for s in seeds)

    curve = {m: np.mean([proto["curves"][m][s] for s in seeds], axis=0) for m in mean}
    ratio_by_epoch = curve["adamcb"] / curve["adam"]  # (epochs + 1,)
    numbers = {
        "pp_seeds": len(seeds),
        "pp_epochs": len(ratio_by_epoch) - 1,
        "pp_train_ce_adam": mean["adam"],
        "pp_train_ce_adamcb": mean["adamcb"],
        "pp_train_ce_no_feedback": mean["adamcb_no_feedback"],
        "pp_ratio_adamcb_adam": mean["adamcb"] / mean["adam"],
        "pp_ratio_adamcb_no_feedback": mean["adamcb"] / mean["adamcb_no_feedback"],
        "pp_ratio_no_feedback_adam": mean["adamcb_no_feedback"] / mean["adam"],
        "pp_test_ratio_adamcb_adam": test["adamcb"] / test["adam"],
        "pp_wins_adamcb_vs_adam": wins("adamcb", "adam"),
        "pp_wins_adamcb_vs_no_feedback": wins("adamcb", "adamcb_no_feedback"),
        "pp_ratio_adamcb_adam_epoch3": float(ratio_by_epoch[3]),
        "pp_ratio_adamcb_adam_min_epoch": float(ratio_by_epoch[1:].min()),
        "pp_ratio_adamcb_adam_max_epoch": float(ratio_by_epoch[1:].max()),
    }
    details = {
        "per_seed": {m: {k: proto[m][k] for k in proto[m]} for m in PROTOCOL_METHODS},
        "mean_train_ce_by_epoch": {m: curve[m].tolist() for m in curve},
        "ratio_adamcb_adam_by_epoch": ratio_by_epoch.tolist(),
    }
    return numbers, details


def first_protocol() -> dict[str, float]:
    """The failing first-protocol measurements (results/real_first.json), for the reasons."""
    record = read_json(REPO_ROOT / "papers" / SLUG / "results" / "real_first.json")
    measured = {c["name"]: c["measured"] for c in record["claims"]}
    ce = record["metrics"]
    return {
        "first_ratio_adamcb_adam": measured["beats Adam by 5%"],
        "first_ratio_adamcb_adambs_corrected": measured["beats corrected AdamBS by 5%"],
        "first_wins_adamcb_vs_adam": measured["beats Adam on 4/4 seeds"],  # its name then
        "first_test_ratio_adamcb_adam": measured["lower test loss than Adam"],
        "first_ratio_adambs_corrected_adam": ce["adambs_corrected"][METRIC]["mean"]
        / ce["adam"][METRIC]["mean"],
        "first_ratio_adamcb_uniform_wor": measured["AdamCB vs uniform w/o replacement"],
    }


def official(path: Path, ours_curve: list[float]) -> tuple[dict[str, float], dict]:
    """The official ADAMCB run's losses and weight statistics beside ours (seed 10)."""
    record = read_json(path)
    epochs = [e for e in record["epochs"] if e["t"] > 1]  # epoch ends (t = e * 468)
    theirs = [e["train_ce_first10000"] for e in epochs]
    n_common = min(len(theirs), len(ours_curve) - 1)
    diff = [theirs[i] - ours_curve[i + 1] for i in range(n_common)]
    first_epoch = record["weights"][0]
    numbers = {
        "official_epochs": n_common,
        "official_train_ce_last": theirs[n_common - 1],
        "ours_train_ce_same_epoch": ours_curve[n_common],
        "official_max_abs_curve_diff": float(np.max(np.abs(diff))),
        "official_r2_logw_plays": first_epoch["r2_logw_vs_plays"],
        "official_median_gbar": first_epoch["median_gbar_this_epoch"],
        "official_median_loss_share": first_epoch["loss_term_share_median_last_step"],
        "official_cpu_s": epochs[n_common - 1]["cpu_s"],
    }
    details = {"official_train_ce_by_epoch": theirs, "official_weights": record["weights"]}
    return numbers, details


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    parser.add_argument("--seeds", type=int, nargs="+", default=PAPER_SEEDS)
    parser.add_argument("--epochs", type=int, default=PAPER_EPOCHS)
    parser.add_argument("--weights-seed", type=int, default=PAPER_SEEDS[0])
    parser.add_argument("--official-json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())

    numbers = first_protocol()
    numbers.update(bandit_in_one_epoch(args.weights_seed))
    proto = paper_protocol(args.seeds, args.epochs)
    protocol_numbers, details = summarise_protocol(proto)
    numbers.update(protocol_numbers)
    if args.official_json is not None:
        ours = proto["curves"]["adamcb"][args.weights_seed]
        official_numbers, official_details = official(args.official_json, ours)
        numbers.update(official_numbers)
        details.update(official_details)

    width = max(map(len, numbers))
    for name, value in numbers.items():
        print(f"{name:<{width}}  {value:.4f}")
    if args.write:
        command = " ".join(["python -m papers.adamcb.diagnose", *sys.argv[1:]])
        path = write_evidence(SLUG, numbers, command, started, details)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
