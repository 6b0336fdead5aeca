"""The set-up scripts under tools/ against stand-in executables.

The stand-ins print their version line first and then many more lines, as real binaries can
(kube-apiserver, etcd and prometheus all print several). A check that pipes such output into a
reader that stops early (`| grep -q`, `| head -n 1`) kills the writer with SIGPIPE, and
`set -o pipefail` turns that into a failure: exactly what broke `make test` on a new machine,
where build.sh rejected binaries it had just built correctly.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "tools" / "k8s" / "build.sh"
ENSURE_PROMETHEUS = REPO / "tools" / "prometheus" / "ensure.sh"
# Far more than a pipe buffer (64 KiB): the writer is still writing when an early reader exits.
NOISE_LINES = 20000


def _pinned(go_mod: Path, module: str) -> str:
    for line in go_mod.read_text().splitlines():
        parts = line.split()
        if "=>" not in parts and module in parts[:-1]:
            return parts[parts.index(module) + 1]
    raise AssertionError(f"{go_mod} does not require {module}")


KUBE_VERSION = _pinned(REPO / "tools" / "k8s" / "kube" / "go.mod", "k8s.io/kubernetes")
ETCD_VERSION = _pinned(REPO / "tools" / "k8s" / "etcd" / "go.mod", "go.etcd.io/etcd/server/v3")


def _stand_in(path: Path, first_line: str, *, exit_code: int = 0) -> None:
    """An executable whose `--version` prints `first_line` and then NOISE_LINES more lines."""
    path.write_text(
        "#!/bin/sh\n"
        f"echo '{first_line}'\n"
        f"i=0; while [ $i -lt {NOISE_LINES} ]; do echo \"detail line $i of the version report\"; i=$((i+1)); done\n"
        f"exit {exit_code}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _env_without_go(tmp_path: Path, **extra: str) -> dict[str, str]:
    """PATH with the basic tools but no `go`: build.sh must not need to build anything."""
    tools = tmp_path / "path"
    tools.mkdir()
    basics = ("awk", "grep", "sed", "dirname", "mkdir", "mktemp", "rm", "mv", "chmod", "date", "flock", "cat", "id", "sh", "bash", "head")
    for name in basics:
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    env = {"PATH": str(tools), "HOME": str(tmp_path / "home"), **extra}
    return env


def _fill_cache(cache: Path, *, kube: str = KUBE_VERSION, etcd: str = ETCD_VERSION) -> Path:
    dest = cache / f"k8s-{KUBE_VERSION}"
    dest.mkdir(parents=True)
    _stand_in(dest / "kube-apiserver", f"Kubernetes {kube}")
    _stand_in(dest / "kube-scheduler", f"Kubernetes {kube}")
    _stand_in(dest / "kube-controller-manager", f"Kubernetes {kube}")
    _stand_in(dest / "etcd", f"etcd Version: {etcd.removeprefix('v')}")
    return dest


def test_build_sh_accepts_cached_binaries_that_print_several_lines(tmp_path: Path) -> None:
    dest = _fill_cache(tmp_path / "cache")
    env = _env_without_go(tmp_path, KUBESCHED_K8S_CACHE=str(tmp_path / "cache"))
    for _ in range(3):  # SIGPIPE is a race: the old check failed on the first try almost always
        done = subprocess.run(["bash", str(BUILD)], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(dest)


@pytest.mark.parametrize(
    ("kube", "etcd"),
    [("v1.0.0", ETCD_VERSION), (KUBE_VERSION, "v3.0.0")],
    ids=["wrong-kube-version", "wrong-etcd-version"],
)
def test_build_sh_rebuilds_binaries_of_another_version(tmp_path: Path, kube: str, etcd: str) -> None:
    _fill_cache(tmp_path / "cache", kube=kube, etcd=etcd)
    env = _env_without_go(tmp_path, KUBESCHED_K8S_CACHE=str(tmp_path / "cache"))
    done = subprocess.run(["bash", str(BUILD)], env=env, capture_output=True, text=True, timeout=60)
    # Not accepted as they are, so it wants to build them, which needs Go: the message says so.
    assert done.returncode == 1
    assert "the Go toolchain ('go') is not on PATH" in done.stderr


def test_build_sh_print_dir_follows_the_cache_variable(tmp_path: Path) -> None:
    env = _env_without_go(tmp_path, KUBESCHED_K8S_CACHE=str(tmp_path / "elsewhere"))
    done = subprocess.run(["bash", str(BUILD), "--print-dir"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == str(tmp_path / "elsewhere" / f"k8s-{KUBE_VERSION}")


def test_ensure_prometheus_reports_a_binary_that_prints_several_lines(tmp_path: Path) -> None:
    prom = tmp_path / "prometheus"
    _stand_in(prom, "prometheus, version 2.42.0 (branch: debian/sid)")
    env = _env_without_go(tmp_path, PROMETHEUS_BIN=str(prom))
    for _ in range(3):
        done = subprocess.run(["bash", str(ENSURE_PROMETHEUS)], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"prometheus-bin: {prom} (prometheus, version 2.42.0 (branch: debian/sid))"


def test_ensure_prometheus_refuses_a_path_that_is_not_executable(tmp_path: Path) -> None:
    env = _env_without_go(tmp_path, PROMETHEUS_BIN=str(tmp_path / "missing"))
    done = subprocess.run(["bash", str(ENSURE_PROMETHEUS)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "is not an executable file" in done.stderr


def test_scripts_hold_no_early_exit_reader_behind_a_pipe() -> None:
    """The class of bug, by reading: under pipefail, no pipeline may end in a reader that can exit
    before its writer is done (grep -q / grep -m / head). Scripts capture the output first."""
    offenders = []
    for script in [*sorted((REPO / "tools").rglob("*.sh")), REPO / ".ci" / "run"]:
        text = script.read_text()
        if "pipefail" not in text:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if "|" not in code.replace("||", ""):
                continue
            for reader in ("grep -q", "grep -m", "grep -l", "head", "sed -n 1p", "sed q"):
                if any(seg.strip().startswith(reader) for seg in code.replace("||", "\0").split("|")[1:]):
                    offenders.append(f"{script.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
