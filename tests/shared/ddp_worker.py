"""Worker for test_distributed.py: a least-squares fit through ``shared.loop.fit``.

Launched by ``torch.distributed.run`` with 1 or 2 CPU processes. Every process draws the same
global batch from a shared seed and trains on its equal share; Accelerate's DDP (gloo)
averages the shard gradients, so the result must match one process on the whole batch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from shared.config import LoopConfig, RuntimeConfig
from shared.loop import fit
from shared.runtime import make_accelerator, shutdown_process_group
from shared.seeding import seed_everything, torch_generator

N, DIM, BATCH, STEPS = 64, 5, 8, 12


def main(out_path: str) -> None:
    accelerator = make_accelerator(RuntimeConfig(device="cpu", num_threads=1))
    seed_everything(0)
    x = torch.randn(N, DIM, generator=torch_generator(1))
    y = x @ torch.arange(1.0, DIM + 1) + 0.1 * torch.randn(N, generator=torch_generator(2))
    model = torch.nn.Linear(DIM, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model, optimizer = accelerator.prepare(model, optimizer)
    sampler = torch_generator(3)  # identical on every process
    world, rank = accelerator.num_processes, accelerator.process_index
    share = slice(rank * BATCH // world, (rank + 1) * BATCH // world)

    def next_batch(step):
        idx = torch.randperm(N, generator=sampler)[:BATCH][share]
        return x[idx], y[idx]

    def compute_loss(model, batch):
        xb, yb = batch
        return torch.nn.functional.mse_loss(model(xb).squeeze(-1), yb), {}

    def evaluate(model):
        return {"mse": torch.nn.functional.mse_loss(model(x).squeeze(-1), y).item()}

    history = fit(
        model=model,
        optimizer=optimizer,
        accelerator=accelerator,
        max_steps=STEPS,
        loop=LoopConfig(eval_every=4, checkpoint_every=6, log_every=1),
        run_dir=Path(out_path).parent,
        next_batch=next_batch,
        compute_loss=compute_loss,
        evaluate=evaluate,
        progress=False,
    )
    if accelerator.is_main_process:
        params = [
            p.detach().flatten().tolist() for p in accelerator.unwrap_model(model).parameters()
        ]
        Path(out_path).write_text(
            json.dumps(
                {
                    "world": world,
                    "history": history,
                    "params": params,
                }
            )
        )
    del model, optimizer  # the DDP wrapper holds the gloo group: release it before teardown
    shutdown_process_group(accelerator)


if __name__ == "__main__":
    main(sys.argv[1])
