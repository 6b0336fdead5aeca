"""The DRA CEL oracle (tools/k8s/dracel, the real k8s.io/dynamic-resource-allocation/cel), one
process for the directory's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integration.harness.dracel import Oracle, oracle_binary


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    running = Oracle(oracle_binary())
    yield running
    running.close()
