"""scheduler_perf's SchedulingBasic shape on the simulator: plain nodes, pause pods."""

from __future__ import annotations

from kubesched.api.objects import Node, Pod, convert
from kubesched.backends.sim.limits import check_bench
from kubesched.backends.sim.manifests import ClusterInput, SimPod


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
