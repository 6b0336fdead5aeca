"""A ConfigMap volume as the kubelet serves it, without a kubelet: the tests play its part.

The kubelet projects a ConfigMap's data into the pod's volume directory with its AtomicWriter
(kubernetes pkg/volume/util/atomic_writer.go, v1.37.2), and does it again at each sync after the
object changed:

    <dir>/..2026_05_01_12_00_00.123456789/config.yaml   the data, in a new timestamped directory
    <dir>/..data -> ..2026_05_01_12_00_00.123456789     swapped by creating `..data_tmp` and renaming
                                                        it over `..data` (rename(2) is atomic)
    <dir>/config.yaml -> ..data/config.yaml             the user-visible link, created once

then removes user-visible links of keys no longer in the data and the previous timestamped
directory. A sync that finds the data unchanged writes nothing. `ConfigMapVolume` does exactly
these steps, in this order, for a flat ConfigMap (keys are file names, as a ConfigMap's are), with
the volume's default mode 0644.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from .rest import JSON, Kube

DATA_DIR = "..data"
NEW_DATA_DIR = "..data_tmp"
DEFAULT_MODE = 0o644


class ConfigMapVolume:
    """The volume directory of one ConfigMap, kept up to date by `project` (the kubelet's sync)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.writes = 0  # projections that changed the volume

    def path(self, key: str) -> Path:
        """The user-visible path of a key: what a container (here kubesched) is told to read."""
        return self.dir / key

    def current(self) -> Path | None:
        """The timestamped directory `..data` leads to now."""
        try:
            return self.dir / os.readlink(self.dir / DATA_DIR)
        except FileNotFoundError:
            return None

    def project(self, data: Mapping[str, str]) -> bool:
        """Projects `data` (key -> text) as AtomicWriter.Write does; False if nothing had to change."""
        for key in data:
            if not key or "/" in key or key.startswith(".."):
                raise ValueError(f"a ConfigMap key that AtomicWriter refuses: {key!r}")
        old = self.current()
        to_remove: set[str] = set()
        if old is not None:
            to_remove = {p.name for p in old.iterdir()} - set(data)
            unchanged = all((old / k).exists() and (old / k).read_bytes() == v.encode() for k, v in data.items())
            if unchanged and not to_remove:
                self._create_visible(data)
                return False
        # (5) a new timestamped directory, (6) the payload in it
        ts = Path(tempfile.mkdtemp(prefix=time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime()), dir=self.dir))
        ts.chmod(0o755)
        for key, text in data.items():
            target = ts / key
            target.write_bytes(text.encode())
            target.chmod(DEFAULT_MODE)
        # (8) `..data_tmp` -> the new directory, (9) renamed over `..data` atomically
        tmp_link = self.dir / NEW_DATA_DIR
        os.symlink(ts.name, tmp_link)
        os.rename(tmp_link, self.dir / DATA_DIR)
        # (10) user-visible links for new keys, (11) removed for keys gone, (12) the old directory goes
        self._create_visible(data)
        for key in to_remove:
            (self.dir / key).unlink(missing_ok=True)
        if old is not None:
            for p in old.iterdir():
                p.unlink()
            old.rmdir()
        self.writes += 1
        return True

    def _create_visible(self, data: Mapping[str, str]) -> None:
        for key in data:
            link = self.dir / key
            if not link.is_symlink():
                os.symlink(os.path.join(DATA_DIR, key), link)

    def sync(self, kube: Kube, namespace: str, name: str) -> bool:
        """What the kubelet does at a sync: read the ConfigMap from the API server and project it."""
        cm = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
        return self.project(cm.get("data") or {})


def apply_configmap(kube: Kube, namespace: str, name: str, data: Mapping[str, str]) -> JSON:
    """Creates the ConfigMap, or replaces its data (as `kubectl apply` of an edited file would)."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    existing = kube.get_or_none(f"{path}/{name}")
    if existing is None:
        return kube.create(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
                                  "data": dict(data)})
    existing["data"] = dict(data)
    return kube.replace(f"{path}/{name}", existing)
