"""Built-in simulator scenarios: manifest files shipped in kubesched/backends/sim/builtin/.

Each scenario is one ordinary multi-document YAML file (readable, copyable, and loaded by
the same code as a user's manifests); this module only maps names to files.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kubesched.backends.sim.clusterinput import ClusterInput, ManifestError
from kubesched.backends.sim.manifests import load_paths

DEFAULT_SCENARIO = "web-batch"

_SCENARIOS: dict[str, str] = {
    "web-batch": (
        "40 nodes in 3 zones (GPU pool, cordoned nodes): web Deployments with spreading and anti-affinity, a "
        "cache StatefulSet, batch and GPU Jobs arriving over time, a late high-priority service that preempts"
    ),
    "basic": "scheduler_perf SchedulingBasic: 100 nodes (4 CPU, 32Gi, 110 pods), 500 pause pods (100m, 500Mi)",
    "preemption": "5 nodes full of low-priority pods, then high-priority pods that must preempt them",
    "flink-jobs": (
        "flink-burst's Flink jobs as gangs (PodGroups, GenericWorkload): 120 nodes near capacity, 70 jobs of 5-25 pods "
        "from three tenants, so how long a job waits for all its pods matters"
    ),
    "gpu-cluster": (
        "320 nodes with A100, V100, T4 and shared A100 GPUs as DRA ResourceSlices: claims from templates for a whole "
        "GPU, two on one NVLink island, a 10Gi share and A100-else-V100; inference, training, batch and CPU-only work"
    ),
    "flink-burst": (
        "300 nodes, a third busy with load Kubernetes does not see; Flink jobs arrive in bursts of "
        "TaskManagers whose real cpu swings far from their requests (hotspots for requests-only scoring)"
    ),
}


def builtin_scenarios() -> dict[str, str]:
    """Built-in scenario name -> one-line description."""
    return dict(_SCENARIOS)


def scenario_path(name: str) -> Path:
    """The manifest file of a built-in scenario."""
    if name not in _SCENARIOS:
        raise KeyError(name)
    return Path(str(resources.files("kubesched.backends.sim") / "builtin" / f"{name}.yaml"))


def load_scenario(ref: str, *, keep_going: bool = False, seed: int = 0) -> ClusterInput:
    """A built-in scenario by name, else manifests at a path (file or directory); `keep_going` and
    `seed` as in load_paths (refused objects listed in ClusterInput.errors, the rest loaded;
    generated names drawn from the seed)."""
    if ref in _SCENARIOS:
        cluster = load_paths([scenario_path(ref)], keep_going=keep_going, seed=seed)
        cluster.name = ref
        cluster.description = _SCENARIOS[ref]
        return cluster
    return load_refs([ref], keep_going=keep_going, seed=seed)


def load_refs(refs: Sequence[str], *, keep_going: bool = False, seed: int = 0) -> ClusterInput:
    """Paths to manifests and built-in scenario names, in any mix, as one cluster (a path that
    exists wins over a built-in of the same name); the message names every ref that is neither."""
    if len(refs) == 1 and refs[0] in _SCENARIOS and not Path(refs[0]).exists():
        return load_scenario(refs[0], keep_going=keep_going, seed=seed)
    paths: list[Path] = []
    missing: list[str] = []
    for ref in refs:
        if Path(ref).exists():
            paths.append(Path(ref))
        elif ref in _SCENARIOS:
            paths.append(scenario_path(ref))
        else:
            missing.append(ref)
    if missing:
        known = ", ".join(sorted(_SCENARIOS))
        raise ManifestError(f"{', '.join(missing)}: no such file, directory or built-in scenario (built-in: {known})")
    return load_paths(paths, keep_going=keep_going, seed=seed)
