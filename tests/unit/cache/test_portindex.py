"""The host-port index NodePorts reads: its rows, its dense masks, and kube's conflict rule."""

from __future__ import annotations

import random

import numpy as np

from kubesched.api.podinfo import HostPort
from kubesched.cache.portindex import DENSE_ROWS, PortIndex, conflicts


def marked(index: PortIndex, want: HostPort, size: int) -> set[int]:
    out = np.zeros(size, dtype=bool)
    for rows in index.conflicting(want):
        rows.mark(out)
    return {int(r) for r in np.flatnonzero(out)}


def test_conflict_rule() -> None:
    tcp80 = HostPort("TCP", "0.0.0.0", 80)
    assert conflicts(tcp80, HostPort("TCP", "10.0.0.1", 80))
    assert conflicts(HostPort("TCP", "10.0.0.1", 80), tcp80)
    assert conflicts(HostPort("TCP", "10.0.0.1", 80), HostPort("TCP", "10.0.0.1", 80))
    assert not conflicts(HostPort("TCP", "10.0.0.1", 80), HostPort("TCP", "10.0.0.2", 80))
    assert not conflicts(tcp80, HostPort("UDP", "0.0.0.0", 80))
    assert not conflicts(tcp80, HostPort("TCP", "0.0.0.0", 81))


def test_a_port_on_many_rows_keeps_a_mask_and_drops_it_when_few_are_left() -> None:
    index = PortIndex()
    hp = HostPort("TCP", "0.0.0.0", 80)
    for row in range(DENSE_ROWS - 1):
        index.add(hp, row)
    (rows,) = index.conflicting(hp)
    assert rows.mask is None
    index.add(hp, 500)  # past the mask's first size: it grows
    index.add(hp, 2000)
    assert rows.mask is not None and rows.mask[2000] and rows.mask[500]
    assert marked(index, hp, 3000) == {*range(DENSE_ROWS - 1), 500, 2000}
    index.remove(hp, 500)
    assert marked(index, hp, 3000) == {*range(DENSE_ROWS - 1), 2000}
    for row in range(DENSE_ROWS // 2 + 1):
        index.remove(hp, row)
    assert rows.mask is None
    assert marked(index, hp, 3000) == {*range(DENSE_ROWS // 2 + 1, DENSE_ROWS - 1), 2000}


def test_marking_matches_the_rule_pair_by_pair() -> None:
    """Random adds and removes (pods sharing rows, IPs, protocols, ports crossing the dense bound
    both ways): the rows marked for a wanted port are those holding a conflicting port, by the
    pairwise rule, and the counts are those of a plain tally."""
    rng = random.Random(7)
    size = 400
    ports = [HostPort(proto, ip, port) for proto in ("TCP", "UDP") for ip in ("0.0.0.0", "10.0.0.1", "10.0.0.2") for port in (80, 443)]
    index = PortIndex()
    held: dict[tuple[HostPort, int], int] = {}
    for step in range(6000):
        hp, row = rng.choice(ports[:4] if step % 3 else ports), rng.randrange(size)
        if rng.random() < 0.55 or not held:
            index.add(hp, row)
            held[(hp, row)] = held.get((hp, row), 0) + 1
        else:
            (hp, row), _ = rng.choice(list(held.items()))
            index.remove(hp, row)
            held[(hp, row)] -= 1
            if not held[(hp, row)]:
                del held[(hp, row)]
        if step % 97 == 0:
            for want in ports:
                expect = {r for (used, r) in held if conflicts(used, want)}
                assert marked(index, want, size) == expect, (step, want)
    expect_counts: dict[tuple[str, int], dict[str, dict[int, int]]] = {}
    for (hp, row), n in held.items():
        expect_counts.setdefault((hp.protocol, hp.port), {}).setdefault(hp.host_ip, {})[row] = n
    assert index.as_counts() == expect_counts


def test_removing_what_is_not_there_changes_nothing() -> None:
    index = PortIndex()
    hp = HostPort("TCP", "0.0.0.0", 80)
    index.remove(hp, 3)
    index.add(hp, 1)
    index.remove(hp, 3)
    index.remove(HostPort("TCP", "10.0.0.1", 80), 1)
    assert index.as_counts() == {("TCP", 80): {"0.0.0.0": {1: 1}}}
