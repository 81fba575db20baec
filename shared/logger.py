"""Metrics logger: one JSON object per line in ``metrics.jsonl`` plus a throttled console line."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm


class MetricsLogger:
    """Append-only ``metrics.jsonl`` writer shared by every (method, seed) of a run.

    Args:
        path: the ``metrics.jsonl`` file (created with its folder).
        console_every_s: minimum seconds between two console lines.
        enabled: False on non-main processes, which then write nothing.
    """

    def __init__(self, path: Path, console_every_s: float = 5.0, enabled: bool = True):
        self.path = Path(path)
        self.console_every_s = console_every_s
        self.enabled = enabled
        self._last_console = -math.inf
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, record: dict[str, Any], console: bool = False) -> None:
        """Write ``record`` as one line; echo it to the console if asked and not throttled."""
        if not self.enabled:
            return
        with self.path.open("a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        now = time.monotonic()
        if console and now - self._last_console >= self.console_every_s:
            self._last_console = now
            tqdm.write(" ".join(f"{k}={_fmt(v)}" for k, v in record.items()))

    def drop_after(self, step: int, **tags: Any) -> None:
        """Forget records of the run ``tags`` logged after ``step``.

        Called on resume: records written between the last checkpoint and an interruption
        would otherwise appear twice.
        """
        if not self.enabled or not self.path.exists():
            return
        kept = []
        for line in self.path.read_text().splitlines():
            record = json.loads(line)
            same_run = all(record.get(k) == v for k, v in tags.items())
            if not (same_run and record.get("step", -1) > step):
                kept.append(line)
        self.path.write_text("".join(line + "\n" for line in kept))


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
