"""Seeded small scenarios for the differential conformance suite.

A scenario is plain JSON (nodes, pods already bound, pods to schedule one at a time), so a
disagreement can be written to a file and replayed (CONFORMANCE_REPLAY=F, see test_conformance).
It covers resources and extended resources, nodeSelector, node affinity with every operator,
taints and tolerations, cordoned nodes, host ports, pod (anti-)affinity hard and soft, topology
spread (minDomains, node inclusion policies), priorities with preemption and preemptionPolicy
Never, PodDisruptionBudgets over some of the pods (minAvailable or maxUnavailable, an integer or a
percentage; the pods have no controller, so only an integer minAvailable expects any pod, as kube's
disruption controller counts them), scheduling gates (a gated pod stays gated), declared features
(nodes declaring some, pods whose restart rules need one), pod-level resources (spec.resources in
place of the containers' requests, or beside them; defaulted by the API server), and profiles with other scoring
strategies and weights; and in about a third of the scenarios, devices (Dynamic Resource Allocation:
devices.py).
"""

from __future__ import annotations

import random
from typing import Any

from .devices import add_devices

JSON = dict[str, Any]

ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache")
EXTENDED = "example.com/gpu"
PRIORITIES = {"low": 10, "mid": 100, "high": 1000, "never": 500}  # "never": preemptionPolicy Never


def _node(rng: random.Random, i: int) -> JSON:
    labels = {"topology.kubernetes.io/zone": rng.choice(ZONES), "disk": rng.choice(("ssd", "hdd"))}
    if rng.random() < 0.5:
        labels["cores"] = str(rng.choice((2, 4, 8, 16)))
    taints = []
    if rng.random() < 0.25:
        taints.append({"key": "dedicated", "value": rng.choice(APPS), "effect": rng.choice(("NoSchedule", "PreferNoSchedule"))})
    node: JSON = {
        "name": f"node-{i}",
        "cpu": rng.choice(("1", "2", "4")),
        "memory": rng.choice(("2Gi", "4Gi", "8Gi")),
        "pods": rng.choice((3, 5, 110)),
        "labels": labels,
        "taints": taints,
        "unschedulable": rng.random() < 0.1,
    }
    if rng.random() < 0.3:
        node["extended"] = {EXTENDED: str(rng.choice((1, 2)))}
    return node


def _selector_term(rng: random.Random) -> JSON:
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("Gt", "Lt"):
        return {"key": "cores", "operator": op, "values": [str(rng.choice((2, 4, 8)))]}
    key = rng.choice(("topology.kubernetes.io/zone", "disk"))
    if op in ("Exists", "DoesNotExist"):
        return {"key": key if rng.random() < 0.7 else "cores", "operator": op}
    values = rng.sample(ZONES, rng.randint(1, 2)) if key.endswith("zone") else [rng.choice(("ssd", "hdd"))]
    return {"key": key, "operator": op, "values": values}


CPU = ("100m", "250m", "500m", "1", "2")  # ascending, as _pod_level_resources relies on
MEMORY = ("128Mi", "256Mi", "512Mi", "1Gi", "3Gi")


def _pod_spec(rng: random.Random, app: str, with_priority: bool) -> JSON:
    requests = {"cpu": rng.choice(CPU), "memory": rng.choice(MEMORY[:1] + MEMORY[2:])}
    container: JSON = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}
    if rng.random() < 0.15:
        container["resources"] = {"requests": {**requests, EXTENDED: "1"}, "limits": {EXTENDED: "1"}}
    if rng.random() < 0.15:
        container["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    spec: JSON = {"containers": [container], "terminationGracePeriodSeconds": 0}
    affinity: JSON = {}
    r = rng.random()
    if r < 0.15:
        spec["nodeSelector"] = {"disk": rng.choice(("ssd", "hdd"))}
    elif r < 0.4:
        if rng.random() < 0.6:
            terms = [{"matchExpressions": [_selector_term(rng) for _ in range(rng.randint(1, 2))]}]
            affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        else:
            affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [_selector_term(rng)]}}
            ]}
    r = rng.random()
    if r < 0.25:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        term = {
            "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
            "topologyKey": rng.choice(("kubernetes.io/hostname", "topology.kubernetes.io/zone")),
        }
        if rng.random() < 0.5:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            affinity[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": rng.randint(1, 100), "podAffinityTerm": term}]}
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.25:
        constraint: JSON = {
            "maxSkew": rng.choice((1, 2)),
            "topologyKey": rng.choice(("topology.kubernetes.io/zone", "kubernetes.io/hostname")),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if constraint["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
            constraint["minDomains"] = rng.choice((2, 3, 4))
        if rng.random() < 0.3:
            constraint["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
            constraint["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        spec["topologySpreadConstraints"] = [constraint]
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": rng.choice(("Exists", "Equal")), "value": app}]
        if spec["tolerations"][0]["operator"] == "Exists":
            del spec["tolerations"][0]["value"]
    if with_priority:
        spec["priorityClassName"] = rng.choice(tuple(PRIORITIES))
    return spec


# Profiles besides the default one, by name: both schedulers run all of them at once, so a scenario
# only chooses one (its pods then name it in schedulerName).
PROFILES: dict[str, JSON] = {
    "default": {},
    "most-allocated": {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}]},
    "ratio": {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}}]},
    "weights": {"plugins": {"score": {"enabled": [
        {"name": "NodeAffinity", "weight": 5}, {"name": "TaintToleration", "weight": 1}, {"name": "PodTopologySpread", "weight": 4},
    ]}}},
}


def _profile(rng: random.Random) -> str:
    return "default" if rng.random() < 0.7 else rng.choice(sorted(set(PROFILES) - {"default"}))


def _budgets(seed: int, with_priority: bool) -> list[JSON]:
    """PodDisruptionBudgets, from an RNG of their own (the seeds' other draws stay as they were):
    more often where pods have priorities, for preemption to weigh them."""
    rng = random.Random(f"pdbs-{seed}")
    if rng.random() >= (0.6 if with_priority else 0.15):
        return []
    budgets = []
    # One budget an app: kube's controller recounts only one of the budgets selecting a pod that
    # changed, chosen arbitrarily (a MultiplePodDisruptionBudgets event), so overlapping ones go stale.
    for i, app in enumerate(rng.sample(APPS, rng.randint(1, 2))):
        field = rng.choice(("minAvailable", "maxUnavailable"))
        budgets.append({"name": f"pdb-{i}", "app": app, field: rng.choice((0, 1, 2, "0%", "50%", "100%"))})
    return budgets


def scenario(seed: int) -> JSON:
    rng = random.Random(seed)
    nodes = [_node(rng, i) for i in range(rng.randint(2, 5))]
    with_priority = rng.random() < 0.4
    existing = []
    for i in range(rng.randint(0, 3)):
        app = rng.choice(APPS)
        spec = _pod_spec(rng, app, with_priority)
        for key in ("affinity", "topologySpreadConstraints", "nodeSelector"):
            spec.pop(key, None)
        spec["nodeName"] = rng.choice(nodes)["name"]
        spec["containers"][0].pop("ports", None)
        spec["containers"][0]["resources"] = {"requests": {"cpu": rng.choice(("100m", "250m", "500m")), "memory": "256Mi"}}
        existing.append({"name": f"running-{i}", "labels": {"app": app}, "spec": spec})
    pending = []
    for i in range(rng.randint(2, 6)):
        app = rng.choice(APPS)
        pending.append({"name": f"pod-{i}", "labels": {"app": app}, "spec": _pod_spec(rng, app, with_priority)})
    profile = _profile(rng)
    # Scheduling gates from an RNG of their own, so the seeds' other draws stay as they were.
    gates = random.Random(f"gates-{seed}")
    if gates.random() < 0.15:
        gates.choice(pending)["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    _declared_features(random.Random(f"features-{seed}"), nodes, pending)
    _pod_level_resources(random.Random(f"pod-level-{seed}"), existing + pending)
    sc = {"seed": seed, "nodes": nodes, "existing": existing, "pending": pending, "profile": profile,
          "pdbs": _budgets(seed, with_priority)}
    add_devices(seed, sc)  # DRA, from an RNG of its own too
    return sc


# --- declared features (NodeDeclaredFeatures), from an RNG of their own -----------------------------

RESTART_ALL = "RestartAllContainersOnContainerExits"  # the one feature a pod can need on a v1.37.2 API server
# Other names nodes declare: features kube knows but no pod's placement needs, and names it does not know.
OTHER_FEATURES = ("ExampleVendor/fastPath", "InPlacePodLevelResourcesVerticalScaling", "ZetaFeature")


def _declared_features(rng: random.Random, nodes: list[JSON], pending: list[JSON]) -> None:
    """In about a quarter of the scenarios, nodes declare features (about half of them declaring the
    one a pod can need) and some pending pods need it: a container, or an init container of its
    own, whose restart rule restarts the whole pod."""
    if rng.random() >= 0.25:
        return
    for node in nodes:
        if rng.random() < 0.6:
            names = {name for name in OTHER_FEATURES if rng.random() < 0.3}
            if rng.random() < 0.7:
                names.add(RESTART_ALL)
            node["declared"] = sorted(names)
    for pod in pending:
        if rng.random() < 0.4:
            rule = {"action": "RestartAllContainers", "exitCodes": {"operator": rng.choice(("In", "NotIn")),
                                                                     "values": sorted(rng.sample(range(1, 100), rng.randint(1, 3)))}}
            if rng.random() < 0.7:
                pod["spec"]["containers"][0].update(restartPolicy=rng.choice(("Never", "OnFailure")), restartPolicyRules=[rule])
            else:
                pod["spec"]["initContainers"] = [{"name": "init", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Never",
                                                  "restartPolicyRules": [rule]}]


# --- pod-level resources (PodLevelResources), from an RNG of their own ------------------------------


def _at_least(rng: random.Random, values: tuple[str, ...], floor: str | None) -> str:
    """A value of `values` (ascending) no smaller than `floor`: the pod level covers its containers."""
    return rng.choice(values[values.index(floor):] if floor in values else values)


def _pod_level_resources(rng: random.Random, pods: list[JSON]) -> None:
    """In about a third of the scenarios, some pods set spec.resources: requests for cpu and/or
    memory no smaller than their container's (which then counts for nothing in the scheduler's
    sums); or the container requests nothing and a second one neither, so the pod level alone sizes
    the pod and the scorers count the default for what it leaves out; or limits only, from which
    (and from the containers) the API server defaults the requests."""
    if rng.random() >= 0.35:
        return
    for pod in pods:
        if rng.random() >= 0.5:
            continue
        spec = pod["spec"]
        container = spec["containers"][0]
        own: dict[str, str] = container["resources"].setdefault("requests", {})
        mode = rng.choice(("beside", "alone", "limits"))
        pod_level: JSON = {}
        if mode == "alone":
            for name in ("cpu", "memory"):
                own.pop(name, None)
            if rng.random() < 0.5:
                spec["containers"].append({"name": "helper", "image": "registry.k8s.io/pause:3.10"})
        names = [name for name in ("cpu", "memory") if rng.random() < 0.7] or ["cpu"]
        amounts = {name: _at_least(rng, CPU if name == "cpu" else MEMORY, own.get(name)) for name in names}
        pod_level["limits" if mode == "limits" else "requests"] = amounts
        spec["resources"] = pod_level
