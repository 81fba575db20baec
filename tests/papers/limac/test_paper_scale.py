"""The paper-scale path on stand-ins: a two-episode AndroidControl TFRecord (screenshots,
accessibility forests, JSON actions), a tiny random CLIP vision tower and a tiny random BERT
saved to folders; conversion, embedding cache, one training epoch and an evaluation."""

from __future__ import annotations

import io
import json

import pytest
import torch

from papers.limac.convert import aitw_action, element_at, forest_elements, proto_fields
from shared.config import compose_dict
from shared.entry import execute
from shared.preflight import PreflightError

WIDTH, HEIGHT = 64, 128


# ------------------------------------------------------------------ protobuf stand-ins


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value) -> bytes:
    if isinstance(value, bool | int):
        return _varint(number << 3) + _varint(int(value) & ((1 << 64) - 1))
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _node(box, text="", desc="", cls="android.widget.TextView", **flags) -> bytes:
    """An AndroidAccessibilityNodeInfo (android_env/proto/a11y field numbers)."""
    rect = b"".join(_field(i, v) for i, v in zip((1, 2, 3, 4), box, strict=True))
    out = _field(2, rect) + _field(3, cls) + _field(7, text) + _field(4, desc)
    numbers = {"clickable": 14, "editable": 15, "scrollable": 21, "checked": 13, "focused": 18}
    return out + b"".join(_field(numbers[k], v) for k, v in flags.items() if v)


def _forest(nodes) -> bytes:
    tree = b"".join(_field(1, n) for n in nodes)
    window = _field(1, b"") + _field(11, tree)
    return _field(1, window)


def _png(colour) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (WIDTH, HEIGHT), colour).save(buffer, format="PNG")
    return buffer.getvalue()


SCREEN = [
    _node((0, 0, 64, 10), text="12:00"),
    _node((4, 20, 60, 40), text="Wi-Fi", clickable=True),
    _node((4, 44, 60, 64), desc="Bluetooth", clickable=True),
    _node((4, 70, 60, 90), text="", cls="android.widget.EditText", editable=True, clickable=True),
    _node((-5, 100, 0, 120), text="off screen"),  # no visible area: dropped
]


def test_forest_decoding_and_click_mapping():
    elements, boxes = forest_elements(_forest(SCREEN), WIDTH, HEIGHT)
    assert [e.text for e in elements] == ["12:00", "Wi-Fi", "Bluetooth", ""]
    assert elements[1].clickable and elements[3].editable and not elements[0].clickable
    assert elements[1].box == pytest.approx((4 / 64, 20 / 128, 60 / 64, 40 / 128))
    assert element_at(boxes, 30, 30) == 1
    assert element_at([(0, 0, 64, 128), (10, 10, 20, 20)], 15, 15) == 1  # smallest wins
    assert element_at(boxes, 62, 66) == 2  # nearest centre when nothing contains it
    assert list(proto_fields(_field(3, 300))) == [(3, 300)]


def test_aitw_gestures():
    tap = {
        "results/action_type": [4],
        "results/yx_touch": [0.5, 0.5],
        "results/yx_lift": [0.51, 0.5],
    }
    assert aitw_action(tap, [(0.4, 0.4, 0.6, 0.6)]).type == "click"
    swipe = {**tap, "results/yx_lift": [0.2, 0.5]}
    assert aitw_action(swipe, []).type == "scroll_down"
    typed = {"results/action_type": [3], "results/type_action": [b"pizza"]}
    assert aitw_action(typed, []).text == "pizza"


# ------------------------------------------------------------------ stand-in folders


def _write_androidcontrol(root):
    tfrecord = pytest.importorskip("tfrecord")
    root.mkdir()
    episodes = [
        (
            7,
            "Open Settings and turn on Wi-Fi then type hello",
            [
                {"action_type": "open_app", "app_name": "Settings"},
                {"action_type": "click", "x": 30, "y": 30},
                {"action_type": "input_text", "text": "hello"},
                {"action_type": "navigate_back"},
            ],
        ),
        (
            8,
            "Long press Bluetooth after scrolling",
            [
                {"action_type": "scroll", "direction": "down"},
                {"action_type": "long_press", "x": 30, "y": 50},
                {"action_type": "wait"},
                {"action_type": "click", "x": 30, "y": 80},
            ],
        ),
    ]
    writer = tfrecord.TFRecordWriter(str(root / "android_control-00000-of-00001"))
    for episode_id, goal, actions in episodes:
        n = len(actions) + 1  # the final screen has no action
        writer.write(
            {
                "episode_id": (episode_id, "int"),
                "goal": (goal.encode(), "byte"),
                "screenshots": ([_png((10 * i, 0, 0)) for i in range(n)], "byte"),
                "screenshot_widths": ([WIDTH] * n, "int"),
                "screenshot_heights": ([HEIGHT] * n, "int"),
                "accessibility_trees": ([_forest(SCREEN)] * n, "byte"),
                "actions": ([json.dumps(a).encode() for a in actions], "byte"),
            }
        )
    writer.close()


def _save_tiny_clip(path):
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    torch.manual_seed(0)
    config = CLIPVisionConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    CLIPVisionModel(config).save_pretrained(path)
    CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(path)


def _save_tiny_bert(path):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path.mkdir()
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "wi",
        "-",
        "fi",
        "bluetooth",
        "settings",
        "hello",
        "open",
        "turn",
        "on",
        "12",
        ":",
        "00",
        "long",
        "press",
    ]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    BertModel(config).save_pretrained(path)


def _paper_overrides(tmp_path) -> list[str]:
    return [
        f"data.androidcontrol_dir={tmp_path / 'ac'}",
        f"data.work_dir={tmp_path / 'work'}",
        f"features.image_encoder_dir={tmp_path / 'clip'}",
        f"features.text_encoder_dir={tmp_path / 'bert'}",
        "features.embed_batch_size=3",
        "text_model.kind=toy",
        "methods=[act,act_index,flat]",
        "model.d=16",
        "model.layers=1",
        "model.heads=2",
        "model.ff=32",
        "model.slots=8",
        "model.flat_hidden=32",
        "optim.epochs=1",
        "optim.batch_size=1",
        "data.test_fraction=0.5",
        "eval.batch_size=2",
        "loop.checkpoint_every=1",
        "runtime.progress=false",
    ]


def test_paper_scale_epoch_and_evaluation_on_stand_ins(tmp_path):
    _write_androidcontrol(tmp_path / "ac")
    _save_tiny_clip(tmp_path / "clip")
    _save_tiny_bert(tmp_path / "bert")
    cfg = compose_dict("limac", "paper", _paper_overrides(tmp_path))
    record = execute("limac", cfg, tmp_path / "run")
    work = tmp_path / "work"
    assert (work / "episodes.jsonl").is_file() and list(work.glob("embeddings-*.pt"))
    assert len(list((work / "screens").glob("*.png"))) == 8
    lines = (work / "episodes.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert [s["action"]["type"] for s in first["steps"]] == [
        "open_app",
        "click",
        "input_text",
        "navigate_back",
    ]
    assert first["steps"][1]["action"]["target"] == 1  # (30, 30) falls in "Wi-Fi"
    for method in ("act", "act_index", "flat"):
        metrics = record["metrics"][method]
        assert 0.0 <= metrics["type_acc"]["mean"] <= 1.0
        assert metrics["gating_mismatch"]["mean"] == 0.0
    assert list((tmp_path / "run").rglob("checkpoint.pt"))
    # a second run reads the converted episodes and the embedding cache back
    again = execute(
        "limac", compose_dict("limac", "paper", _paper_overrides(tmp_path)), tmp_path / "run2"
    )
    assert again["metrics"]["act"]["type_acc"] == record["metrics"]["act"]["type_acc"]


def test_preflight_names_what_is_missing(tmp_path):
    cfg = compose_dict("limac", "paper", [f"data.work_dir={tmp_path / 'w'}"])
    with pytest.raises(PreflightError) as error:
        execute("limac", cfg, tmp_path / "run")
    message = str(error.value)
    for key in (
        "data.androidcontrol_dir",
        "features.image_encoder_dir",
        "features.text_encoder_dir",
        "text_model.model_dir",
    ):
        assert key in message
    assert not (tmp_path / "run").exists()
