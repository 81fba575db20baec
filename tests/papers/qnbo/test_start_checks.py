"""qNBO's start-time checks (issue 52): an asset a toy's option selects is checked before the
first toy runs, at every scale, naming the key that selected it."""

from __future__ import annotations

from tests.helpers import refused_at_start


def test_fashion_mnist_source_with_an_empty_asset_cache_is_refused_at_start(tmp_path, monkeypatch):
    # an empty cache folder stands in for a machine that never fetched the asset
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    message = refused_at_start(
        "qnbo", "smoke", ["hyper_cleaning.source=fashion_mnist"], tmp_path / "run"
    )
    assert message.startswith("papers.qnbo scale=smoke cannot start: hyper_cleaning.source=")
    assert "fetch_assets.py fashion_mnist" in message


def test_the_digits_source_reads_no_asset(tmp_path, monkeypatch):
    from papers.qnbo.train import data_preflight
    from shared.config import compose

    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    assert data_preflight(compose("qnbo", "smoke")) == []
