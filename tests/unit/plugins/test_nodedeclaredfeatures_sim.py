"""NodeDeclaredFeatures in the whole scheduler on the simulator: a pod that needs a feature lands only
on nodes declaring it, stays pending with kube's message when none does, and comes back through the
plugin's hint when a node starts declaring it (and only then)."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import make_node, make_pod
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import default_config
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.core import Scheduler
from unit.simkit import run

RESTART_ALL = "RestartAllContainersOnContainerExits"
HOST_NETWORK = "UserNamespacesHostNetworkSupport"


def restarting_all(name: str) -> dict[str, Any]:
    """A pod one of whose containers restarts every container on a given exit: it needs RESTART_ALL."""
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    return (make_pod(name).req(cpu="100m")
            .containers({"name": "c", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Never",
                         "resources": {"requests": {"cpu": "100m"}}, "restartPolicyRules": [rule]})
            .manifest())


def test_a_pod_needing_a_feature_lands_only_on_nodes_declaring_it() -> None:
    nodes = [make_node(f"plain-{i}").manifest() for i in range(3)]
    nodes.append(make_node("able").declared("Other", RESTART_ALL).manifest())
    plain = make_pod("plain").req(cpu="100m").node_selector({"kubernetes.io/hostname": "plain-1"}).manifest()
    result, _ = run([*nodes, restarting_all("needs-1"), restarting_all("needs-2"), plain])
    assert result.placements == {"default/needs-1": "able", "default/needs-2": "able", "default/plain": "plain-1"}


def test_pending_everywhere_with_kubes_message() -> None:
    result, _ = run([make_node("b").manifest(), make_node("c").declared("Other").manifest(),
                     make_node("cordoned").declared(RESTART_ALL).unschedulable().manifest(), restarting_all("p")])
    assert result.placements == {"default/p": None}
    assert result.unschedulable["default/p"] == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's required features. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_a_pod_the_api_server_would_refuse_never_reaches_the_plugin() -> None:
    """hostNetwork in a user namespace needs UserNamespacesHostNetworkSupport, but kube-apiserver
    v1.37.2 refuses such a pod (the gate is alpha, off); bind mount options are dropped on create."""
    refused = make_pod("userns").spec(hostNetwork=True, hostUsers=False).manifest()
    mounts = make_pod("mounts").containers({"name": "c", "image": "x", "volumeMounts": [
        {"name": "v", "mountPath": "/v", "bindMountOptions": ["nosuid"]}]}).spec(volumes=[{"name": "v", "emptyDir": {}}]).manifest()
    loaded = load_objects([make_node("n").manifest(), refused, mounts], keep_going=True)
    assert [sp.pod.metadata.name for sp in loaded.pods] == ["mounts"]
    assert "spec.hostNetwork: Forbidden: when `hostUsers` is false" in str(loaded.errors)
    assert loaded.pods[0].pod.spec.containers[0].volume_mounts[0].bind_mount_options == []


async def test_a_node_declaring_the_feature_brings_the_pod_back_through_the_hint() -> None:
    clock = VirtualClock()
    sim = SimCluster(clock)
    sched = Scheduler(default_config(), sim, clock, seed=0)
    sim.scheduler = sched
    loaded = load_objects([make_node("n1").manifest(), make_node("n2").manifest(), restarting_all("p")])
    for node in loaded.nodes:
        sim.nodes[node.metadata.name] = node
        sched.on_node_add(node)
    for sp in loaded.pods:
        sim.create_pod(sp.pod)
    assert sched.schedule_one()
    await sched.drain_bindings()
    (waiting,) = sched.queue.pending()
    assert waiting.where == "unschedulable" and waiting.unschedulable_plugins == {"NodeDeclaredFeatures"}

    # Other changes of a node (a label, a taint) are no event the plugin registered for.
    sched.on_node_update(make_node("n1").label({"x": "y"}).taint("t", "v", "PreferNoSchedule").obj())
    # Declaring something else: the hint is asked and says Queue (the declared features changed),
    # the pod is retried and rejected again.
    clock.advance_to(clock.now() + 20)
    clock.run_due()
    assert waiting.where == "unschedulable"
    sched.on_node_update(make_node("n2").declared("Other").obj())
    assert waiting.where in ("active", "backoff")
    clock.advance_to(clock.now() + 20)
    clock.run_due()
    assert sched.schedule_one()
    await sched.drain_bindings()
    assert sched.queue.pending()[0].where == "unschedulable"

    sched.on_node_update(make_node("n2").declared(RESTART_ALL).obj())
    clock.advance_to(clock.now() + 20)
    clock.run_due()
    assert sched.schedule_one()
    await sched.drain_bindings()
    await asyncio.sleep(0)
    assert sched.queue.pending() == []
    assert next(p for p in sim.pods.values() if p.metadata.name == "p").spec.node_name == "n2"
