"""The same scenario through `kubesched simulate`'s engine: the simulated cluster and virtual clock.

Pending pods arrive ten virtual seconds apart, as the real runs create them one at a time and wait
for each; a pod's step is what happened to it before the next one arrived. The feasible nodes and
final scores come from the `kubesched.decisions` logger, caught in-process with the virtual time;
the PodDisruptionBudgets' status from what the simulated disruption controller publishes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from unittest import mock

import msgspec

from builders import make_node
from kubesched.api.dra import RESOURCE_CLAIM
from kubesched.api.podinfo import PodInfo
from kubesched.api.policy import PodDisruptionBudget
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import parse_config
from kubesched.observe import decisions

from .devices import ADMIN_ACCESS_LABEL
from .generate import JSON, PROFILES
from .runner import (
    Budgets,
    Step,
    budget_manifest,
    budget_status,
    claim_key,
    claim_view,
    dra_cluster_manifests,
    dra_namespace_manifests,
    pod_claim_keys,
    pod_manifest,
    priority_classes,
    set_placement,
)

GAP = 10.0  # virtual seconds between two pending pods


def _objects(scenario: JSON) -> list[JSON]:
    objects = priority_classes()
    for n in scenario["nodes"]:
        node = (make_node(n["name"]).label({"kubernetes.io/os": "linux"}).label(n["labels"]).taints(n["taints"])
                .unschedulable(n["unschedulable"]).capacity(cpu=n["cpu"], memory=n["memory"], pods=str(n["pods"]))
                .capacity(n.get("extended") or {}))
        if n.get("declared"):
            node.declared(*n["declared"])
        objects.append(node.manifest())
    objects += [budget_manifest(b, "default") for b in scenario.get("pdbs", ())]
    if scenario.get("dra"):
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {ADMIN_ACCESS_LABEL: "true"}}})
        objects += dra_cluster_manifests(scenario, "") + dra_namespace_manifests(scenario, "default")
    objects += [pod_manifest(p, "default", "default-scheduler", "") for p in scenario["existing"]]
    for i, p in enumerate(scenario["pending"]):
        pod = pod_manifest(p, "default", "default-scheduler", "")
        pod["metadata"]["annotations"] = {"sim.kubesched.io/arrival": f"{(i + 1) * GAP:g}s"}
        objects.append(pod)
    return objects


def simulate_side(scenario: JSON) -> list[Step]:
    profile = {"schedulerName": "default-scheduler", **PROFILES[scenario["profile"]]}
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [profile]})
    sim = Simulation(load_objects(_objects(scenario)), config)
    scored: list[tuple[float, str, dict[str, int]]] = []  # (virtual time, pod, final scores)

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            for pod, scores in decisions.parse_final_scores(record.getMessage()):
                scored.append((sim.cluster.clock.now(), pod, scores))

    published: list[tuple[float, str, dict[str, int]]] = []  # (virtual time, budget, status)
    publish = SimCluster.publish_pdb

    def record(cluster: SimCluster, pdb: PodDisruptionBudget) -> None:
        s = pdb.status
        published.append((cluster.clock.now(), pdb.metadata.name, budget_status({
            "expectedPods": s.expected_pods, "desiredHealthy": s.desired_healthy,
            "currentHealthy": s.current_healthy, "disruptionsAllowed": s.disruptions_allowed})))
        publish(cluster, pdb)

    def budgets(before: float) -> Budgets:
        return {name: status for t, name, status in published if t < before}  # the last of each

    # The claims as the cluster has them just before each arrival (a pod's step ends as the next
    # pod arrives), then at the end.
    claims_seen: list[tuple[float, dict[str, JSON]]] = []
    at = SimCluster.at

    def claims_now(cluster: SimCluster) -> dict[str, JSON]:
        stored = cluster.devices.get(RESOURCE_CLAIM, {}).values()
        return {claim_key(c): c for c in (msgspec.to_builtins(obj) for obj in stored)}

    def at_seeing_claims(cluster: SimCluster, when: float, action: Callable[[], None]) -> None:
        def fire() -> None:
            claims_seen.append((cluster.clock.now(), claims_now(cluster)))
            action()

        at(cluster, when, fire)

    def claims_when(end: float) -> dict[str, JSON]:
        return next((seen for t, seen in claims_seen if t >= end), claims_now(sim.cluster))

    # Nominations the binding cycle writes (kube's NominatedNodeNameForExpectation): the pod's
    # status names the node before PreBind or a wait at Permit, as the kube side's watch sees.
    binding_nominations: list[tuple[float, str, str]] = []  # (virtual time, pod key, node)
    nominate = SimCluster.set_nominated_node

    def nominate_seen(cluster: SimCluster, pi: PodInfo, node: str | None) -> None:
        if node:
            binding_nominations.append((cluster.clock.now(), pi.key, node))
        nominate(cluster, pi, node)

    catch, level, propagate = Catch(), decisions.log.level, decisions.log.propagate
    decisions.log.addHandler(catch)
    decisions.log.setLevel(logging.DEBUG)
    decisions.log.propagate = False  # caught here only
    try:
        with (mock.patch.object(SimCluster, "publish_pdb", record),
              mock.patch.object(SimCluster, "set_nominated_node", nominate_seen),
              mock.patch.object(SimCluster, "at", at_seeing_claims) if scenario.get("dra") else contextlib.nullcontext()):
            asyncio.run(sim.run())
    finally:
        decisions.log.removeHandler(catch)
        decisions.log.setLevel(level)
        decisions.log.propagate = propagate
    records = list(sim.scheduler.recorder.recent)  # the Scheduler behind the port: a test may look
    events = sim.cluster.events
    steps = []
    for i, pod in enumerate(scenario["pending"]):
        start, end = (i + 1) * GAP, (i + 2) * GAP
        key = f"default/{pod['name']}"
        gone = {e.pod.split("/", 1)[1] for e in events if e.reason == "Preempted" and e.time < start}
        landed = {e.pod.split("/", 1)[1]: e.message.rsplit(" to ", 1)[1] for e in events if e.reason == "Scheduled" and e.time < start}
        cluster = {p["name"]: p["spec"]["nodeName"] for p in scenario["existing"]}
        cluster.update({p["name"]: landed.get(p["name"]) for p in scenario["pending"][:i]})
        mine = [r for r in records if r.pod == key and start <= r.time < end]
        step = Step(pod["name"], cluster={name: node for name, node in cluster.items() if name not in gone},
                    budgets=budgets(start))
        failed = next((r for r in mine if r.result in ("unschedulable", "error")), None)
        if pod["spec"].get("schedulingGates"):  # never attempted: the condition the pod was given
            shown = next(p for p in sim.cluster.pods.values() if p.key == key)
            gated = next(c for c in shown.status.conditions if c.type == "PodScheduled")
            step.reason, step.message = gated.reason, gated.message
        elif failed is not None:
            step.message = next((e.message for e in events if e.pod == key and e.reason == "FailedScheduling"), failed.message)
            step.reason = "SchedulerError" if failed.result == "error" else "Unschedulable"
        nominations = sorted([(r.time, r.nominated) for r in mine if r.nominated]
                             + [(t, node) for t, pod_key, node in binding_nominations if pod_key == key and start <= t < end])
        step.nominated = nominations[0][1] if nominations else None
        step.preempted = sorted(v.split("/", 1)[1] for r in mine for v in r.victims)
        # The Scheduled event says where (the pod itself may be gone since, preempted by a later one).
        bound = [e for e in events if e.pod == key and e.reason == "Scheduled" and start <= e.time < end]
        if bound:
            step.node = bound[0].message.rsplit(" to ", 1)[1]
        set_placement(step, next((s for t, p, s in reversed(scored) if p == key and start <= t < end), None))
        if scenario.get("dra"):
            claims = claims_when(end)
            step.claims = {k: claim_view(claims[k], "") if k in claims else {"missing": True} for k in pod_claim_keys(pod)}
        steps.append(step)
    if steps and scenario.get("pdbs"):
        steps[-1].budgets_at_end = budgets(float("inf"))
    if steps and scenario.get("dra"):
        steps[-1].claims_at_end = {k: claim_view(c, "") for k, c in sorted(claims_now(sim.cluster).items())}
    return steps
