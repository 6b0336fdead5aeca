from __future__ import annotations

from dataclasses import dataclass

from builders import make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import EnqueueExtensions
from kubesched.plugins.prioritysort import PrioritySort


@dataclass
class Queued:
    pi: PodInfo
    timestamp: float


def queued(name: str, priority: int | None, timestamp: float) -> Queued:
    return Queued(make_pod(name).priority(priority).info(), timestamp)


def order(items: list[Queued]) -> list[str]:
    return [q.pi.pod.metadata.name for q in sorted(items, key=PrioritySort().sort_key)]


def test_higher_priority_first_then_earlier_timestamp() -> None:
    items = [
        queued("low-early", 1, 1.0),
        queued("high-late", 100, 9.0),
        queued("high-early", 100, 2.0),
        queued("unset", None, 0.5),  # no priority counts as 0
        queued("negative", -5, 0.1),
        queued("low-late", 1, 3.0),
    ]
    assert order(items) == ["high-early", "high-late", "low-early", "low-late", "unset", "negative"]


def test_full_ties_keep_creation_order() -> None:
    first = queued("first", 7, 1.0)
    second = queued("second", 7, 1.0)
    assert order([second, first]) == ["first", "second"]


def test_plugin_metadata() -> None:
    assert PrioritySort().name == "PrioritySort"


def test_registers_no_events_as_kube() -> None:
    # kube's PrioritySort has no EnqueueExtensions: the QueueSort plugin rejects no pod, so no event needs a hint.
    assert not issubclass(PrioritySort, EnqueueExtensions)
