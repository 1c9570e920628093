"""Fixtures of the ts-trace tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Test helper modules sit next to this file; importlib import mode does not add it to the path.
sys.path.insert(0, str(Path(__file__).parent))

from trace_testkit import Buf, Queue, Src, pipeline


@pytest.fixture
def src() -> Src:
    return Src(name="src")


@pytest.fixture
def buf() -> Buf:
    return Buf(name="buf", pipeline_config=pipeline())


@pytest.fixture
def queue() -> Queue:
    return Queue(name="wq")
