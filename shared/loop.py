"""The shared minibatch loop: progress bar, periodic eval, checkpoint and resume, logging.

One readable loop for papers whose update is "draw a batch, compute a loss, backprop, step".
What differs between papers enters through four callables:

* ``next_batch(step)`` -> this process's batch for step ``step`` (1-based, as in the papers);
* ``compute_loss(model, batch)`` -> ``(loss, aux)``; the loop backpropagates ``loss``;
* ``after_step(step, batch, aux)`` (optional) -> e.g. a bandit sampler's weight update;
* ``evaluate(model)`` (optional) -> dict of float metrics, all processes take part.

Anything else that must survive an interruption (samplers, generators) is passed in
``stateful`` and checkpointed with the model and optimizer. Papers whose update is not a
minibatch step (RL, bilevel, distillation) write their own loop and reuse the logger.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch
from accelerate import Accelerator
from tqdm.auto import tqdm

from shared import checkpoint
from shared.config import TrainLoopConfig
from shared.logger import MetricsLogger

CHECKPOINT_NAME = "checkpoint.pt"


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def fit(
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    accelerator: Accelerator,
    max_steps: int,
    loop: TrainLoopConfig,
    run_dir: Path,
    next_batch: Callable[[int], Any],
    compute_loss: Callable[[torch.nn.Module, Any], tuple[torch.Tensor, dict[str, Any]]],
    after_step: Callable[[int, Any, dict[str, Any]], None] | None = None,
    evaluate: Callable[[torch.nn.Module], dict[str, float]] | None = None,
    stateful: dict[str, Stateful] | None = None,
    logger: MetricsLogger | None = None,
    tags: dict[str, Any] | None = None,
    progress: bool = True,
    desc: str = "train",
) -> list[dict[str, float]]:
    """Run steps ``1..max_steps``, resuming from ``run_dir/checkpoint.pt`` when present.

    ``model`` and ``optimizer`` must already be passed through ``accelerator.prepare``.
    ``compute_loss`` runs under ``accelerator.autocast()``, so ``runtime.mixed_precision``
    applies to every training step whatever model methods the loss calls (Accelerate itself
    autocasts only the prepared model's ``forward``); evaluation stays in float32.

    Returns:
        The evaluation history: one dict per evaluation (step 0, every ``loop.eval_every``
        steps and the last step), each with its ``step``. A resumed run returns the same
        history as an uninterrupted one.
    """
    if evaluate is not None and not hasattr(loop, "eval_every"):
        raise TypeError("fit(evaluate=...) reads loop.eval_every: pass a LoopConfig")
    stateful = stateful or {}
    tags = tags or {}
    run_dir = Path(run_dir)
    checkpoint_path = run_dir / CHECKPOINT_NAME
    history: list[dict[str, float]] = []
    start = 0
    fingerprints = param_fingerprints(accelerator.unwrap_model(model))

    if checkpoint_path.exists():
        state = checkpoint.load_checkpoint(checkpoint_path)
        accelerator.unwrap_model(model).load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for name, obj in stateful.items():
            obj.load_state_dict(state["stateful"][name])
        torch.set_rng_state(state["torch_rng"])
        start, history = state["step"], state["history"]
        fingerprints = state["initial_fingerprints"]
        if logger is not None:
            logger.drop_after(start, **tags)
    else:
        if logger is not None:  # records of an attempt killed before its first checkpoint
            logger.drop_after(-1, **tags)
        if evaluate is not None:
            history.append({"step": 0, **_evaluate(model, evaluate)})
            _log(logger, {**tags, **history[-1]})

    def save(step: int) -> None:
        if accelerator.is_main_process:
            checkpoint.save_checkpoint(
                {
                    "step": step,
                    "model": accelerator.unwrap_model(model).state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "stateful": {name: obj.state_dict() for name, obj in stateful.items()},
                    "torch_rng": torch.get_rng_state(),
                    "history": history,
                    "initial_fingerprints": fingerprints,
                },
                checkpoint_path,
            )
        accelerator.wait_for_everyone()

    bar = tqdm(
        range(start + 1, max_steps + 1),
        initial=start,
        total=max_steps,
        desc=desc,
        leave=False,
        disable=not (progress and accelerator.is_local_main_process),
    )
    for step in bar:
        batch = next_batch(step)
        model.train()
        optimizer.zero_grad(set_to_none=True)
        with accelerator.autocast():  # mixed_precision="no": a no-op context
            loss, aux = compute_loss(model, batch)
        accelerator.backward(loss)
        if loop.grad_clip is not None:
            accelerator.clip_grad_norm_(model.parameters(), loop.grad_clip)
        optimizer.step()
        if after_step is not None:
            after_step(step, batch, aux)

        if step % loop.log_every == 0:
            loss_value = accelerator.reduce(loss.detach(), reduction="mean").item()
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"non-finite training loss {loss_value} at step {step}")
            bar.set_postfix(loss=f"{loss_value:.4f}")
            scalars = {k: float(v) for k, v in aux.items() if isinstance(v, int | float)}
            _log(logger, {**tags, "step": step, "train/loss": loss_value, **scalars})
        if evaluate is not None and (step % loop.eval_every == 0 or step == max_steps):
            history.append({"step": step, **_evaluate(model, evaluate)})
            _log(logger, {**tags, **history[-1]}, console=True)
        if loop.save_checkpoints and (step % loop.checkpoint_every == 0 or step == max_steps):
            save(step)
    bar.close()
    return history


def tensor_fingerprints(tensors: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """(sum, sum of squares) in float64 of each tensor.

    Stored in checkpoints so a test can tell that training changed each trainable tensor
    without keeping a copy of the initial values.
    """
    return {
        name: [t.detach().double().sum().item(), t.detach().double().square().sum().item()]
        for name, t in tensors.items()
    }


def param_fingerprints(model: torch.nn.Module) -> dict[str, list[float]]:
    """:func:`tensor_fingerprints` of every trainable parameter of ``model``."""
    return tensor_fingerprints({n: p for n, p in model.named_parameters() if p.requires_grad})


def _evaluate(
    model: torch.nn.Module, evaluate: Callable[[torch.nn.Module], dict[str, float]]
) -> dict[str, float]:
    model.eval()
    with torch.no_grad():
        return {k: float(v) for k, v in evaluate(model).items()}


def _log(logger: MetricsLogger | None, record: dict[str, Any], console: bool = False) -> None:
    if logger is not None:
        logger.log(record, console=console)
