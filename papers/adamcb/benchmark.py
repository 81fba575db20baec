"""Time one AdamCB training step against one plain Adam step (papers/adamcb): the speed target.

    python -m papers.adamcb.benchmark    # MNIST shapes: n = 60000, K = 128, MLP 784-512-256-10
    python -m papers.adamcb.benchmark --n 60000 --batch-size 128 --hidden 512 256 --repeats 50

On random data of MNIST's shape (``--n`` images of 1x28x28, 10 classes; nothing is read or
downloaded) and the paper's MLP, it times the two steps as ``train.train_one`` runs them:

* **AdamCB** (brief Sec. 3.1): Exp3.M probabilities and DepRound (``AdamCBSampler.draw``),
  the importance-weighted loss, the per-sample gradient norms at theta_t, backward, the AdamX
  step and the sampler's weight update;
* **Adam**: K uniform draws with replacement, the mean loss, backward and the Adam step.

One torch and BLAS thread, a warm-up of each, then ``--repeats`` rounds, each timing one step of
both (in alternating order, so drifts in machine load hit both alike). The reported seconds are
medians over the rounds; the target is a ratio, so it holds on any machine: an AdamCB step at
most 2x a plain Adam step of the same K and model. The AdamCB step is also split into its
sampler draw, its norms and its sampler update. The rows go to ``results/benchmark.json``
(``--out`` elsewhere).
"""

from __future__ import annotations

import os

# Single thread, set before numpy and torch are imported (BLAS reads these once, at load time).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from papers.adamcb.method import (  # noqa: E402
    AdamCBSampler,
    Sampler,
    UniformSampler,
    importance_weighted_loss,
    per_sample_grad_norms,
)
from papers.adamcb.model import MLP  # noqa: E402
from papers.adamcb.optimizers import AdamFamily  # noqa: E402
from shared.benchmarks import write_benchmark  # noqa: E402

TARGET_RATIO = 2.0  # the speed target (issue 32): AdamCB step <= 2 x plain Adam step
IMAGE_SHAPE = (1, 28, 28)  # MNIST
NUM_CLASSES = 10
PARTS = ("draw", "norms", "update")  # timed pieces of the AdamCB step
COLUMNS = ("n", "K", "model", "AdamCB step (s)", "Adam step (s)", "ratio", f"<= {TARGET_RATIO:g}x")


class Step:
    """One training step of a method on its own copy of the model, as ``train.train_one``."""

    def __init__(
        self,
        sampler: Sampler,
        variant: str,
        learns: bool,
        hidden: list[int],
        x: torch.Tensor,
        y: torch.Tensor,
    ) -> None:
        torch.manual_seed(0)  # the same initial network for both methods
        self.model = MLP(int(np.prod(x.shape[1:])), hidden, NUM_CLASSES)
        self.optimizer = AdamFamily(self.model.parameters(), lr=1e-3, variant=variant)
        self.sampler, self.learns, self.x, self.y = sampler, learns, x, y
        self.parts = dict.fromkeys(PARTS, 0.0)  # seconds of the last step's pieces

    def __call__(self) -> None:
        t0 = time.perf_counter()
        draw = self.sampler.draw()  # Sec. 3.1 steps 1-2 (uniform for Adam)
        idx = torch.from_numpy(draw.indices)
        xb, yb = self.x[idx], self.y[idx]
        weights = torch.tensor(draw.weights, dtype=torch.float32)
        t1 = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        per_example = F.cross_entropy(self.model(xb), yb, reduction="none")  # (K,)
        loss = importance_weighted_loss(per_example, weights)  # Sec. 3.1 step 3
        norms = None
        t2 = time.perf_counter()
        if self.learns:  # at theta_t, before the step (Sec. 3.1 step 5)
            norms = per_sample_grad_norms(self.model, F.cross_entropy, xb, yb)
        t3 = time.perf_counter()
        loss.backward()
        self.optimizer.step()  # Sec. 3.1 step 4
        t4 = time.perf_counter()
        if self.learns:
            self.sampler.update(draw, norms.double().numpy())  # Sec. 3.1 step 5
        t5 = time.perf_counter()
        self.parts = {"draw": t1 - t0, "norms": t3 - t2, "update": t5 - t4}


def _timed(step: Callable[[], None]) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def markdown(rows: list[dict]) -> str:
    """Rows as a markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [
            str(r["n"]),
            str(r["K"]),
            r["model"],
            f"{r['adamcb_s']:.4f}",
            f"{r['adam_s']:.4f}",
            f"{r['ratio']:.2f}",
            "yes" if r["meets_target"] else "no",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark, print a markdown table and the AdamCB step's parts, return the rows.

    Each row: ``n``, ``K``, ``model`` (layer widths), ``adamcb_s`` and ``adam_s`` (median
    seconds of one step), ``ratio`` (adamcb_s / adam_s), ``meets_target``
    (ratio <= TARGET_RATIO) and ``parts`` (median seconds of the AdamCB step's draw, norms
    and sampler update).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60_000, help="training examples (arms)")
    parser.add_argument("--batch-size", type=int, default=128, help="K")
    parser.add_argument(
        "--hidden", type=int, nargs="+", default=[512, 256], help="MLP hidden widths"
    )
    parser.add_argument("--repeats", type=int, default=50, help="timed rounds; medians reported")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps of each first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default: papers/adamcb/results/benchmark.json)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        parser.error("--repeats must be >= 1 and --warmup >= 0")
    if not 1 <= args.batch_size < args.n:
        parser.error("need 1 <= --batch-size < --n")

    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.n, *IMAGE_SHAPE, generator=generator)  # (n, 1, 28, 28)
    y = torch.randint(0, NUM_CLASSES, (args.n,), generator=generator)  # (n,)
    K = args.batch_size
    adamcb = Step(AdamCBSampler(args.n, K, args.seed), "adamx", True, args.hidden, x, y)
    adam = Step(UniformSampler(args.n, K, args.seed), "adam", False, args.hidden, x, y)

    for _ in range(args.warmup):
        adamcb()
        adam()
    seconds: dict[str, list[float]] = {"adamcb": [], "adam": []}
    parts: dict[str, list[float]] = {part: [] for part in PARTS}
    for r in range(args.repeats):
        order = (("adamcb", adamcb), ("adam", adam))
        for name, step in order if r % 2 == 0 else order[::-1]:
            seconds[name].append(_timed(step))
        for part in PARTS:
            parts[part].append(adamcb.parts[part])

    adamcb_s, adam_s = (float(np.median(seconds[name])) for name in ("adamcb", "adam"))
    ratio = adamcb_s / adam_s
    widths = "-".join(str(w) for w in (int(np.prod(IMAGE_SHAPE)), *args.hidden, NUM_CLASSES))
    rows = [
        {
            "n": args.n,
            "K": K,
            "model": widths,
            "adamcb_s": adamcb_s,
            "adam_s": adam_s,
            "ratio": ratio,
            "meets_target": ratio <= TARGET_RATIO,
            "parts": {part: float(np.median(v)) for part, v in parts.items()},
        }
    ]
    print(markdown(rows))
    print(
        "AdamCB step parts (median s): "
        + ", ".join(f"{part} {s:.4f}" for part, s in rows[0]["parts"].items())
    )
    write_benchmark("adamcb", {"target_ratio": TARGET_RATIO, "rows": rows}, argv, args.out)
    return rows


if __name__ == "__main__":
    main()
