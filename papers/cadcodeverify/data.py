"""Data: the toy's seeded prompts and solids (brief Sec. 5) and the CADPrompt reader (Sec. 6).

Toy: 200 ground-truth solids per seed, each with an English prompt (three paraphrase
families, 2-decimal numbers) and its ground-truth toycad program. The prompt is the only thing
the generator and the question writer read; :func:`parse_prompt` is how the stylised model
reads it back.

Paper scale: a local clone of ``Kamel773/CAD_Code_Generation`` (no licence, so it is never
vendored or downloaded): ``CADPrompt/<id>/`` with the prompt, ``Ground_Truth.stl``,
``Ground_Truth.json`` and ``Python_Code.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from papers.cadcodeverify.toycad import Base, Boss, Hole, Solid, compile_program, format_program

# ----------------------------------------------------------------------------- toy prompts
# Paraphrase families: base (box, cyl), boss (box, cyl), hole; concatenated, then ".".
TEMPLATES = (
    {
        "base_box": "a rectangular plate {L} long, {W} wide and {H} thick",
        "base_cyl": "a round disc of radius {R} and thickness {H}",
        "boss_box": ", with a square boss of half-side {S} and height {H2} centred on top",
        "boss_cyl": ", with a cylindrical boss of radius {S} and height {H2} centred on top",
        "hole": ", and a through hole of radius {r} in the centre",
    },
    {
        "base_box": "A box-shaped block measuring {L} by {W} with a height of {H}",
        "base_cyl": "A cylinder base with radius {R} and height {H}",
        "boss_box": "; on top sits a centred square boss (half-side {S}, height {H2})",
        "boss_cyl": "; on top sits a centred round boss (radius {S}, height {H2})",
        "hole": "; a centred hole of radius {r} passes all the way through",
    },
    {
        "base_box": "Design a rectangular base {L} x {W} x {H}",
        "base_cyl": "Design a cylindrical base, radius {R}, height {H}",
        "boss_box": ", then a square boss, half-side {S} and height {H2}, centred on it",
        "boss_cyl": ", then a cylindrical boss, radius {S} and height {H2}, centred on it",
        "hole": ", and drill a central through hole of radius {r}",
    },
)
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def _num(value: float) -> str:
    return f"{value:.2f}"


def write_prompt(solid: Solid, family: int) -> str:
    """The English description of ``solid`` in paraphrase ``family`` (2-decimal numbers)."""
    t = TEMPLATES[family]
    b = solid.base
    if b.kind == "box":
        text = t["base_box"].format(L=_num(b.dims[0]), W=_num(b.dims[1]), H=_num(b.dims[2]))
    else:
        text = t["base_cyl"].format(R=_num(b.dims[0]), H=_num(b.dims[1]))
    if solid.boss is not None:
        s = solid.boss
        text += t[f"boss_{s.kind}"].format(S=_num(s.size), H2=_num(s.height))
    if solid.hole is not None:
        text += t["hole"].format(r=_num(solid.hole.r))
    return text + "."


def _pattern(template: str) -> str:
    """A template as a regex: its literal text escaped, each {field} a captured number."""
    parts = re.split(r"\{\w+\}", template)
    return NUMBER.join(re.escape(p) for p in parts)


def parse_prompt(prompt: str) -> Solid:
    """Read a toy prompt back into the solid it describes (how the stylised model reads).

    Raises:
        ValueError: the text matches no paraphrase family.
    """
    for t in TEMPLATES:
        for base_kind in ("box", "cyl"):
            for boss_kind in (None, "box", "cyl"):
                for has_hole in (False, True):
                    pattern = _pattern(t[f"base_{base_kind}"])
                    if boss_kind is not None:
                        pattern += _pattern(t[f"boss_{boss_kind}"])
                    if has_hole:
                        pattern += _pattern(t["hole"])
                    match = re.fullmatch(pattern + r"\.", prompt.strip())
                    if match is None:
                        continue
                    values = [float(v) for v in match.groups()]
                    n_base = 3 if base_kind == "box" else 2
                    base = Base(base_kind, tuple(values[:n_base]))
                    rest = values[n_base:]
                    boss = None
                    if boss_kind is not None:
                        boss, rest = Boss(boss_kind, rest[0], rest[1]), rest[2:]
                    hole = Hole(rest[0]) if has_hole else None
                    return Solid(base, boss, hole)
    raise ValueError(f"not a toy prompt (matches no paraphrase family): {prompt!r}")


# ----------------------------------------------------------------------------- toy data
@dataclass(frozen=True)
class ToyItem:
    """One toy benchmark item: the prompt and its ground truth (program and solid)."""

    index: int
    prompt: str
    program: str  # the ground-truth toycad program
    solid: Solid


def _sample_solid(rng: np.random.Generator) -> Solid:
    """Brief Sec. 5's distribution, each number rounded to the prompt's 2 decimals."""

    def r2(value: float) -> float:
        return max(round(float(value), 2), 0.01)

    if rng.random() < 0.5:
        L = r2(rng.uniform(2, 6))
        W = r2(L / rng.uniform(1, 3))
        base = Base("box", (L, W, r2(L * rng.uniform(0.1, 0.5))))
    else:
        R = r2(rng.uniform(1, 3))
        base = Base("cyl", (R, r2(2 * R * rng.uniform(0.1, 0.6))))
    half = min(base.half_widths)
    boss = None
    if rng.random() < 0.5:
        kind = "box" if rng.random() < 0.5 else "cyl"
        boss = Boss(kind, r2(half * rng.uniform(0.45, 0.8)), r2(base.height * rng.uniform(0.8, 2)))
    hole = None
    if rng.random() < 0.6:
        wall = min(half, boss.size) if boss is not None else half
        hole = Hole(r2(wall * rng.uniform(0.3, 0.6)))
    return Solid(base, boss, hole)


def make_toy_items(n_items: int, seed: int) -> list[ToyItem]:
    """``n_items`` seeded toy items (the data seed is the run's seed, brief Sec. 5)."""
    if n_items < 1:
        raise ValueError(f"n_items must be >= 1, got {n_items}")
    rng = np.random.default_rng(seed)
    items = []
    while len(items) < n_items:
        solid = _sample_solid(rng)
        program = format_program(solid)
        family = int(rng.integers(len(TEMPLATES)))
        compiled = compile_program(program)  # rounding keeps every margin; checked anyway
        items.append(ToyItem(len(items), write_prompt(compiled, family), program, compiled))
    return items


# ----------------------------------------------------------------------------- CADPrompt
PROMPT_FILE = "Natural_Language_Descriptions_Prompt.txt"
MESH_FILE = "Ground_Truth.stl"
PROPERTIES_FILE = "Ground_Truth.json"
CODE_FILE = "Python_Code.py"


@dataclass(frozen=True)
class CADPromptItem:
    """One CADPrompt folder (brief Sec. 1): prompt, ground-truth mesh path, properties, code."""

    item_id: str
    prompt: str
    mesh_path: Path
    properties: dict
    code: str


def cadprompt_folder(root: str | Path) -> Path:
    """``<clone>/CADPrompt`` (or ``root`` itself when it already is that folder)."""
    root = Path(root).expanduser()
    return root / "CADPrompt" if (root / "CADPrompt").is_dir() else root


def load_cadprompt(root: str | Path, max_items: int | None = None) -> list[CADPromptItem]:
    """Read the CADPrompt items of a local clone, sorted by id.

    Raises:
        FileNotFoundError: the folder or a required file of an item is missing (named).
        ValueError: a ``Ground_Truth.json`` that is not JSON (named).
    """
    folder = cadprompt_folder(root)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} does not exist: clone Kamel773/CAD_Code_Generation and set cadprompt_dir"
        )
    ids = sorted(p.name for p in folder.iterdir() if p.is_dir())
    if not ids:
        raise FileNotFoundError(f"{folder} holds no item folders (expected CADPrompt/<id>/)")
    items = []
    for item_id in ids[:max_items] if max_items else ids:
        d = folder / item_id
        for name in (PROMPT_FILE, MESH_FILE, PROPERTIES_FILE, CODE_FILE):
            if not (d / name).is_file():
                raise FileNotFoundError(f"{d / name} is missing")
        try:
            properties = json.loads((d / PROPERTIES_FILE).read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{d / PROPERTIES_FILE} is not valid JSON: {err}") from err
        items.append(
            CADPromptItem(
                item_id,
                (d / PROMPT_FILE).read_text().strip(),
                d / MESH_FILE,
                properties,
                (d / CODE_FILE).read_text(),
            )
        )
    return items


def load_mesh(path: str | Path):
    """A ground-truth or generated STL as one ``trimesh.Trimesh``.

    Raises:
        ValueError: the file is unreadable or holds no triangles; the message names the file.
    """
    import trimesh

    path = Path(path)
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as err:  # trimesh raises many types for corrupt files
        raise ValueError(f"cannot read mesh {path}: {err}") from err
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError(f"cannot read mesh {path}: no triangles in it")
    return mesh
