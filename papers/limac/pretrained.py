"""Paper-scale features: local CLIP vision and sentence encoders, element embeddings cached to
disk once (brief Sec. 6).

* Image: ``CLIPVisionModel.from_pretrained(dir)`` on each element's screenshot crop; the
  pooled output is the element's image vector.
* Text: a BERT-style sentence encoder (``AutoModel`` + mean pooling over tokens, normalised:
  what ``sentence-transformers`` computes for its mean-pooled models) on element texts, the
  goal and the typed texts / app names.

Both are loaded with ``local_files_only=True``; nothing is downloaded. The cache lives in
``data.work_dir`` and is keyed by the encoders' folders.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import torch

from papers.limac.convert import (
    AITW_TYPES,
    ANDROIDCONTROL_TYPES,
    convert_aitw,
    convert_androidcontrol,
)
from papers.limac.data import EpisodeTensors, pack
from papers.limac.episodes import ATTRIBUTES, TEXT_TYPES, Episode, read_jsonl, write_jsonl
from shared.checkpoint import load_checkpoint, save_checkpoint

TYPES = {"androidcontrol": ANDROIDCONTROL_TYPES, "aitw": AITW_TYPES}
EPISODES_FILE, SPLIT_FILE = "episodes.jsonl", "split.json"


class ImageEncoder:
    """CLIP vision tower from a local folder; ``encode(crops) -> (N, hidden)``."""

    def __init__(self, model_dir: str, device: str = "cpu"):
        from transformers import AutoImageProcessor, CLIPVisionModel

        self.processor = AutoImageProcessor.from_pretrained(model_dir, local_files_only=True)
        self.model = CLIPVisionModel.from_pretrained(model_dir, local_files_only=True).to(device)
        self.model.eval()
        self.device = device

    @torch.no_grad()
    def encode(self, crops: list) -> torch.Tensor:
        pixels = self.processor(images=crops, return_tensors="pt")["pixel_values"]
        return self.model(pixel_values=pixels.to(self.device)).pooler_output.float().cpu()


class TextEncoder:
    """Sentence encoder from a local folder: mean of the token states, L2-normalised."""

    def __init__(self, model_dir: str, device: str = "cpu", max_length: int = 64):
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModel.from_pretrained(model_dir, local_files_only=True).to(device)
        self.model.eval()
        self.device, self.max_length = device, max_length

    @torch.no_grad()
    def encode(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(self.device)
        states = self.model(**batch).last_hidden_state  # (N, L, H)
        weights = batch["attention_mask"].unsqueeze(-1).float()
        mean = (states * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(mean, dim=-1).float().cpu()


def element_crops(episode: Episode, t: int):
    """PIL crops of the step's elements from its screenshot (1 px at least)."""
    from PIL import Image

    step = episode.steps[t]
    with Image.open(step.screenshot) as image:
        image = image.convert("RGB")
        width, height = image.size
        crops = []
        for element in step.elements:
            x0, y0, x1, y1 = element.box
            left, top = int(x0 * width), int(y0 * height)
            right, bottom = max(int(x1 * width), left + 1), max(int(y1 * height), top + 1)
            crops.append(image.crop((left, top, right, bottom)))
    return crops


def embed_episodes(episodes: list[Episode], image_encoder, text_encoder, batch_size: int) -> dict:
    """Image vectors of every element (episode, step, element order) and text vectors of
    every distinct string (element texts, goals, typed texts); computed once."""
    texts = sorted(
        {e.goal for e in episodes}
        | {el.text for e in episodes for s in e.steps for el in s.elements}
        | {s.action.text for e in episodes for s in e.steps if s.action.text}
    )
    text_vectors = torch.cat(
        [text_encoder.encode(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
    )
    images, pending = [], []
    for episode in episodes:
        for t in range(len(episode.steps)):
            pending += element_crops(episode, t)
            while len(pending) >= batch_size:
                images.append(image_encoder.encode(pending[:batch_size]))
                pending = pending[batch_size:]
    if pending:
        images.append(image_encoder.encode(pending))
    return {"texts": texts, "text_vectors": text_vectors, "image_vectors": torch.cat(images)}


def _cache_key(*parts) -> str:
    return hashlib.sha1(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:12]


def convert_once(cfg) -> list[Episode]:
    """``work_dir/episodes.jsonl`` (and its split), converting the raw TFRecords on first use."""
    d = cfg.data
    work = Path(d.work_dir)
    types = TYPES[d.source]
    path = work / EPISODES_FILE
    if not path.exists():
        if d.source == "androidcontrol":
            episodes = convert_androidcontrol(
                Path(d.androidcontrol_dir), work, d.compression, d.max_episodes
            )
            splits = Path(d.androidcontrol_dir) / "splits.json"
        else:
            episodes = convert_aitw(Path(d.aitw_dir), work, d.compression, d.max_episodes)
            splits = None
        test_ids = _test_ids(episodes, splits, d.test_fraction, d.split_seed)
        (work / SPLIT_FILE).write_text(json.dumps({"test": sorted(test_ids)}))
        write_jsonl(episodes, path)
    return read_jsonl(path, types)


def _test_ids(episodes, splits: Path | None, fraction: float, seed: int) -> set[str]:
    """The official test split when ``splits.json`` exists, else a seeded random fraction."""
    ids = [e.episode_id for e in episodes]
    if splits is not None and splits.exists():
        official = {f"ac-{i}" for i in json.loads(splits.read_text())["test"]}
        return official & set(ids)
    order = np.random.default_rng(seed).permutation(len(ids))
    n_test = max(1, round(fraction * len(ids)))
    return {ids[i] for i in order[:n_test]}


def load_paper_data(cfg) -> tuple[EpisodeTensors, EpisodeTensors]:
    """Train and test tensors of AndroidControl / AitW with cached encoder features."""
    d, f = cfg.data, cfg.features
    work = Path(d.work_dir)
    episodes = convert_once(cfg)
    test_ids = set(json.loads((work / SPLIT_FILE).read_text())["test"])
    cache = work / f"embeddings-{_cache_key(f.image_encoder_dir, f.text_encoder_dir)}.pt"
    if cache.exists():
        embedded = load_checkpoint(cache)  # weights_only=True
    else:
        device = "cuda" if cfg.runtime.device != "cpu" and torch.cuda.is_available() else "cpu"
        embedded = embed_episodes(
            episodes,
            ImageEncoder(f.image_encoder_dir, device),
            TextEncoder(f.text_encoder_dir, device),
            f.embed_batch_size,
        )
        save_checkpoint(embedded, cache)
    return split_tensors(episodes, embedded, test_ids, cfg)


def split_tensors(episodes, embedded, test_ids: set[str], cfg):
    """Pack train and test episodes with the cached vectors (image rows follow the
    episode, step, element order of ``episodes``)."""
    d = cfg.data
    types = TYPES[d.source]
    row_of_text = {text: i for i, text in enumerate(embedded["texts"])}
    text_vectors, image_vectors = embedded["text_vectors"], embedded["image_vectors"]
    offsets, cursor = [], 0
    for episode in episodes:
        per_step = []
        for step in episode.steps:
            per_step.append(cursor)
            cursor += len(step.elements)
        offsets.append(per_step)
    if cursor != image_vectors.shape[0]:
        raise ValueError(
            f"embedding cache has {image_vectors.shape[0]} element images for {cursor} "
            "elements; delete the stale embeddings-*.pt in data.work_dir"
        )

    def subset(keep) -> EpisodeTensors:
        chosen = [i for i, e in enumerate(episodes) if keep(e)]
        eps = [episodes[i] for i in chosen]
        zeros = torch.zeros(text_vectors.shape[1])

        def spec(e, t):
            action = eps[e].steps[t].action
            if action.type in TEXT_TYPES and action.text:
                return text_vectors[row_of_text[action.text]].numpy()
            return zeros.numpy()

        return pack(
            eps,
            types,
            element_text=lambda e, t, i: text_vectors[
                row_of_text[eps[e].steps[t].elements[i].text]
            ].numpy(),
            element_image=lambda e, t, i: image_vectors[offsets[chosen[e]][t] + i].numpy(),
            goal_text=lambda e: text_vectors[row_of_text[eps[e].goal]].numpy(),
            spec_text=spec,
            class_index=lambda name: zlib.crc32(name.encode()) % d.n_class_buckets,
            attributes=ATTRIBUTES,
            lexical=cfg.features.lexical_match,
            text_key="vec",
            max_steps=cfg.model.max_steps,
            max_elements=d.max_elements,
        )

    return subset(lambda e: e.episode_id not in test_ids), subset(
        lambda e: e.episode_id in test_ids
    )
