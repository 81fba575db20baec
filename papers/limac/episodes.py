"""Episodes in the AndroidControl action format (paper Sec. 2), shared by the toy and the paper
scale, and their JSONL form (one episode per line).

An episode is a goal and steps; a step is the screen's UI elements, each an (image, text,
attributes) triplet, and the expert's action a_t = (type, spec). The JSONL line of an episode::

    {"episode_id": "ac-17", "goal": "...", "family": "", "steps": [
        {"screenshot": "screens/ac-17_0.png",
         "elements": [{"text": "OK", "cls": "android.widget.Button", "box": [x0, y0, x1, y1],
                       "clickable": true, "editable": false, "scrollable": false,
                       "checked": false, "focused": false, "selected": false}, ...],
         "action": {"type": "click", "target": 3, "text": null}}, ...]}

Boxes are normalised to [0, 1]; ``target`` indexes the step's elements.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

ATTRIBUTES = ("clickable", "editable", "scrollable", "checked", "focused", "selected")
CLICK_TYPES = ("click", "long_press")  # the spec is an element (contrastive head)
TEXT_TYPES = ("input_text", "open_app")  # the spec is text: the text model is called (gate)


@dataclass(frozen=True)
class Element:
    """One UI element o_{t,i} = (image, text, attributes), paper Sec. 2.

    ``box`` is (x0, y0, x1, y1) in [0, 1]. The toy's image is the glyph of ``icon``; at paper
    scale it is the screenshot crop under ``box``.
    """

    text: str
    cls: str
    box: tuple[float, float, float, float]
    icon: str = "none"
    clickable: bool = False
    editable: bool = False
    scrollable: bool = False
    checked: bool = False
    focused: bool = False
    selected: bool = False


@dataclass(frozen=True)
class Action:
    """a_t = (type, spec): ``target`` indexes the screen's elements (click, long-press),
    ``text`` is the typed text or app name (input-text, open-app); a scroll's direction is
    folded into its type (brief Sec. 3.1)."""

    type: str
    target: int | None = None
    text: str | None = None


@dataclass(frozen=True)
class Step:
    elements: tuple[Element, ...]
    action: Action
    screenshot: str | None = None  # path of the screen's PNG (paper scale), relative or not


@dataclass(frozen=True)
class Episode:
    goal: str
    steps: tuple[Step, ...]
    family: str = ""  # toy task family; empty at paper scale
    episode_id: str = ""


def validate(episode: Episode, action_types: tuple[str, ...]) -> None:
    """Fail naming the episode and step when an action cannot be learned from its screen:
    an unknown type, a click target outside the screen's elements, a text action without
    text."""
    name = episode.episode_id or "<unnamed>"
    for t, step in enumerate(episode.steps):
        action, where = step.action, f"episode {name} step {t}"
        if action.type not in action_types:
            raise ValueError(f"{where}: unknown action type {action.type!r} ({action_types})")
        if action.type in CLICK_TYPES:
            n = len(step.elements)
            if action.target is None or not 0 <= action.target < n:
                raise ValueError(
                    f"{where}: click target {action.target} is outside the screen's {n} elements"
                )
        if action.type in TEXT_TYPES and not (action.text or "").strip():
            raise ValueError(f"{where}: {action.type} action without text")


def episode_to_json(episode: Episode) -> dict:
    return asdict(episode)


def episode_from_json(row: dict) -> Episode:
    steps = []
    for step in row["steps"]:
        elements = tuple(
            Element(**{**e, "box": tuple(float(v) for v in e["box"])}) for e in step["elements"]
        )
        steps.append(Step(elements, Action(**step["action"]), step.get("screenshot")))
    return Episode(row["goal"], tuple(steps), row.get("family", ""), str(row.get("episode_id", "")))


def write_jsonl(episodes: list[Episode], path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        for episode in episodes:
            f.write(json.dumps(episode_to_json(episode)) + "\n")
    tmp.replace(path)  # a half-written file never looks finished


def read_jsonl(path: Path, action_types: tuple[str, ...]) -> list[Episode]:
    """Episodes of a JSONL file, each validated (:func:`validate`); a malformed line fails
    naming the file and line."""
    episodes = []
    with open(path) as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                episode = episode_from_json(json.loads(line))
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"{path} line {line_no}: malformed episode ({err})") from err
            validate(episode, action_types)
            episodes.append(episode)
    return episodes
