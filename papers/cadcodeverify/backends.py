"""Chat backends behind one interface (brief Sec. 3.5): ``complete(messages, images) -> str``.

* :class:`OpenAICompatChat`: POST ``{base_url}/chat/completions`` (OpenAI, a vLLM server,
  any compatible endpoint) with the standard library; images go as base64 PNG ``image_url``
  parts of the last user message.
* :class:`HFLocalChat`: a local ``transformers`` model loaded from a folder with
  ``local_files_only=True`` (nothing is downloaded): a VLM (``AutoProcessor`` +
  ``AutoModelForImageTextToText``) or a code-only LLM (``AutoTokenizer`` +
  ``AutoModelForCausalLM``), which cannot take images and needs a separate verifier.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Protocol


class ChatModel(Protocol):
    def complete(self, messages: list[dict], images: tuple[bytes, ...] = (), **gen) -> str: ...


def _with_images(messages: list[dict], images: tuple[bytes, ...]) -> list[dict]:
    """The messages with the PNG images appended to the last user turn as image_url parts."""
    if not images:
        return messages
    out = [dict(m) for m in messages]
    last_user = max(i for i, m in enumerate(out) if m["role"] == "user")
    text = out[last_user]["content"]
    parts = [{"type": "text", "text": text}] + [
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
        }
        for png in images
    ]
    out[last_user]["content"] = parts
    return out


class OpenAICompatChat:
    """An OpenAI-compatible chat-completions endpoint (``urllib``; no SDK needed)."""

    def __init__(
        self, base_url: str, model: str, api_key_env: str | None = None, timeout: float = 120.0
    ):
        if not base_url:
            raise ValueError("OpenAICompatChat needs a base_url (e.g. http://localhost:8000/v1)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout

    def complete(self, messages: list[dict], images: tuple[bytes, ...] = (), **gen) -> str:
        body = {"model": self.model, "messages": _with_images(messages, images)}
        body.update({k: v for k, v in gen.items() if k in ("temperature", "max_tokens", "seed")})
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:500]
            raise RuntimeError(f"{self.base_url}: HTTP {err.code}: {detail}") from err
        try:
            return reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as err:
            raise RuntimeError(f"{self.base_url}: unexpected reply {str(reply)[:300]}") from err


class HFLocalChat:
    """A local ``transformers`` chat model (VLM or code-only LLM), loaded lazily."""

    def __init__(self, model_dir: str | Path, device: str = "cpu"):
        self.model_dir = Path(model_dir).expanduser()
        if not self.model_dir.is_dir():
            raise FileNotFoundError(f"model_dir={self.model_dir} does not exist")
        self.device = device
        self._model = self._processor = None
        self.is_vlm = False

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(self.model_dir, local_files_only=True)
        self.is_vlm = hasattr(config, "vision_config")
        if self.is_vlm:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            self._processor = AutoProcessor.from_pretrained(self.model_dir, local_files_only=True)
            self._model = AutoModelForImageTextToText.from_pretrained(
                self.model_dir, local_files_only=True
            )
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self._processor = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
            self._model = AutoModelForCausalLM.from_pretrained(
                self.model_dir, local_files_only=True
            )
        self._model.to(self.device).eval()

    def complete(self, messages: list[dict], images: tuple[bytes, ...] = (), **gen) -> str:
        import torch

        self._load()
        max_new_tokens = int(gen.get("max_tokens", 512))
        temperature = float(gen.get("temperature", 0.0))
        sampling = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
        if images and not self.is_vlm:
            raise ValueError(
                f"{self.model_dir} is a text-only model and cannot read images: configure a "
                "separate (vision) verifier model"
            )
        if self.is_vlm:
            import io

            from PIL import Image

            pictures = [Image.open(io.BytesIO(png)).convert("RGB") for png in images]
            chat = [dict(m) for m in messages]
            chat[-1] = {
                "role": chat[-1]["role"],
                "content": [{"type": "image"} for _ in pictures]
                + [{"type": "text", "text": messages[-1]["content"]}],
            }
            text = self._processor.apply_chat_template(chat, add_generation_prompt=True)
            inputs = self._processor(text=[text], images=pictures or None, return_tensors="pt").to(
                self.device
            )
            tokenizer = self._processor.tokenizer
        else:
            tokenizer = self._processor
            ids = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            inputs = {k: v.to(self.device) for k, v in ids.items()}
        with torch.no_grad():
            out = self._model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                **sampling,
            )
        prompt_length = inputs["input_ids"].shape[1]
        return tokenizer.decode(out[0, prompt_length:], skip_special_tokens=True)


def make_chat(backend: str, **kwargs) -> ChatModel:
    """``openai`` (base_url, model, api_key_env, timeout) or ``hf`` (model_dir, device)."""
    if backend == "openai":
        return OpenAICompatChat(
            kwargs["base_url"], kwargs["model"], kwargs.get("api_key_env"), kwargs["timeout"]
        )
    if backend == "hf":
        return HFLocalChat(kwargs["model_dir"], kwargs.get("device", "cpu"))
    raise ValueError(f"unknown chat backend {backend!r}; choose openai or hf")
