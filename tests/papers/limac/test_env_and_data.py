"""ToyDroid's expert trajectories (brief Sec. 7, item 7), the features, and episode checks."""

from __future__ import annotations

import numpy as np
import pytest

from papers.limac import toydroid
from papers.limac.data import featurise_toy, hashed_words, lexical_match
from papers.limac.episodes import (
    Action,
    Element,
    Episode,
    Step,
    read_jsonl,
    validate,
    write_jsonl,
)
from papers.limac.text_model import ToyTextModel


@pytest.fixture(scope="module")
def episodes():
    return toydroid.make_episodes(200, seed=7)


def test_every_expert_click_targets_a_clickable_element(episodes):
    for episode in episodes:
        validate(episode, toydroid.ACTION_TYPES)
        for step in episode.steps:
            if step.action.type in ("click", "long_press"):
                assert step.elements[step.action.target].clickable


def test_scroll_only_when_the_target_is_off_page(episodes):
    seen = set()
    for episode in episodes:
        if episode.family not in ("messages", "settings"):
            continue
        words = (
            episode.goal.split(" to ")[-1].split(" using")[0]
            if episode.family == "messages"
            else episode.goal.split(" ", 2)[2].rsplit(" in Settings", 1)[0]
        )
        for step in episode.steps[1:]:
            on_page = any(e.text == words and e.cls == "list_item" for e in step.elements)
            if step.action.type == "scroll_down":
                assert not on_page
                seen.add("scroll")
            elif (
                step.action.type == "click" and step.elements[step.action.target].cls == "list_item"
            ):
                assert on_page and step.elements[step.action.target].text == words
                break
    assert "scroll" in seen


def test_element_order_differs_between_samples_of_a_screen():
    elements = [
        Element(f"row {i}", "list_item", (0.1, 0.1 * i, 0.9, 0.1 * i + 0.08)) for i in range(6)
    ]
    rng = np.random.default_rng(0)
    first, _ = toydroid._screen(rng, elements)
    second, _ = toydroid._screen(rng, elements)
    assert [e.text for e in first if e.text.startswith("row")] != [
        e.text for e in second if e.text.startswith("row")
    ]


def test_families_and_text_less_icons(episodes):
    assert {e.family for e in episodes} == set(toydroid.FAMILIES)
    for episode in episodes:
        assert 3 <= len(episode.steps) <= 16  # settings without scrolling: 3 steps
        if episode.family == "messages":
            send = episode.steps[-1]
            assert send.elements[send.action.target].icon == "send"
            assert send.elements[send.action.target].text == ""


def test_toy_text_model_reads_the_goals(episodes):
    model = ToyTextModel()
    for episode in episodes:
        for step in episode.steps:
            if step.action.type in ("input_text", "open_app"):
                predicted = model.generate(episode.goal, None, step.elements, step.action.type)
                assert predicted == step.action.text


def test_same_seed_same_episodes():
    assert toydroid.make_episodes(5, 3) == toydroid.make_episodes(5, 3)
    assert toydroid.make_episodes(5, 3) != toydroid.make_episodes(5, 4)


def test_features():
    assert hashed_words("Send a Message", 4096) == hashed_words("send a message", 4096)
    assert all(1 <= i <= 4096 for i in hashed_words("alpha beta", 4096))
    assert lexical_match("alice", "Send a message to alice") == 1.0
    assert lexical_match("alice smith", "message alice") == 0.5
    assert lexical_match("", "anything") == 0.0
    data = featurise_toy(toydroid.make_episodes(8, 0), 4096)
    x = data.x
    assert x["elem_attrs"].shape[-1] == 6 and x["elem_image"].shape[-1] == 64
    steps = x["step_mask"].sum(1).tolist()
    assert steps == [len(e.steps) for e in data.episodes]
    clicks = x["click_target"][x["step_mask"]]
    assert (clicks >= 0).sum() == sum(
        s.action.type in ("click", "long_press") for e in data.episodes for s in e.steps
    )
    batch = data.batch([0, 1])
    assert batch["elem_mask"].shape[1] == max(steps[:2])


def test_click_target_outside_the_screen_fails_naming_episode_and_step(tmp_path):
    screen = (Element("ok", "button", (0.1, 0.1, 0.2, 0.2), clickable=True),)
    bad = Episode(
        "press ok",
        (Step(screen, Action("click", target=0)), Step(screen, Action("click", target=3))),
        episode_id="ep-9",
    )
    with pytest.raises(ValueError, match=r"episode ep-9 step 1: click target 3 is outside"):
        validate(bad, toydroid.ACTION_TYPES)
    with pytest.raises(ValueError, match=r"episode ep-9 step 1: click target 3"):
        featurise_toy([bad], 64)
    write_jsonl([bad], tmp_path / "episodes.jsonl")
    with pytest.raises(ValueError, match=r"episode ep-9 step 1"):
        read_jsonl(tmp_path / "episodes.jsonl", toydroid.ACTION_TYPES)


def test_jsonl_round_trip(tmp_path, episodes):
    write_jsonl(episodes[:5], tmp_path / "e.jsonl")
    assert read_jsonl(tmp_path / "e.jsonl", toydroid.ACTION_TYPES) == episodes[:5]
    (tmp_path / "broken.jsonl").write_text('{"goal": "x"}\n')
    with pytest.raises(ValueError, match="broken.jsonl line 1: malformed episode"):
        read_jsonl(tmp_path / "broken.jsonl", toydroid.ACTION_TYPES)
