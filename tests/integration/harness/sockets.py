"""Which addresses a process listens on (Linux /proc): for the tests that check nothing listens
beyond 127.0.0.1."""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path


def _listening_inodes() -> dict[int, str]:
    """inode -> "address:port" of every listening TCP socket on this machine (Linux /proc)."""
    found: dict[int, str] = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # TCP_LISTEN
                continue
            addr_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(addr_hex)
            # /proc prints the address as host-order 32-bit words.
            packed = b"".join(struct.pack("<I", struct.unpack(">I", raw[i : i + 4])[0]) for i in range(0, len(raw), 4))
            found[int(fields[9])] = f"{socket.inet_ntop(family, packed)}:{int(port_hex, 16)}"
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def listening_addresses(pids: list[int]) -> list[str]:
    """Sorted "address:port" of the TCP sockets these processes listen on."""
    listening = _listening_inodes()
    return sorted(listening[i] for pid in pids for i in _socket_inodes(pid) if i in listening)
