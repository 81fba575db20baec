"""LucidPPN's start-time checks (issue 52): an empty toy backbone is refused at compose."""

from __future__ import annotations

from tests.helpers import refused_at_start


def test_empty_toy_channels_and_strides_are_refused_at_start(tmp_path):
    overrides = ["model.toy_channels=[]", "model.toy_strides=[]"]
    message = refused_at_start("lucidppn", "smoke", overrides, tmp_path / "run")
    assert message.startswith("model.toy_channels=[]: name at least one conv block")
