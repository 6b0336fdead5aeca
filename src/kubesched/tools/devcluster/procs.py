"""Child processes of a throw-away control plane (the bench's, the integration tests'): own process
group, output to a log file, always killed.

Every process is started in its own session (so a stop signals the whole group), is asked on Linux
to receive SIGKILL when the starting interpreter dies (PR_SET_PDEATHSIG, when started from the main
thread: covers a SIGKILLed pytest or bench),
and is registered for an atexit sweep (covers a normal interpreter exit without a stop). A process
that dies while its starter waits on it raises ProcessDied with the end of its log.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

LOG_TAIL_LINES = 50


class ProcessDied(RuntimeError):
    """A harness process exited when it should be running."""


class StartupTimeout(RuntimeError):
    """Something did not become ready in time."""


_live: set[ManagedProcess] = set()
_live_lock = threading.Lock()
_ports_handed_out: set[int] = set()


def _kill_all_at_exit() -> None:
    with _live_lock:
        procs = list(_live)
    for p in procs:
        p.stop(timeout=5.0)


atexit.register(_kill_all_at_exit)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, never the same twice in this process."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _ports_handed_out:
            _ports_handed_out.add(port)
            return port
    raise RuntimeError("no free port on 127.0.0.1")


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))
            data = f.read().decode(errors="replace")
    except OSError as e:
        return f"(no log: {e})"
    return "\n".join(data.splitlines()[-lines:])


class ManagedProcess:
    """One long-running binary with its log file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, *, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.running():
            raise RuntimeError(f"{self.name} is already running")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"\n===== {time.strftime('%H:%M:%S')} starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                # PDEATHSIG fires when the *thread* that forked exits: only tie the child to the main thread.
                preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None,
            )
        with _live_lock:
            _live.add(self)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return tail(self.log_path, lines)

    def died_error(self, doing: str) -> ProcessDied:
        code = self.proc.returncode if self.proc else None
        return ProcessDied(
            f"{self.name} exited with code {code} while {doing}; last {LOG_TAIL_LINES} lines of {self.log_path}:\n{self.log_tail()}"
        )

    def check_running(self, doing: str) -> None:
        if not self.running():
            raise self.died_error(doing)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the process group, SIGKILL after `timeout` seconds; idempotent."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=10.0)
        # Whatever the leader left behind in its group goes too.
        self._signal_group(proc, signal.SIGKILL)
        with _live_lock:
            _live.discard(self)

    def kill(self) -> None:
        """SIGKILL at once (a crash, not a shutdown)."""
        proc = self.proc
        if proc is None:
            return
        self._signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=10.0)
        with _live_lock:
            _live.discard(self)

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
        # start_new_session makes the child a group leader: its pgid is its pid.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    watch: Sequence[ManagedProcess] = (),
    interval: float = 0.05,
    max_interval: float = 0.5,
) -> T:
    """Call `check` until it returns something other than None/False; fail fast if a watched process dies.

    Exceptions from `check` count as "not yet"; the last one is shown on timeout.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    delay = interval
    while True:
        for p in watch:
            p.check_running(f"waiting for {what}")
        try:
            result = check()
        except Exception as e:
            last_error = e
        else:
            if result is not None and result is not False:
                return result
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error is not None else ""
            logs = "".join(f"\n--- last {LOG_TAIL_LINES} lines of {p.log_path}:\n{p.log_tail()}" for p in watch)
            raise StartupTimeout(f"timed out after {timeout:.0f} s waiting for {what}{detail}{logs}")
        time.sleep(delay)
        delay = min(delay * 1.5, max_interval)
