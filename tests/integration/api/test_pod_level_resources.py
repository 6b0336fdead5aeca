"""Pod-level resources (spec.resources) through the simulator's loader and the real kube-apiserver
v1.37.2, pod by pod: the same verdict, the same refusal (to the character, in any order: the API
server lists the issues of several resources in Go's map order), and for an accepted pod the same
spec.resources after defaulting (PodLevelResourcesFixDefaulting: from the containers' aggregate
requests and limits and from the pod-level limits).

The pods are drawn from a seeded generator (pod_level_spec) of containers, sidecars and init
containers with requests and limits of cpu, memory and hugepages in several quantity formats, and a
pod level that sets some of them, now and then a name it may not set, a windows OS or claims.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from integration.harness.rest import Kube
from kubesched.api.quantity import canonical, resource_value
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_objects

NAMESPACE = "default"
PODS = 400
CPU = ("100m", "250m", "0.5", "1", "2", 1, "1500m", "2e0", "0.1e1")
MEMORY = ("64Mi", "128Mi", "512Mi", "1Gi", "1G", "1500M", "2Gi")
HUGEPAGES = ("2Mi", "4Mi", "3Mi")
# A roomy pod level (at least any aggregate the containers reach): pods the API server accepts.
ROOMY = {"cpu": ("8", "10"), "memory": ("16Gi", "20G")}
JSON = dict[str, Any]


def _amounts(rng: random.Random, chance: float, roomy: bool = False) -> JSON:
    out: JSON = {}
    if rng.random() < chance:
        out["cpu"] = rng.choice(ROOMY["cpu"] if roomy else CPU)
    if rng.random() < chance:
        out["memory"] = rng.choice(ROOMY["memory"] if roomy else MEMORY)
    return out


def _container(rng: random.Random, name: str) -> JSON:
    resources: JSON = {}
    requests, limits = _amounts(rng, 0.5), _amounts(rng, 0.3)
    if rng.random() < 0.08:
        page = rng.choice(HUGEPAGES)
        requests["hugepages-2Mi"] = limits["hugepages-2Mi"] = page
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "registry.k8s.io/pause:3.10", "resources": resources}


def pod_level_spec(rng: random.Random) -> JSON:
    """One pod spec: containers, maybe init containers and sidecars, and a pod level."""
    spec: JSON = {"containers": [_container(rng, f"c{i}") for i in range(rng.randint(1, 2))]}
    inits = []
    for i in range(rng.choice((0, 0, 1, 2))):
        init = _container(rng, f"i{i}")
        if rng.random() < 0.4:
            init["restartPolicy"] = "Always"
        inits.append(init)
    if inits:
        spec["initContainers"] = inits
    pod_level: JSON = {}
    roomy = rng.random() < 0.5
    requests, limits = _amounts(rng, 0.5, roomy), _amounts(rng, 0.4, roomy)
    if roomy:
        for name, value in limits.items():
            requests[name] = min(requests.get(name, value), value, key=_size)
    if rng.random() < 0.1:
        page = rng.choice(HUGEPAGES)
        (limits if rng.random() < 0.7 else requests)["hugepages-2Mi"] = page
    if rng.random() < 0.04:
        (requests if rng.random() < 0.5 else limits)["ephemeral-storage"] = "1Gi"
    if requests:
        pod_level["requests"] = requests
    if limits:
        pod_level["limits"] = limits
    if rng.random() < 0.03:
        pod_level["claims"] = [{"name": "gpu"}]
    if pod_level or rng.random() < 0.5:
        spec["resources"] = pod_level
    if rng.random() < 0.03:
        spec["os"] = {"name": "windows"}
    return spec


def _size(raw: str) -> int:
    """A quantity's size, to compare two of one resource."""
    return resource_value("memory", raw)


def _pod(i: int, spec: JSON) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"plr-{i}", "namespace": NAMESPACE}, "spec": spec}


def issues(message: str) -> list[str]:
    """The issues of a refusal (after `is invalid: `), sorted: `[a, b]` split where a path begins."""
    body = message.split(" is invalid: ", 1)[1] if " is invalid: " in message else message
    if body.startswith("[") and body.endswith("]"):
        return sorted(re.split(r", (?=spec\.)", body[1:-1]))
    return [body]


def canonical_resources(resources: JSON | None) -> JSON | None:
    """Both sides' spec.resources in one form: canonical quantities, empty parts and maps left out."""
    if resources is None:
        return None
    out = {part: {name: canonical(v) for name, v in values.items()} for part, values in resources.items() if values}
    return out or None


def ours(pod: JSON) -> tuple[bool, str, JSON | None]:
    try:
        cluster = load_objects([pod], keep_going=True)
    except ManifestError as exc:
        return False, str(exc), None
    if cluster.errors:
        return False, "; ".join(cluster.errors), None
    resources = cluster.pods[0].pod.spec.resources
    if resources is None:
        return True, "", None
    return True, "", canonical_resources({"requests": dict(resources.requests), "limits": dict(resources.limits)})


def theirs(kube: Kube, pod: JSON) -> tuple[bool, str, JSON | None]:
    status, payload = kube.request_raw("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", json.dumps(pod).encode(),
                                       params={"dryRun": "All", "fieldValidation": "Strict"})
    body = json.loads(payload)
    if status >= 300:
        return False, body.get("message", ""), None
    resources = body["spec"].get("resources")
    return True, "", canonical_resources(resources) if resources else None


def compare(kube: Kube, i: int, spec: JSON) -> str | None:
    """None when both agree on the pod; else what differs."""
    pod = _pod(i, spec)
    our_ok, our_message, our_resources = ours(pod)
    their_ok, their_message, their_resources = theirs(kube, pod)
    if our_ok != their_ok:
        return f"verdict: ours {our_ok} {our_message!r}; API server {their_ok} {their_message!r}"
    if not our_ok and issues(our_message) != issues(their_message):
        return f"refusal: ours {our_message!r}; API server {their_message!r}"
    if our_ok and our_resources != their_resources:
        return f"defaulted spec.resources: ours {our_resources}; API server {their_resources}"
    return None


# Hand-picked edges besides the drawn pods.
EDGES: list[JSON] = [
    {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}],
     "resources": {"requests": {"cpu": "1"}}},
    {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}], "resources": {"limits": {"cpu": "1"}}},
    {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}],
     "resources": {"limits": {"memory": "2Gi"}}},
    {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}],
     "resources": {"limits": {"hugepages-2Mi": "2Mi", "memory": "2Gi"}}},
    {"containers": [{"name": "c", "image": "i"}], "resources": {"requests": {"hugepages-abc": "1", "cpu": "1"},
                                                               "limits": {"hugepages-abc": "1"}}},
    {"containers": [{"name": "c", "image": "i"}], "resources": {"requests": {"example.com/gpu": "1"}}},
    {"containers": [{"name": "c", "image": "i"}], "resources": {"requests": {"bogus": "1"}}},
    {"containers": [{"name": "c", "image": "i"}], "resources": {}},
    {"containers": [{"name": "c", "image": "i"}], "resources": {"requests": {"cpu": "-1"}}},
    {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"hugepages-2Mi": "3Mi", "cpu": "1"}}}]},
    {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
     "initContainers": [{"name": "s", "image": "i", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                        {"name": "i", "image": "i", "resources": {"requests": {"cpu": "3"}}}],
     "resources": {"requests": {"cpu": "3500m"}}},
]


@pytest.mark.parametrize("spec", EDGES, ids=lambda spec: json.dumps(spec)[:90])
def test_edges_agree_with_the_api_server(kube: Kube, spec: JSON) -> None:
    difference = compare(kube, 0, spec)
    assert difference is None, difference


def test_drawn_pods_agree_with_the_api_server(kube: Kube) -> None:
    rng = random.Random("pod-level-resources")
    differences = [d for i in range(PODS) if (d := compare(kube, i, pod_level_spec(rng))) is not None]
    assert not differences, f"{len(differences)} of {PODS} pods differ:\n" + "\n".join(differences[:10])
