"""AndroidControl and AitW TFRecords -> JSONL episodes + screenshot PNGs (brief Sec. 6).

Read once with the pure-Python ``tfrecord`` package (an optional extra; TensorFlow is not
needed) and written to ``data.work_dir``; later runs read the JSONL.

* **AndroidControl**: one ``tf.train.Example`` per episode with ``episode_id``, ``goal``,
  ``screenshots`` (PNG), ``screenshot_widths`` / ``_heights``, ``accessibility_trees``
  (serialised ``android_env`` ``AndroidAccessibilityForest`` protos, decoded here with a
  minimal wire-format reader for the fields we use) and ``actions`` (JSON). Elements are the
  forest's nodes with text, a content description, or an interaction attribute; a click's
  (x, y) maps to the smallest element whose box contains it (ours).
* **AitW**: one example per step with ``episode_id``, ``step_id``, ``goal_info``,
  ``image/encoded``, the OCR / icon annotations (``image/ui_annotations_*``) as elements and
  the gesture (``results/yx_touch``, ``results/yx_lift``): a short gesture is a click, a long
  one a scroll in the displacement's direction (ours).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

from papers.limac.episodes import Action, Element, Episode, Step

ANDROIDCONTROL_TYPES = (
    "click",
    "long_press",
    "scroll_up",
    "scroll_down",
    "scroll_left",
    "scroll_right",
    "input_text",
    "open_app",
    "navigate_back",
    "navigate_home",
    "wait",
)  # 11 classes: the scroll direction folded into the type (brief Sec. 3.1)
AITW_TYPES = (
    "click",
    "scroll_up",
    "scroll_down",
    "scroll_left",
    "scroll_right",
    "input_text",
    "navigate_back",
    "navigate_home",
    "press_enter",
    "status_complete",
    "status_impossible",
)
AITW_ACTIONS = {
    3: "input_text",
    5: "navigate_back",
    6: "navigate_home",
    7: "press_enter",
    10: "status_complete",
    11: "status_impossible",
}  # 4: dual point
AITW_CLICK_DISTANCE = 0.04  # touch-lift distance below which a gesture is a tap (AitW's rule)


# ------------------------------------------------------------------ TFRecord reading


def tfrecord_files(root: Path) -> list[Path]:
    files = sorted(
        p
        for p in Path(root).rglob("*")
        if p.is_file()
        and (".tfrecord" in p.name or p.name.startswith("android_control"))
        and p.suffix != ".json"
    )
    if not files:
        raise FileNotFoundError(f"no TFRecord files under {root} (expected *.tfrecord[.gz])")
    return files


def read_examples(path: Path, compression: str = "auto") -> Iterator[dict[str, list]]:
    """Each ``tf.train.Example`` of a TFRecord file as {feature: list of values}.

    Bytes features stay ``bytes`` (the package's numpy conversion would strip trailing zero
    bytes of PNGs and protos, so the Example is parsed here)."""
    from tfrecord import example_pb2
    from tfrecord.reader import tfrecord_iterator

    if compression == "auto":
        compression = "gzip" if Path(path).suffix == ".gz" or _is_gzip(path) else "none"
    kind = {"gzip": "gzip", "none": None}[compression]
    for record in tfrecord_iterator(str(path), compression_type=kind):
        example = example_pb2.Example()
        example.ParseFromString(bytes(record))
        out = {}
        for key, feature in example.features.feature.items():
            which = feature.WhichOneof("kind")
            out[key] = list(getattr(feature, which).value) if which else []
        yield out


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


# ------------------------------------------------------------------ accessibility forest


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def proto_fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a serialised protobuf message: varints as int,
    length-delimited fields as bytes (fixed-width fields are skipped)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield number, value
        elif wire == 2:
            size, i = _varint(buf, i)
            yield number, bytes(buf[i : i + size])
            i += size
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _int32(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # negative int32 as 10-byte varint


# AndroidAccessibilityNodeInfo field numbers (android_env/proto/a11y).
NODE_FIELDS = {
    2: "bounds",
    3: "class_name",
    4: "content_description",
    7: "text",
    13: "checked",
    14: "clickable",
    15: "editable",
    18: "focused",
    21: "scrollable",
    22: "selected",
    12: "checkable",
}


def forest_nodes(forest: bytes) -> list[dict]:
    """The nodes of a serialised AndroidAccessibilityForest (windows 1 -> tree 11 -> nodes 1)."""
    nodes = []
    for number, window in proto_fields(forest):
        if number != 1:
            continue
        for w_number, tree in proto_fields(window):
            if w_number != 11:
                continue
            for t_number, node_bytes in proto_fields(tree):
                if t_number != 1:
                    continue
                node = {"text": "", "content_description": "", "class_name": ""}
                for n_number, value in proto_fields(node_bytes):
                    name = NODE_FIELDS.get(n_number)
                    if name == "bounds":
                        rect = {k: _int32(v) for k, v in proto_fields(value)}
                        node["bounds"] = tuple(rect.get(k, 0) for k in (1, 2, 3, 4))
                    elif name in ("text", "content_description", "class_name"):
                        node[name] = value.decode("utf-8", errors="replace")
                    elif name is not None:
                        node[name] = bool(value)
                nodes.append(node)
    return nodes


def forest_elements(forest: bytes, width: int, height: int) -> tuple[list[Element], list]:
    """UI elements of one screen and their pixel boxes: nodes with a visible box and text, a
    content description, or an interaction attribute (ours)."""
    elements, pixel_boxes = [], []
    for node in forest_nodes(forest):
        left, top, right, bottom = node.get("bounds", (0, 0, 0, 0))
        left, top = max(left, 0), max(top, 0)
        right, bottom = min(right, width), min(bottom, height)
        text = (node["text"] or node["content_description"]).strip()
        interactive = any(
            node.get(k, False) for k in ("clickable", "editable", "scrollable", "checkable")
        )
        if right <= left or bottom <= top or not (text or interactive):
            continue
        elements.append(
            Element(
                text=text,
                cls=node["class_name"],
                box=(left / width, top / height, right / width, bottom / height),
                clickable=node.get("clickable", False),
                editable=node.get("editable", False),
                scrollable=node.get("scrollable", False),
                checked=node.get("checked", False),
                focused=node.get("focused", False),
                selected=node.get("selected", False),
            )
        )
        pixel_boxes.append((left, top, right, bottom))
    return elements, pixel_boxes


def element_at(boxes, x: float, y: float) -> int | None:
    """The smallest box containing (x, y); else the box whose centre is nearest (ours)."""
    inside = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
    hits = [i for i, b in enumerate(boxes) if b[0] <= x <= b[2] and b[1] <= y <= b[3]]
    if hits:
        return min(hits, key=lambda i: inside[i])
    if not boxes:
        return None
    return min(
        range(len(boxes)),
        key=lambda i: math.dist(
            (x, y), ((boxes[i][0] + boxes[i][2]) / 2, (boxes[i][1] + boxes[i][3]) / 2)
        ),
    )


# ------------------------------------------------------------------ AndroidControl


def androidcontrol_action(raw: dict, boxes) -> Action:
    kind = raw["action_type"]
    if kind in ("click", "long_press"):
        return Action(kind, target=element_at(boxes, raw["x"], raw["y"]))
    if kind == "scroll":
        return Action(f"scroll_{raw['direction']}")
    if kind == "input_text":
        return Action(kind, text=raw["text"])
    if kind == "open_app":
        return Action(kind, text=raw["app_name"])
    return Action(kind)  # navigate_back, navigate_home, wait


def convert_androidcontrol(
    root: Path, work_dir: Path, compression: str = "auto", max_episodes: int | None = None
) -> list[Episode]:
    """AndroidControl TFRecords -> episodes, screenshots written to ``work_dir/screens``."""
    screens = Path(work_dir) / "screens"
    screens.mkdir(parents=True, exist_ok=True)
    episodes: list[Episode] = []
    for path in tfrecord_files(root):
        for ex in read_examples(path, compression):
            episode_id = f"ac-{int(ex['episode_id'][0])}"
            actions = [json.loads(a) for a in ex["actions"]]
            steps = []
            for t, raw in enumerate(actions):
                width, height = int(ex["screenshot_widths"][t]), int(ex["screenshot_heights"][t])
                elements, boxes = forest_elements(ex["accessibility_trees"][t], width, height)
                action = androidcontrol_action(raw, boxes)
                if action.type in ("click", "long_press") and action.target is None:
                    raise ValueError(
                        f"episode {episode_id} step {t}: a click on a screen without elements"
                    )
                png = screens / f"{episode_id}_{t}.png"
                png.write_bytes(ex["screenshots"][t])
                steps.append(Step(tuple(elements), action, str(png)))
            episodes.append(Episode(ex["goal"][0].decode(), tuple(steps), "", episode_id))
            if max_episodes is not None and len(episodes) >= max_episodes:
                return episodes
    return episodes


# ------------------------------------------------------------------ AitW


def aitw_action(ex: dict, boxes) -> Action:
    kind = int(ex["results/action_type"][0])
    if kind == 4:  # dual point: tap or swipe
        ty, tx = ex["results/yx_touch"]
        ly, lx = ex["results/yx_lift"]
        if math.dist((ty, tx), (ly, lx)) <= AITW_CLICK_DISTANCE:
            return Action("click", target=element_at(boxes, tx, ty))
        if abs(ly - ty) >= abs(lx - tx):  # finger up -> content scrolls down (ours)
            return Action("scroll_down" if ly < ty else "scroll_up")
        return Action("scroll_right" if lx < tx else "scroll_left")
    if kind not in AITW_ACTIONS:
        raise ValueError(f"unknown AitW action type {kind}")
    if kind == 3:
        return Action("input_text", text=ex["results/type_action"][0].decode())
    return Action(AITW_ACTIONS[kind])


def convert_aitw(
    root: Path, work_dir: Path, compression: str = "auto", max_episodes: int | None = None
) -> list[Episode]:
    """AitW TFRecords (one example per step) -> episodes grouped by ``episode_id``."""
    screens = Path(work_dir) / "screens"
    screens.mkdir(parents=True, exist_ok=True)
    by_episode: dict[str, list] = {}
    for path in tfrecord_files(root):
        for ex in read_examples(path, compression):
            by_episode.setdefault(ex["episode_id"][0].decode(), []).append(ex)
    episodes = []
    for raw_id, rows in by_episode.items():
        episode_id = f"aitw-{raw_id}"
        rows.sort(key=lambda r: int(r["step_id"][0]))
        steps = []
        for ex in rows:
            t = int(ex["step_id"][0])
            positions = ex["image/ui_annotations_positions"]  # (y, x, h, w) per element
            texts = [b.decode() for b in ex["image/ui_annotations_text"]]
            ui_types = [b.decode() for b in ex["image/ui_annotations_ui_types"]]
            boxes = [
                (
                    positions[4 * i + 1],
                    positions[4 * i],
                    positions[4 * i + 1] + positions[4 * i + 3],
                    positions[4 * i] + positions[4 * i + 2],
                )
                for i in range(len(texts))
            ]
            elements = [
                Element(text=s, cls=u, box=tuple(b), clickable=True)
                for s, u, b in zip(texts, ui_types, boxes, strict=True)
            ]
            action = aitw_action(ex, boxes)
            png = screens / f"{episode_id}_{t}.png"
            png.write_bytes(ex["image/encoded"][0])
            steps.append(Step(tuple(elements), action, str(png)))
        episodes.append(Episode(rows[0]["goal_info"][0].decode(), tuple(steps), "", episode_id))
        if max_episodes is not None and len(episodes) >= max_episodes:
            break
    return episodes
