"""Test-wide setup: offline hubs, quiet progress bars, and the list of papers."""

from __future__ import annotations

import os

import pytest
import torch

# Any accidental hub access must fail loudly instead of downloading (CI has no network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from tests.helpers import PAPERS  # noqa: E402


@pytest.fixture(params=PAPERS)
def slug(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def one_thread():
    """One torch intra-op thread for a module of tiny-tensor tests: faster, and far faster on a
    busy machine. Restored afterwards so no other test inherits it."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
