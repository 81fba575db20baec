"""Name sets of papers/lucidppn/config.py agree with the structures train.py builds on them."""

from __future__ import annotations

from papers.lucidppn import config, train


def test_lucid_methods_are_the_methods_of_the_lucid_architecture():
    lucid = {name for name, (arch, _) in train.METHODS.items() if arch == "lucid"}
    assert lucid == set(config.LUCID_METHODS)
