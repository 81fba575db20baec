"""Test-wide setup: offline hubs, quiet progress bars, and the list of papers."""

from __future__ import annotations

import os

import pytest

# Any accidental hub access must fail loudly instead of downloading (CI has no network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from tests.helpers import PAPERS  # noqa: E402


@pytest.fixture(params=PAPERS)
def slug(request) -> str:
    return request.param
