"""gcpolicy's periodic freeze: survivors leave the collector's sight, and garbage in reference
cycles frozen with them is still collected at the next full collection."""

from __future__ import annotations

import gc
import weakref

import pytest

from kubesched.infra import gcpolicy


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture
def collector():
    yield
    gc.unfreeze()  # give back whatever a test froze
    gc.collect()


def test_frozen_cycles_wait_for_the_full_collection(collector) -> None:
    now = [0.0]
    freezer = gcpolicy.Freezer(clock=lambda: now[0], every=3, full_seconds=60.0)
    garbage = Node()
    ref = weakref.ref(garbage)
    del garbage
    for _ in range(3):  # the third cycle freezes
        freezer.cycle_done()
    assert freezer.freezes == 1 and freezer.full_collections == 0
    gc.collect()
    assert ref() is not None  # frozen: out of the collector's sight
    now[0] = 61.0
    freezer.freeze()
    assert freezer.full_collections == 1
    assert ref() is None  # given back and collected


def test_cycle_done_does_nothing_until_a_process_asks_for_it(monkeypatch) -> None:
    monkeypatch.setattr(gcpolicy, "_freezer", None)
    frozen = gc.get_freeze_count()
    for _ in range(gcpolicy.FREEZE_EVERY + 1):
        gcpolicy.cycle_done()
    assert gc.get_freeze_count() == frozen
