"""Features of episodes, precomputed once into padded tensors (brief Sec. 5, "Features").

Every model reads the same batch dictionary. Per element: its text (hashed word ids in the
toy, a sentence-encoder vector at paper scale), its image (the toy's 8x8 glyph, a CLIP vector
at paper scale), its attributes, its class and its box; per episode the goal's text; per step
the gold type, the click target and the typed text (the SPEC token of a text action).
Building these once, instead of looping over elements inside ``forward``, is what makes the
toy fast (the brief measured 5x).

Tensor names and shapes (N episodes, T steps, K elements, W words, F features)::

    goal_words (N, Wg) | goal_vec (N, F_txt)        the goal g
    elem_words (N, T, K, We) | elem_text_vec (N, T, K, F_txt)
    elem_image (N, T, K, F_img), elem_attrs (N, T, K, A), elem_cls (N, T, K),
    elem_box (N, T, K, 4), elem_mask (N, T, K)      padded elements are False
    step_mask (N, T), type_target (N, T), click_target (N, T) (-1: not a click step)
    spec_words (N, T, Ws) | spec_vec (N, T, F_txt)  typed text / app name of text steps
    family (N,)                                      toy task family (-1 at paper scale)
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from papers.limac import toydroid
from papers.limac.episodes import CLICK_TYPES, TEXT_TYPES, Episode, validate

WORD = re.compile(r"[a-z0-9]+")
TOY_ATTRIBUTES = ("clickable", "editable", "scrollable", "checked", "focused")


def words(text: str) -> list[str]:
    """Lowercase words of a string (the hashed bag of words' tokens)."""
    return WORD.findall(text.lower())


def hashed_words(text: str, n_buckets: int) -> list[int]:
    """CRC32 bucket ids in 1..n_buckets of the words of ``text`` (0 is padding)."""
    return [zlib.crc32(w.encode()) % n_buckets + 1 for w in words(text)]


def lexical_match(text: str, goal: str) -> float:
    """Fraction of the element's words that appear in the goal: the toy's stand-in for the
    goal-element alignment that pretrained text encoders give LiMAC (brief Sec. 5)."""
    element_words = words(text)
    if not element_words:
        return 0.0
    goal_words = set(words(goal))
    return sum(w in goal_words for w in element_words) / len(element_words)


@dataclass
class EpisodeTensors:
    """A data set's padded feature tensors and the episodes they came from."""

    x: dict[str, torch.Tensor]
    episodes: list[Episode]
    types: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.episodes)

    def batch(self, rows) -> dict[str, torch.Tensor]:
        """The rows' tensors, trimmed to the batch's longest episode and fullest screen."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        step_mask = self.x["step_mask"][rows]
        elem_mask = self.x["elem_mask"][rows]
        t_max = max(int(step_mask.sum(1).max()), 1)
        k_max = max(int(elem_mask.sum(2).max()), 1)
        out = {"rows": rows}
        for name, tensor in self.x.items():
            value = tensor[rows]
            if name.startswith("elem_"):
                value = value[:, :t_max, :k_max]
            elif name in ("step_mask", "type_target", "click_target") or name.startswith("spec"):
                value = value[:, :t_max]
            out[name] = value
        return out


def _pad(arrays: list[np.ndarray], shape: tuple[int, ...], dtype) -> np.ndarray:
    """Stack ragged leading-dimension arrays into ``shape`` with zero padding."""
    out = np.zeros(shape, dtype=dtype)
    for i, a in enumerate(arrays):
        if a.size:
            out[(i, *(slice(0, s) for s in a.shape))] = a
    return out


def pack(
    episodes: list[Episode],
    types: tuple[str, ...],
    *,
    element_text: Callable[[int, int, int], np.ndarray],
    element_image: Callable[[int, int, int], np.ndarray],
    goal_text: Callable[[int], np.ndarray],
    spec_text: Callable[[int, int], np.ndarray],
    class_index: Callable[[str], int],
    attributes: tuple[str, ...],
    lexical: bool,
    families: tuple[str, ...] = (),
    text_key: str = "words",
    max_steps: int | None = None,
    max_elements: int | None = None,
) -> EpisodeTensors:
    """Build :class:`EpisodeTensors`; the callables return one element's / goal's / typed
    text's features, so the toy (hashed words) and the paper scale (cached encoder vectors)
    share the layout. ``text_key`` is ``words`` (int ids) or ``vec`` (float vectors)."""
    for episode in episodes:
        validate(episode, types)
    n = len(episodes)
    t_max = max(len(e.steps) for e in episodes)
    k_max = max(len(s.elements) for e in episodes for s in e.steps)
    if max_steps is not None and t_max > max_steps:
        long = next(e for e in episodes if len(e.steps) > max_steps)
        raise ValueError(
            f"episode {long.episode_id or '<unnamed>'} has {len(long.steps)} steps > "
            f"model.max_steps={max_steps}"
        )
    if max_elements is not None and k_max > max_elements:
        raise ValueError(f"a screen has {k_max} elements > data.max_elements={max_elements}")
    is_words = text_key == "words"
    text_dtype = np.int64 if is_words else np.float32

    elem_text, elem_image, attrs, cls, box, goal, spec = [], [], [], [], [], [], []
    step_mask = np.zeros((n, t_max), dtype=bool)
    elem_mask = np.zeros((n, t_max, k_max), dtype=bool)
    type_target = np.zeros((n, t_max), dtype=np.int64)
    click_target = np.full((n, t_max), -1, dtype=np.int64)
    for e, episode in enumerate(episodes):
        goal.append(np.asarray(goal_text(e), dtype=text_dtype))
        ep_text, ep_image, ep_attrs, ep_cls, ep_box, ep_spec = [], [], [], [], [], []
        for t, step in enumerate(episode.steps):
            step_mask[e, t] = True
            elem_mask[e, t, : len(step.elements)] = True
            type_target[e, t] = types.index(step.action.type)
            if step.action.type in CLICK_TYPES:
                click_target[e, t] = step.action.target
            ep_spec.append(np.asarray(spec_text(e, t), dtype=text_dtype))
            texts = [
                np.asarray(element_text(e, t, i), dtype=text_dtype)
                for i in range(len(step.elements))
            ]
            ep_text.append(_stack(texts, text_dtype))
            ep_image.append(np.stack([element_image(e, t, i) for i in range(len(step.elements))]))
            rows = []
            for el in step.elements:
                row = [float(getattr(el, a)) for a in attributes]
                if lexical:
                    row.append(lexical_match(el.text, episode.goal))
                rows.append(row)
            ep_attrs.append(np.asarray(rows, dtype=np.float32))
            ep_cls.append(np.asarray([class_index(el.cls) for el in step.elements]))
            ep_box.append(np.asarray([el.box for el in step.elements], dtype=np.float32))
        elem_text.append(ep_text)
        elem_image.append(ep_image)
        attrs.append(ep_attrs)
        cls.append(ep_cls)
        box.append(ep_box)
        spec.append(_stack(ep_spec, text_dtype))

    def grid(per_episode, trailing: tuple[int, ...], dtype) -> np.ndarray:
        out = np.zeros((n, t_max, k_max, *trailing), dtype=dtype)
        for e, steps in enumerate(per_episode):
            for t, a in enumerate(steps):
                out[(e, t, *(slice(0, s) for s in a.shape))] = a
        return out

    text_width = max(a.shape[-1] for steps in elem_text for a in steps)
    image_width = elem_image[0][0].shape[-1]
    n_attrs = len(attributes) + int(lexical)
    x = {
        f"goal_{text_key}": torch.from_numpy(
            _pad(goal, (n, max(g.shape[0] for g in goal)), text_dtype)
        ),
        f"elem_{'words' if is_words else 'text_vec'}": torch.from_numpy(
            grid(elem_text, (text_width,), text_dtype)
        ),
        "elem_image": torch.from_numpy(grid(elem_image, (image_width,), np.float32)),
        "elem_attrs": torch.from_numpy(grid(attrs, (n_attrs,), np.float32)),
        "elem_cls": torch.from_numpy(grid(cls, (), np.int64)),
        "elem_box": torch.from_numpy(grid(box, (4,), np.float32)),
        "elem_mask": torch.from_numpy(elem_mask),
        "step_mask": torch.from_numpy(step_mask),
        "type_target": torch.from_numpy(type_target),
        "click_target": torch.from_numpy(click_target),
        f"spec_{text_key}": torch.from_numpy(
            _pad(spec, (n, t_max, max(s.shape[-1] for s in spec)), text_dtype)
        ),
        "family": torch.tensor(
            [families.index(e.family) if e.family in families else -1 for e in episodes]
        ),
    }
    return EpisodeTensors(x, list(episodes), tuple(types))


def _stack(rows: list[np.ndarray], dtype) -> np.ndarray:
    """Stack 1-D arrays of different lengths (word ids) or equal lengths (vectors)."""
    width = max((r.shape[0] for r in rows), default=0)
    return _pad(rows, (len(rows), max(width, 1)), dtype)


def featurise_toy(episodes: list[Episode], n_buckets: int) -> EpisodeTensors:
    """The toy's features (brief Sec. 5): hashed words (CRC32, ``n_buckets``), the icon's
    8x8 glyph as image, five attributes plus the lexical-match scalar, class and box."""
    table = toydroid.glyphs()

    def spec_words(e: int, t: int) -> list[int]:
        action = episodes[e].steps[t].action
        return hashed_words(action.text or "", n_buckets) if action.type in TEXT_TYPES else []

    return pack(
        episodes,
        toydroid.ACTION_TYPES,
        element_text=lambda e, t, i: hashed_words(episodes[e].steps[t].elements[i].text, n_buckets),
        element_image=lambda e, t, i: table[
            toydroid.ICONS.index(episodes[e].steps[t].elements[i].icon)
        ],
        goal_text=lambda e: hashed_words(episodes[e].goal, n_buckets),
        spec_text=spec_words,
        class_index=toydroid.ELEMENT_CLASSES.index,
        attributes=TOY_ATTRIBUTES,
        lexical=True,
        families=toydroid.FAMILIES,
        text_key="words",
    )


def make_toy_data(n_train: int, n_test: int, seed: int, n_buckets: int, test_offset: int):
    """Train episodes from ``seed``, test episodes from ``seed + test_offset`` (brief: 10000)."""
    train = featurise_toy(toydroid.make_episodes(n_train, seed), n_buckets)
    test = featurise_toy(toydroid.make_episodes(n_test, seed + test_offset), n_buckets)
    return train, test
