"""NodePorts: host port conflicts by protocol, port and host IP (0.0.0.0 binds every IP)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.podinfo import HostPort, PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, UNSCHEDULED_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.nodeports import ERR_REASON, NodePorts
from unit.plugins.pluginkit import check_coverage


def with_ports(name: str, *ports: tuple[str, str, int], node_name: str = "") -> PodInfo:
    """A pod using the given (protocol, hostIP, hostPort)s."""
    containers = [{"name": "c", "image": "app:1",
                   "ports": [{"containerPort": p, "hostPort": p, "protocol": proto} for proto, _, p in ports]}]
    pi = make_pod(name).node(node_name).containers(*containers).info()
    # Set the host IPs directly so the test covers the conflict rules on their own.
    pi.host_ports = tuple(HostPort(proto, ip, p) for proto, ip, p in ports)
    return pi


def cluster(*used: tuple[str, str, int]) -> Cache:
    """Node "used" runs a pod holding `used`; node "free" runs nothing."""
    cache = cache_with([make_node("used").obj(), make_node("free").obj()])
    cache.add_pod(with_ports("holder", *used, node_name="used"))
    return cache


def rejected(cache: Cache, pi: PodInfo, plugin: NodePorts | None = None) -> set[str]:
    plugin = plugin or NodePorts(handle=UnitHandle(cache))
    state = CycleState()
    _, status = plugin.pre_filter(state, pi)
    assert status is None
    result = plugin.filter(state, pi, cache.table)
    if result is None:
        return set()
    out = set()
    for name, row in cache.table.index.items():
        code = int(result.codes[row])
        if code:
            assert result.describe(code) == (Code.UNSCHEDULABLE, (ERR_REASON,))
            out.add(name)
    return out


@pytest.mark.parametrize(
    ("used", "wanted", "conflict"),
    [
        (("TCP", "0.0.0.0", 8080), ("TCP", "0.0.0.0", 8080), True),
        (("TCP", "10.0.0.1", 8080), ("TCP", "10.0.0.1", 8080), True),
        (("TCP", "10.0.0.1", 8080), ("TCP", "10.0.0.2", 8080), False),
        (("TCP", "10.0.0.1", 8080), ("TCP", "0.0.0.0", 8080), True),
        (("TCP", "0.0.0.0", 8080), ("TCP", "10.0.0.1", 8080), True),
        (("UDP", "0.0.0.0", 8080), ("TCP", "0.0.0.0", 8080), False),
        (("SCTP", "10.0.0.1", 8080), ("SCTP", "0.0.0.0", 8080), True),
        (("TCP", "0.0.0.0", 8080), ("TCP", "0.0.0.0", 8081), False),
    ],
)
def test_conflict_rules(used: tuple[str, str, int], wanted: tuple[str, str, int], conflict: bool) -> None:
    cache = cluster(used)
    assert rejected(cache, with_ports("p", wanted)) == ({"used"} if conflict else set())


def test_any_conflicting_port_rejects_the_node() -> None:
    cache = cluster(("TCP", "0.0.0.0", 443))
    assert rejected(cache, with_ports("p", ("TCP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 443))) == {"used"}


def test_ports_from_the_manifest_default_to_tcp_on_every_ip() -> None:
    cache = cache_with([make_node("a").obj(), make_node("b").obj()])
    manifest = [{"name": "c", "image": "app:1", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    cache.add_pod(make_pod("holder").node("a").containers(*manifest).info())
    assert rejected(cache, make_pod("p").containers(*manifest).info()) == {"a"}
    # A container port without a host port takes nothing on the host.
    plain = [{"name": "c", "image": "app:1", "ports": [{"containerPort": 8080}]}]
    status = NodePorts().pre_filter(CycleState(), make_pod("q").containers(*plain).info())[1]
    assert status is not None and status.code == Code.SKIP


def test_pod_without_host_ports_is_skipped() -> None:
    _, status = NodePorts().pre_filter(CycleState(), make_pod("p").req(cpu="1").info())
    assert status is not None and status.code == Code.SKIP


def test_freed_and_newly_used_ports_are_seen() -> None:
    cache = cluster(("TCP", "0.0.0.0", 8080))
    plugin = NodePorts(handle=UnitHandle(cache))
    wanted = ("TCP", "0.0.0.0", 8080)
    assert rejected(cache, with_ports("p", wanted), plugin) == {"used"}
    holder = next(iter(cache.table.pods[cache.table.row_of("used")].values()))
    cache.remove_pod(holder.uid)
    assert rejected(cache, with_ports("p", wanted), plugin) == set()
    cache.add_pod(with_ports("other", wanted, node_name="free"))
    assert rejected(cache, with_ports("p", wanted), plugin) == {"free"}


def test_removed_node_frees_its_ports() -> None:
    cache = cluster(("TCP", "0.0.0.0", 8080))
    plugin = NodePorts(handle=UnitHandle(cache))
    assert rejected(cache, with_ports("p", ("TCP", "0.0.0.0", 8080)), plugin) == {"used"}
    cache.remove_node("used")
    assert rejected(cache, with_ports("p", ("TCP", "0.0.0.0", 8080)), plugin) == set()


def test_filter_without_prefilter_state() -> None:
    cache = cluster(("TCP", "0.0.0.0", 8080))
    pi = with_ports("p", ("TCP", "0.0.0.0", 8080))
    result = NodePorts().filter(CycleState(), pi, cache.table)
    assert result is not None
    assert bool(result.codes[cache.table.row_of("used")]) and not bool(result.codes[cache.table.row_of("free")])


def test_no_nodes() -> None:
    cache = Cache()
    assert rejected(cache, with_ports("p", ("TCP", "0.0.0.0", 80))) == set()


def test_the_row_wise_filter_says_what_the_whole_one_says() -> None:
    """filter_rows (OpportunisticBatching's hint and re-check) against filter read at the same rows,
    on clusters where a port is held by few nodes and by more than the index's dense bound."""
    import random

    import numpy as np

    from kubesched.cache.portindex import DENSE_ROWS

    rng = random.Random(5)
    choices = [("TCP", "0.0.0.0", 80), ("TCP", "10.0.0.1", 80), ("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 443)]
    checked = 0
    for holders in (5, DENSE_ROWS * 2):
        cache = cache_with([make_node(f"n{i}").obj() for i in range(DENSE_ROWS * 3)])
        for i in range(holders):
            held = choices[0] if rng.random() < 0.7 else rng.choice(choices)  # TCP 80 on every IP: dense at 128
            cache.add_pod(with_ports(f"h{i}", held, node_name=f"n{rng.randrange(DENSE_ROWS * 3)}"))
        plugin = NodePorts(handle=UnitHandle(cache))
        for want in choices:
            pi = with_ports("p", want)
            state = CycleState()
            plugin.pre_filter(state, pi)
            whole = plugin.filter(state, pi, cache.table)
            rows = np.array(sorted(rng.sample(range(cache.table.size), 40)), dtype=np.intp)
            some = plugin.filter_rows(state, pi, cache.table, rows)
            expect = [False] * rows.size if whole is None else [bool(whole.codes[r]) for r in rows]
            got = [False] * rows.size if some is None else [bool(c) for c in some.codes]
            assert got == expect, (holders, want)
            checked += any(expect)
    assert checked >= 4  # most cases reject some of the rows asked about


# --- events and queueing hints ------------------------------------------------------------------------

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


def test_events_are_kubes() -> None:
    plugin = NodePorts()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [(ASSIGNED_POD, A.Delete), (NODE, A.Add)]
    assert [e.hint for e in events] == [plugin.is_schedulable_after_assigned_pod_deleted, None]
    check_coverage(events, not_covered=[(NODE, A.UpdateNodeLabel), (NODE, A.Delete), (UNSCHEDULED_POD, A.Delete), (ASSIGNED_POD, A.Add)])


def nominated(pi: PodInfo) -> PodInfo:
    pi.pod.status.nominated_node_name = "n1"
    return pi


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        pytest.param(lambda: with_ports("o", ("TCP", "0.0.0.0", 8080)), SKIP, id="unscheduled"),
        pytest.param(lambda: make_pod("o").node("n1").info(), SKIP, id="no-host-port"),
        pytest.param(lambda: with_ports("o", ("TCP", "0.0.0.0", 8081), node_name="n1"), SKIP, id="unrelated-port"),
        pytest.param(lambda: with_ports("o", ("UDP", "0.0.0.0", 8080), node_name="n1"), SKIP, id="other-protocol"),
        pytest.param(lambda: with_ports("o", ("TCP", "10.0.0.2", 8080), node_name="n1"), Q, id="specific-ip-under-bind-all"),
        pytest.param(lambda: with_ports("o", ("TCP", "0.0.0.0", 8080), node_name="n1"), Q, id="released-port"),
        pytest.param(lambda: nominated(with_ports("o", ("TCP", "0.0.0.0", 8080))), Q, id="released-by-nominated-pod"),
    ],
)
def test_hint_after_assigned_pod_deleted(deleted: Any, want: QueueingHint) -> None:
    pending = with_ports("p", ("TCP", "0.0.0.0", 8080))
    assert NodePorts().is_schedulable_after_assigned_pod_deleted(pending, deleted(), None) == want


def test_hint_uses_the_filters_host_ip_rule() -> None:
    plugin = NodePorts()
    pending = with_ports("p", ("TCP", "10.0.0.1", 80))
    assert plugin.is_schedulable_after_assigned_pod_deleted(pending, with_ports("o", ("TCP", "10.0.0.2", 80), node_name="n"), None) == SKIP
    assert plugin.is_schedulable_after_assigned_pod_deleted(pending, with_ports("o", ("TCP", "10.0.0.1", 80), node_name="n"), None) == Q
    assert plugin.is_schedulable_after_assigned_pod_deleted(pending, with_ports("o", ("TCP", "0.0.0.0", 80), node_name="n"), None) == Q


def test_hint_reads_ports_as_the_pod_declares_them() -> None:
    # hostNetwork defaults hostPort to containerPort; a regular init container holds no port.
    host_net = (
        make_pod("o").node("n").containers({"name": "c", "image": "a", "ports": [{"containerPort": 9000}]}).spec(hostNetwork=True).info()
    )
    init_only = make_pod("o").node("n").spec(initContainers=[
        {"name": "i", "image": "a", "ports": [{"containerPort": 9000, "hostPort": 9000}]}]).info()
    pending = make_pod("p").containers({"name": "c", "image": "a", "ports": [{"containerPort": 9000, "hostPort": 9000}]}).info()
    plugin = NodePorts()
    assert plugin.is_schedulable_after_assigned_pod_deleted(pending, host_net, None) == Q
    assert plugin.is_schedulable_after_assigned_pod_deleted(pending, init_only, None) == SKIP


def test_hint_refuses_what_is_not_a_pod() -> None:
    with pytest.raises(TypeError):
        NodePorts().is_schedulable_after_assigned_pod_deleted(with_ports("p", ("TCP", "0.0.0.0", 80)), "not-a-pod", None)
