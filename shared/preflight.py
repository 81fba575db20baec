"""Checks a paper-scale run makes before any work: data on disk, optional packages installed.

A paper's ``train.py`` may define ``preflight(cfg) -> list[str]``, returning one short problem
per missing thing ("what to install or put where"). :func:`shared.entry.execute` calls it for
``scale=paper`` runs before it touches the run folder, and stops with all problems on one
line instead of a traceback minutes into the run. A ``scale=real`` run checks the assets its
``train.REAL_ASSETS`` names (``shared/assets.py``; ``train.real_assets(cfg)``, where defined, names
those the config reads, none where a user's own file replaces them) and
``train.real_preflight(cfg)`` the same way.
At every scale, ``train.data_preflight(cfg)`` then checks the config against what its enabled
parts read (an asset a toy's option selects, a data set's columns or size, a committed file's
recorded config), each problem naming the full key.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path


class PreflightError(SystemExit):
    """A paper-scale run cannot start; the message says what to install or put where."""


def missing_packages(packages: Mapping[str, str]) -> list[str]:
    """``{import name: how to install it}`` -> one problem per package that cannot be imported."""
    return [
        f"package {module!r} is missing ({install})"
        for module, install in packages.items()
        if importlib.util.find_spec(module) is None
    ]


def missing_paths(paths: Mapping[str, str | Path | None], hint: str = "") -> list[str]:
    """``{config key or description: path}`` -> one problem per unset or absent path."""
    problems = []
    for what, path in paths.items():
        if path is None or str(path) == "":
            problems.append(f"{what} is not set{hint}")
        elif not Path(path).expanduser().exists():
            problems.append(f"{what}={path} does not exist{hint}")
    return problems


# A transformers model folder holds its config and one of these weight files.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def missing_model_folders(folders: Mapping[str, str | Path | None], hint: str = "") -> list[str]:
    """``{config key: folder}`` -> one problem per folder that is unset, absent, or does not
    hold a model (a ``config.json`` and one of :data:`WEIGHT_FILES`): an existing folder
    without a model used to pass, and transformers then failed far from the key."""
    problems = missing_paths(folders, hint)
    for key, folder in folders.items():
        if folder is None or str(folder) == "" or not Path(folder).expanduser().exists():
            continue  # named above
        path = Path(folder).expanduser()
        if not (path / "config.json").is_file():
            problems.append(f"{key}={folder} holds no model (no config.json){hint}")
        elif not any((path / name).is_file() for name in WEIGHT_FILES):
            problems.append(
                f"{key}={folder} has a config.json but no weights (one of "
                f"{', '.join(WEIGHT_FILES)}){hint}"
            )
    return problems


def check(slug: str, problems: list[str], scale: str = "paper") -> None:
    """Raise :class:`PreflightError` naming every problem, on one line."""
    if problems:
        raise PreflightError(
            f"papers.{slug} scale={scale} cannot start: " + "; ".join(problems) + "."
        )
