"""scheduler_perf's SchedulingBasic shape on the simulator: plain nodes, pause pods; and what a
dry-run explanation and a configuration reload cost at that scale."""

from __future__ import annotations

import statistics
import time

from kubesched.api.objects import Node, Pod, convert
from kubesched.backends.sim.clusterinput import ClusterInput, SimPod
from kubesched.backends.sim.limits import check_bench
from kubesched.scheduler.backend import SchedulerPort


def scheduling_basic(nodes: int, pods: int) -> ClusterInput:
    """`nodes` nodes of 4 CPU / 32Gi / 110 pods and `pods` pods of 100m / 500Mi, as scheduler_perf builds them.

    LimitError (backends.sim.limits) before anything is built if either is over the simulator's limits."""
    check_bench(nodes, pods)
    node_objs = [
        convert(
            {
                "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                           "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            },
            Node,
            f"node-{i}",
        )
        for i in range(nodes)
    ]
    pod_objs = [
        SimPod(
            pod=convert(
                {
                    "metadata": {"name": f"pod-{i}", "namespace": "sched-0", "uid": f"bench-pod-{i}"},
                    "spec": {
                        "schedulerName": "default-scheduler",
                        "containers": [
                            {
                                "name": "pause",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                            }
                        ],
                    },
                },
                Pod,
                f"pod-{i}",
            ),
            arrival=0.0,
            duration=None,
        )
        for i in range(pods)
    ]
    return ClusterInput(
        nodes=node_objs,
        pods=pod_objs,
        namespaces=[],
        priority_classes=[],
        workload_selectors=[],
        name="SchedulingBasic",
        description=f"{nodes} nodes, {pods} pause pods",
    )


def _probe(name: str, cpu: str) -> Pod:
    return convert(
        {
            "metadata": {"name": name, "namespace": "sched-0", "uid": f"bench-{name}"},
            "spec": {"schedulerName": "default-scheduler",
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}]},
        },
        Pod,
        name,
    )


def explain_latency(sched: SchedulerPort, repeats: int = 7) -> dict[str, float]:
    """Milliseconds (median of `repeats`) for the dry-run explanation of a pod that fits no node
    (every node's verdict, the nearest misses, the preemption preview) and of one that fits every
    node (all of them scored), on the cluster the bench left. The probe pods are added to the
    scheduler's queue only: no cycle runs after this."""
    out = {}
    for label, cpu in (("explain_ms_unschedulable", "64"), ("explain_ms_feasible", "10m")):
        pod = _probe(label.replace("_", "-"), cpu)
        sched.on_pod_add(pod)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            sched.explain(pod.metadata.namespace, pod.metadata.name)
            times.append(time.perf_counter() - started)
        out[label] = round(statistics.median(times) * 1000, 2)
    return out


def reload_latency(sched: SchedulerPort, pending: int = 10_000, repeats: int = 7) -> dict[str, float]:
    """Milliseconds (median of `repeats`) of a configuration reload on the cluster the bench left,
    with `pending` pods waiting in the queue (added, never scheduled): the whole reload (re-import,
    parse, the scheduler built once to check it, the new generation built and put in force) and the
    part of it during which scheduling stands still (building and putting in force). The reloads
    alternate NodeResourcesFit's scoring strategy, so each one changes the configuration."""
    from kubesched.scheduler.reload.controller import ReloadController

    for i in range(pending):
        sched.on_pod_add(_probe(f"waiting-{i}", "100m"))
    controller = ReloadController(sched)
    totals, paused = [], []
    for i in range(repeats):
        strategy = "MostAllocated" if i % 2 == 0 else "LeastAllocated"
        text = _RELOAD_TEXT.format(strategy=strategy)
        record = controller.apply_text(text, "bench")
        if record.result != "applied":
            raise RuntimeError(f"the bench's reload was {record.result}: {record.message}")
        totals.append(record.seconds)
        paused.append(record.paused)
    return {"reload_ms": round(statistics.median(totals) * 1000, 2), "reload_paused_ms": round(statistics.median(paused) * 1000, 2)}


_RELOAD_TEXT = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: {strategy}
---
apiVersion: kubesched.io/v1alpha1
kind: KubeschedConfiguration
sloGuard:
  enabled: false
"""
