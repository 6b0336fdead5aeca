"""The same scenario through `kubesched simulate`'s engine: the simulated cluster and virtual clock.

Pending pods arrive ten virtual seconds apart, as the real runs create them one at a time and wait
for each; a pod's step is what happened to it before the next one arrived."""

from __future__ import annotations

import asyncio
import json

from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config import parse_config

from .generate import JSON, PRIORITIES, PROFILES
from .runner import Step

GAP = 10.0  # virtual seconds between two pending pods


def _objects(scenario: JSON) -> list[JSON]:
    objects: list[JSON] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"conformance-{name}"},
         "value": value, "preemptionPolicy": "Never" if name == "never" else "PreemptLowerPriority"}
        for name, value in PRIORITIES.items()
    ]
    for n in scenario["nodes"]:
        resources = {"cpu": n["cpu"], "memory": n["memory"], "pods": str(n["pods"]), "ephemeral-storage": "100Gi",
                     **(n.get("extended") or {})}
        objects.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n["name"], "labels": {"kubernetes.io/hostname": n["name"], "kubernetes.io/os": "linux", **n["labels"]}},
            "spec": {"taints": n["taints"], "unschedulable": n["unschedulable"]},
            "status": {"allocatable": resources, "capacity": resources},
        })
    pods = [(p, None) for p in scenario["existing"]] + [(p, (i + 1) * GAP) for i, p in enumerate(scenario["pending"])]
    for pod, arrival in pods:
        spec = json.loads(json.dumps(pod["spec"]))
        if "priorityClassName" in spec:
            spec["priorityClassName"] = "conformance-" + spec["priorityClassName"]
        meta: JSON = {"name": pod["name"], "namespace": "default", "labels": pod["labels"]}
        if arrival is not None:
            meta["annotations"] = {"sim.kubesched.io/arrival": f"{arrival:g}s"}
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return objects


def simulate_side(scenario: JSON) -> list[Step]:
    profile = {"schedulerName": "default-scheduler", **PROFILES[scenario["profile"]]}
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [profile]})
    sim = Simulation(load_objects(_objects(scenario)), config)
    asyncio.run(sim.run())
    records = list(sim.scheduler.recorder.recent)  # the Scheduler behind the port: a test may look
    events = sim.cluster.events
    steps = []
    for i, pod in enumerate(scenario["pending"]):
        start, end = (i + 1) * GAP, (i + 2) * GAP
        key = f"default/{pod['name']}"
        mine = [r for r in records if r.pod == key and start <= r.time < end]
        step = Step(pod["name"])
        failed = next((r for r in mine if r.result in ("unschedulable", "error")), None)
        if failed is not None:
            step.message = next((e.message for e in events if e.pod == key and e.reason == "FailedScheduling"), failed.message)
            step.reason = "SchedulerError" if failed.result == "error" else "Unschedulable"
        step.nominated = next((r.nominated for r in mine if r.nominated), None)
        step.preempted = sorted(v.split("/", 1)[1] for r in mine for v in r.victims)
        # The Scheduled event says where (the pod itself may be gone since, preempted by a later one).
        bound = [e for e in events if e.pod == key and e.reason == "Scheduled" and start <= e.time < end]
        if bound:
            step.node = bound[0].message.rsplit(" to ", 1)[1]
        steps.append(step)
    return steps
