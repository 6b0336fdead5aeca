"""The configuration file as `kubesched run` watches it.

A ConfigMap mounted as a volume is updated by the kubelet with a symlink swap: the file is a link
to `..data/config.yaml`, and `..data` itself a link that is replaced by one to a new timestamped
directory. Watching the path's inode alone would miss that, and inotify would watch a directory
that is about to disappear. So the file is polled: each look resolves every link and compares what
the path now leads to (its real path, inode, size and modification time), and only then reads and
hashes the content. A change that leaves the content as it was is no change.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from kubesched.config.parse import read_config_text


@dataclass(frozen=True, slots=True)
class FileState:
    real: str
    inode: int
    size: int
    mtime_ns: int


def digest_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ConfigFile:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen: FileState | None = None

    def state(self) -> FileState | None:
        """What the path leads to now; None if it leads nowhere (a swap half done, a deleted file)."""
        try:
            real = os.path.realpath(self.path)
            st = os.stat(real)
        except OSError:
            return None
        return FileState(real, st.st_ino, st.st_size, st.st_mtime_ns)

    def touched(self) -> bool:
        """Whether the path leads to something else than at the last `read` (cheap: stat only)."""
        state = self.state()
        return state is not None and state != self._seen

    def read(self) -> tuple[str, str]:
        """The text and its digest. Raises ConfigError if it cannot be read."""
        state = self.state()
        text = read_config_text(self.path)
        self._seen = state
        return text, digest_text(text)
