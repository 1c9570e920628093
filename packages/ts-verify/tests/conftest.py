"""Fixtures of the ts-verify tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test helper modules sit next to this file; importlib import mode does not add it to the path.
sys.path.insert(0, str(Path(__file__).parent))

from verify_testkit import Dst, Queue, Src


@pytest.fixture
def src() -> Src:
    return Src(name="src")


@pytest.fixture
def dst() -> Dst:
    return Dst(name="dst")


@pytest.fixture
def queue() -> Queue:
    return Queue(name="wq")
