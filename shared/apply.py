"""One answer for one data set (issue 53): ``python -m papers.<slug>.apply key=value ...``.

The statistical papers (ppi_ate, conformal_bma, etcd) answer a simulation question in
``train.py``: coverage over replications, the share of seeds whose graph is right. A user asks
another: *the interval for my data*, *the graph of my data*. ``papers/<slug>/apply.py`` fits the
method once on the user's files and writes that answer.

Its config is ``configs/apply/<slug>.yaml``, typed by the paper's ``ApplyConfig`` (in its
``config.py``); the command line's ``key=value`` pairs are merged onto it (an unknown key or a
wrong type stops in one line naming the key), the declared bounds and the paper's
``validate()`` are checked, then the files are read and checked; only then is anything written:
``<out>/answer.json`` (the answer, the config, the files' sha256, versions and the commit) and a
table on stdout.
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from shared import assets
from shared.config import CONFIG_DIR, ConfigError, check_bounds
from shared.records import git_commit, package_versions, write_json

ANSWER_NAME = "answer.json"
ROWS_NAME = "answer.csv"


@dataclass
class Answer:
    """What an apply run found: ``answer`` (JSON-ready numbers, the record's core), ``table``
    (printed), the user's ``files`` ({what: path}, recorded with their sha256), optional
    ``notes`` (caveats printed under the table and kept in the record) and ``rows`` (one dict
    per row of the user's data, also written as ``answer.csv``)."""

    answer: dict[str, Any]
    table: str
    files: dict[str, str]
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def config_path(slug: str) -> Path:
    return CONFIG_DIR / "apply" / f"{slug}.yaml"


def compose_apply(slug: str, schema: type, overrides: list[str]) -> Any:
    """``configs/apply/<slug>.yaml`` merged onto ``schema``'s defaults, then ``overrides``
    (``key=value``, the command line's syntax); bounds and ``validate()`` checked."""
    malformed = [o for o in overrides if "=" not in o]
    if malformed:
        raise ConfigError(f"{malformed[0]}: expected key=value")
    try:  # the structured schema refuses an unknown key and a value of the wrong type
        merged = OmegaConf.merge(OmegaConf.structured(schema), OmegaConf.load(config_path(slug)))
        # Hydra's override grammar, as the train command's: 'models=[{name:a,degree:1}]'
        for override in OverridesParser.create().parse_overrides(overrides):
            OmegaConf.update(merged, override.key_or_group, override.value(), merge=True)
    except HydraException as err:
        raise ConfigError(str(err).splitlines()[0]) from None
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "the config"
        raise ConfigError(f"{key}: {str(err).splitlines()[0]}") from None
    cfg = OmegaConf.to_object(merged)
    check_bounds(cfg)
    cfg.validate()
    return cfg


def run_apply(
    slug: str, schema: type, answer_for: Callable[[Any], Answer], overrides: list[str]
) -> dict:
    """Compose, answer (``answer_for`` reads and checks the files before any output), then
    write ``<out>/answer.json`` and print the table. Returns the record."""
    cfg = compose_apply(slug, schema, overrides)
    started = time.process_time()
    found = answer_for(cfg)
    record = {
        "paper": slug,
        "command": f"python -m papers.{slug}.apply " + " ".join(overrides),
        "answer": found.answer,
        "notes": found.notes,
        "user_files": assets.user_file_record(found.files),
        "config": OmegaConf.to_container(OmegaConf.structured(cfg)),
        "git_commit": git_commit(),
        "versions": package_versions(),
        "cpu_time_s": round(time.process_time() - started, 2),
    }
    out = Path(cfg.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    write_json(record, out / ANSWER_NAME)
    if found.rows:
        with (out / ROWS_NAME).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(found.rows[0]))
            writer.writeheader()
            writer.writerows(found.rows)
    print(found.table)
    for note in found.notes:
        print(f"note: {note}")
    print(f"\nanswer written to {out / ANSWER_NAME}")
    return record


def main(slug: str, schema: type, answer_for: Callable[[Any], Answer]) -> None:
    """The command line: ``python -m papers.<slug>.apply key=value ...``; a bad config or
    file stops in one line (exit status 1), nothing written."""
    try:
        run_apply(slug, schema, answer_for, sys.argv[1:])
    except (ConfigError, ValueError, FileNotFoundError) as err:
        raise SystemExit(f"papers.{slug}.apply cannot answer: {err}") from None
