"""The text model LiMAC calls for input-text and open-app actions (paper Sec. 3.3; brief
Sec. 3.7): one interface, ``generate(goal, screenshot_png, elements, action_type) -> str``.

* :class:`ToyTextModel`: rule-based extractor for the toy's goals (quoted text, the item, the
  app name); text accuracy is about 100% by design.
* :class:`HFLocalVLM`: a fine-tuned Florence-2 or Qwen2-VL from a local folder
  (``local_files_only=True``; nothing is downloaded).
* :class:`OpenAICompatVLM`: any OpenAI-compatible ``/chat/completions`` endpoint.
* :class:`RecordingTextModel`: wraps another and records its calls (gating checks, latency).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.request
from pathlib import Path
from typing import Protocol

from papers.limac.config import VLMS
from papers.limac.episodes import Element

APP_NAMES = ("Messages", "Settings", "Shop", "Notes", "Camera", "Clock", "Maps", "Music")


class TextActionModel(Protocol):
    def generate(
        self, goal: str, screenshot: str | None, elements: tuple[Element, ...], action_type: str
    ) -> str: ...


def prompt_for(goal: str, elements: tuple[Element, ...], action_type: str) -> str:
    """The instruction given to a VLM: the goal, the numbered elements, what to produce."""
    listing = "\n".join(f"[{i}] {e.cls} '{e.text}'" for i, e in enumerate(elements) if e.text)
    what = "the app name to open" if action_type == "open_app" else "the text to type"
    return f"Goal: {goal}\nScreen elements:\n{listing}\nAnswer with {what} only."


class ToyTextModel:
    """Rule-based text for ToyDroid goals: the quoted message, the shop item, or the app."""

    def generate(self, goal, screenshot, elements, action_type) -> str:
        if action_type == "open_app":
            return next((app for app in APP_NAMES if app.lower() in goal.lower().split()), "")
        quoted = re.search(r"'([^']*)'", goal)
        if quoted:
            return quoted.group(1)
        item = re.search(r"search for (.+?) in ", goal, flags=re.IGNORECASE)
        return item.group(1) if item else ""


class RecordingTextModel:
    """Counts the calls to ``inner`` (with their action types) and their wall time."""

    def __init__(self, inner: TextActionModel):
        self.inner = inner
        self.calls: list[str] = []
        self.seconds = 0.0

    def generate(self, goal, screenshot, elements, action_type) -> str:
        self.calls.append(action_type)
        start = time.perf_counter()
        try:
            return self.inner.generate(goal, screenshot, elements, action_type)
        finally:
            self.seconds += time.perf_counter() - start


class HFLocalVLM:
    """A fine-tuned VLM from a local folder: Qwen2-VL through ``AutoModelForImageTextToText``,
    Florence-2 through ``AutoModelForCausalLM(trust_remote_code=True)``; always
    ``local_files_only=True``."""

    def __init__(
        self, model_dir: str, kind: str = "qwen2vl", max_new_tokens: int = 32, device: str = "cpu"
    ):
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoProcessor

        if kind not in VLMS:
            raise ValueError(f"text_model.vlm must be qwen2vl or florence2, got {kind!r}")
        remote = kind == "florence2"
        self.kind, self.max_new_tokens, self.device = kind, max_new_tokens, device
        self.processor = AutoProcessor.from_pretrained(
            model_dir, local_files_only=True, trust_remote_code=remote
        )
        loader = AutoModelForCausalLM if remote else AutoModelForImageTextToText
        self.model = loader.from_pretrained(
            model_dir, local_files_only=True, trust_remote_code=remote
        ).to(device)
        self.model.eval()

    def generate(self, goal, screenshot, elements, action_type) -> str:
        import torch
        from PIL import Image

        text = prompt_for(goal, elements, action_type)
        image = Image.open(screenshot).convert("RGB") if screenshot else None
        if self.kind == "qwen2vl":
            content = ([{"type": "image"}] if image is not None else []) + [
                {"type": "text", "text": text}
            ]
            text = self.processor.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True
            )
        inputs = self.processor(text=text, images=image, return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens)
        new = out[:, inputs["input_ids"].shape[1] :]
        return self.processor.batch_decode(new, skip_special_tokens=True)[0].strip()


class OpenAICompatVLM:
    """POST ``{base_url}/chat/completions`` with the screenshot as a base64 image part."""

    def __init__(self, base_url: str, model: str, api_key_env: str, timeout_s: float = 60.0):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env, self.timeout_s = model, api_key_env, timeout_s

    def generate(self, goal, screenshot, elements, action_type) -> str:
        content = [{"type": "text", "text": prompt_for(goal, elements, action_type)}]
        if screenshot:
            data = base64.b64encode(Path(screenshot).read_bytes()).decode()
            content.append(
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
            )
        body = {"model": self.model, "messages": [{"role": "user", "content": content}]}
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {os.environ.get(self.api_key_env, '')}",
            },
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            reply = json.loads(response.read())
        return reply["choices"][0]["message"]["content"].strip()
