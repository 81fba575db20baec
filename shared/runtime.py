"""Runtime on Hugging Face Accelerate.

Accelerate is the engine transformers, diffusers and trl already launch through, so the same
loop runs as one CPU process in CI, as N gloo CPU processes (``torchrun --nproc_per_node N``),
or as N GPUs (``accelerate launch --num_processes N``) without code changes.
"""

from __future__ import annotations

import gc

import torch
from accelerate import Accelerator, PartialState

from shared.config import RuntimeConfig


def make_accelerator(runtime: RuntimeConfig) -> Accelerator:
    """Build the Accelerator for ``runtime`` and apply its thread count.

    ``device=cpu`` forces CPU even when a GPU is visible; ``cuda`` requires one; ``auto`` uses
    it when present. Under ``torchrun`` on CPU, Accelerate picks the gloo backend. A device or
    precision that would change nothing was already refused at start
    (``shared.config.check_runtime``); the check below guards a config built by hand.
    """
    if runtime.device not in ("cpu", "cuda", "auto"):
        raise ValueError(f"runtime.device must be cpu, cuda or auto, got {runtime.device!r}")
    if runtime.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("runtime.device=cuda but no CUDA device is visible; use runtime=cpu")
    torch.set_num_threads(runtime.num_threads)
    return Accelerator(cpu=runtime.device == "cpu", mixed_precision=runtime.mixed_precision)


def process_state(runtime: RuntimeConfig) -> PartialState:
    """The process-group state (rank, world size), initialised for ``runtime``'s device.

    Must be the first Accelerate object a run creates: the state is a process-wide singleton,
    and one created without ``cpu=True`` under ``torchrun`` on a CPU machine would silently
    fall back to independent single processes.
    """
    return PartialState(cpu=runtime.device == "cpu")


def shutdown_process_group(accelerator: Accelerator | None = None) -> None:
    """End a multi-process (``torchrun``) run while the interpreter is still fully alive.

    A gloo process group left to interpreter finalization can abort a rank after its work is
    done ("terminate called without an active exception", exit code -6, about one run in
    twenty on a loaded 2-core machine): DDP wrappers kept alive by the accelerator or by
    reference cycles still hold the group while Python tears down. This releases the
    accelerator's prepared objects, collects cycles, synchronises the ranks and destroys the
    group. Callers drop their own references to prepared models first. One process: a no-op.
    """
    if not torch.distributed.is_initialized():
        return
    if accelerator is not None:
        accelerator.free_memory()
    gc.collect()
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
