"""Properties that must hold for any cluster: checked on random ones with hypothesis.

The checks re-derive the rules independently of the plugins: resources summed from the
final placements, taints and node selectors read straight from the manifests.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod
from kubesched.api.quantity import resource_value
from unit.simkit import run

ZONES = ["a", "b", "c"]
TAINTS = [None, {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "spot", "value": "", "effect": "NoExecute"}]


@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(1, 8))
    nodes = []
    for i in range(n_nodes):
        taint = draw(st.sampled_from(TAINTS))
        nodes.append(
            make_node(f"n{i}")
            .capacity(cpu=str(draw(st.sampled_from([1, 2, 4]))), memory=f"{draw(st.sampled_from([1, 2, 8]))}Gi")
            .without("ephemeral-storage")
            .label(zone=draw(st.sampled_from(ZONES)), disk=draw(st.sampled_from(["ssd", "hdd"])))
            .taints([taint] if taint else [])
            .unschedulable(draw(st.booleans()) and i > 0)
            .manifest()
        )
    pods = []
    for j in range(draw(st.integers(1, 25))):
        spec = {}
        if draw(st.booleans()):
            spec["nodeSelector"] = {"disk": draw(st.sampled_from(["ssd", "hdd"]))}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        if draw(st.integers(0, 4)) == 0:
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "solo"}}}
                    ]
                }
            }
        labels = {"app": "solo"} if "affinity" in spec else {"app": "web"}
        priority = draw(st.sampled_from([None, 1, 10]))
        builder = make_pod(f"p{j}").req(cpu=f"{draw(st.sampled_from([100, 500, 900, 1500]))}m",
                                        memory=f"{draw(st.sampled_from([128, 512, 1024]))}Mi")
        builder.label(labels).arrival(f"{j}s").spec(**spec)
        if priority is not None:
            builder.priority(priority)
        pods.append(builder.manifest())
    return nodes + pods


def _tolerated(taint, tolerations):
    for t in tolerations:
        if t.get("key", "") in ("", taint["key"]) and (
            t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", "")
        ) and t.get("effect", "") in ("", taint["effect"]):
            return True
    return False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 3))
def test_placements_respect_capacity_and_filters(objects, seed):
    result, _sim = run(objects, seed=seed)
    nodes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Node"}
    pods = {f"default/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    solo_zones: list[str] = []
    for key, node_name in result.placements.items():
        if node_name is None:
            continue
        p, n = pods[key], nodes[node_name]
        requests = p["spec"]["containers"][0]["resources"]["requests"]
        for res, raw in requests.items():
            used[node_name][res] += resource_value(res, raw)
        used[node_name]["pods"] += 1
        assert not n["spec"]["unschedulable"], f"{key} placed on cordoned {node_name}"
        for taint in n["spec"]["taints"]:
            assert _tolerated(taint, p["spec"].get("tolerations", [])), f"{key} on {node_name} despite {taint}"
        for k, v in p["spec"].get("nodeSelector", {}).items():
            assert n["metadata"]["labels"].get(k) == v, f"{key} on {node_name} breaks nodeSelector"
        if "affinity" in p["spec"]:
            solo_zones.append(n["metadata"]["labels"]["zone"])
    for node_name, totals in used.items():
        alloc = nodes[node_name]["status"]["allocatable"]
        for res, value in totals.items():
            assert value <= resource_value(res, alloc[res]), f"{node_name} overcommitted on {res}"
    # Required anti-affinity on zone: at most one "solo" pod per zone.
    assert len(solo_zones) == len(set(solo_zones))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 100))
def test_same_seed_same_placements(objects, seed):
    first, _ = run(objects, seed=seed)
    second, _ = run(objects, seed=seed)
    assert first.placements == second.placements
    assert first.preempted == second.preempted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_cache_matches_the_cluster_after_a_run(objects):
    """What the cache counts on each node equals the pods the cluster says are bound there."""
    _result, sim = run(objects)
    table = sim.scheduler.cache.table
    bound = defaultdict(int)
    for p in sim.cluster.pods.values():
        if p.spec.node_name and p.status.phase != "Succeeded":
            bound[p.spec.node_name] += 1
    pods_col = table.resource_index["pods"]
    for name, row in table.index.items():
        assert table.requested[row, pods_col] == bound.get(name, 0)
    assert not any(placed.assumed for placed in sim.scheduler.cache.placed.values())
