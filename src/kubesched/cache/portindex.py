"""Which rows use each host port, for NodePorts: (protocol, port) -> host IP -> rows.

Few pods use host ports, so an entry keeps the rows it is on as a dict (row -> pods on it using
the port). A port that many nodes use (a DaemonSet's, or scheduler_perf's HostPortConflict, where
every pod wants port 80) also keeps a boolean mask over the rows, so marking its rows costs one
numpy step instead of a Python pass over every row using it, at one byte per row per such port.

The conflict rule is kube's (HostPortInfo.CheckConflict): a wanted port conflicts with a used one
of the same protocol and port when either binds 0.0.0.0 or both bind the same IP.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kubesched.api.podinfo import HostPort

BIND_ALL = "0.0.0.0"
DENSE_ROWS = 64  # rows using one port from which it also keeps a mask


def conflicts(used: HostPort, want: HostPort) -> bool:
    """Whether a pod wanting `want` cannot share a node with one using `used`."""
    if used.protocol != want.protocol or used.port != want.port:
        return False
    return BIND_ALL in (used.host_ip, want.host_ip) or used.host_ip == want.host_ip


class PortRows:
    """The rows using one (protocol, port, host IP), with how many pods on each use it."""

    __slots__ = ("counts", "mask")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.mask: np.ndarray | None = None

    def add(self, row: int, count: int) -> None:
        before = self.counts.get(row, 0)
        self.counts[row] = before + count
        if self.mask is not None:
            if row >= self.mask.size:
                self.mask = np.concatenate([self.mask, np.zeros(max(row + 1, 2 * self.mask.size) - self.mask.size, dtype=bool)])
            self.mask[row] = True
        elif len(self.counts) >= DENSE_ROWS:
            self.mask = np.zeros(max(self.counts) + 1, dtype=bool)
            self.mask[list(self.counts)] = True

    def remove(self, row: int, count: int) -> None:
        left = self.counts.get(row, 0) - count
        if left > 0:
            self.counts[row] = left
            return
        self.counts.pop(row, None)
        if self.mask is None:
            return
        if len(self.counts) < DENSE_ROWS // 2:  # hysteresis: a port hovering at the bound is not rebuilt each time
            self.mask = None
        elif row < self.mask.size:
            self.mask[row] = False

    def mark(self, out: np.ndarray) -> None:
        """Set `out[row]` for every row in it (`out` covers the table's rows)."""
        if self.mask is None:
            out[list(self.counts)] = True
            return
        n = min(out.size, self.mask.size)
        out[:n] |= self.mask[:n]

    def at(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of `rows` (a handful of table rows) is in it."""
        if self.mask is None:
            return np.fromiter((int(r) in self.counts for r in rows), dtype=bool, count=rows.size)
        inside = rows < self.mask.size
        out = np.zeros(rows.size, dtype=bool)
        out[inside] = self.mask[rows[inside]]
        return out

    def __len__(self) -> int:
        return len(self.counts)

    def __repr__(self) -> str:
        return f"PortRows({dict(sorted(self.counts.items()))})"


class PortIndex:
    """(protocol, port) -> host IP -> PortRows, entries dropped when no row uses them."""

    def __init__(self) -> None:
        self._by_port: dict[tuple[str, int], dict[str, PortRows]] = {}

    def add(self, hp: HostPort, row: int, count: int = 1) -> None:
        by_ip = self._by_port.setdefault((hp.protocol, hp.port), {})
        rows = by_ip.get(hp.host_ip)
        if rows is None:
            rows = by_ip[hp.host_ip] = PortRows()
        rows.add(row, count)

    def remove(self, hp: HostPort, row: int, count: int = 1) -> None:
        by_ip = self._by_port.get((hp.protocol, hp.port))
        rows = by_ip.get(hp.host_ip) if by_ip is not None else None
        if by_ip is None or rows is None or row not in rows.counts:
            return
        rows.remove(row, count)
        if not rows:
            del by_ip[hp.host_ip]
            if not by_ip:
                del self._by_port[(hp.protocol, hp.port)]

    def conflicting(self, want: HostPort) -> Iterator[PortRows]:
        """The entries whose rows a pod wanting `want` conflicts with."""
        by_ip = self._by_port.get((want.protocol, want.port))
        if not by_ip:
            return
        if want.host_ip == BIND_ALL:
            yield from by_ip.values()
            return
        for ip in (BIND_ALL, want.host_ip):
            rows = by_ip.get(ip)
            if rows is not None:
                yield rows

    def as_counts(self) -> dict[tuple[str, int], dict[str, dict[int, int]]]:
        """The index as plain dicts (for tests and debugging)."""
        return {key: {ip: dict(rows.counts) for ip, rows in by_ip.items()} for key, by_ip in self._by_port.items()}

    def __bool__(self) -> bool:
        return bool(self._by_port)

    def __repr__(self) -> str:
        return f"PortIndex({ {key: dict(sorted(by_ip.items())) for key, by_ip in sorted(self._by_port.items())} })"
