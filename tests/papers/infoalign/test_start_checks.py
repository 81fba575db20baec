"""InfoAlign's start-time checks (issue 52): a data section whose downstream splits the probe
cannot score is refused before pre-training, naming the key, and the run reuses the world
that the check loaded."""

from __future__ import annotations

from papers.infoalign.train import data_preflight, load_world, unscorable_splits
from shared.config import compose
from tests.helpers import refused_at_start


def test_max_molecules_20_is_refused_before_pretraining(tmp_path):
    message = refused_at_start("infoalign", "smoke", ["data.max_molecules=20"], tmp_path / "run")
    assert message.startswith("papers.infoalign scale=smoke cannot start: data.max_molecules=20")
    assert "valid (1 molecule(s))" in message


def test_the_smoke_world_is_scorable_and_loaded_once():
    cfg = compose("infoalign", "smoke")
    assert data_preflight(cfg) == []
    world = load_world(cfg)
    assert unscorable_splits(world) == []
    assert load_world(compose("infoalign", "smoke")) is world  # the run reuses it
