"""Seed objects and junk values for the manifest fuzz tests.

The seeds are small, valid objects of every kind the simulator reads, each using the fields users
get wrong (resources, affinity with every operator, spread constraints, tolerations, ports,
priorities, gates). Mutations replace, delete or add one field at a time, so most inputs are
*nearly* valid: the interesting place for a validator.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1", "disk": "ssd", "rank": "3"}},
    "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20", "example.com/gpu": "2"},
               "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20", "example.com/gpu": "2"}},
}
NODE2 = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n2", "labels": {"topology.kubernetes.io/zone": "z2", "rank": "7"}},
    "spec": {"unschedulable": False},
    "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "apps", "labels": {"app": "web", "tier": "front"}},
    "spec": {
        "priorityClassName": "high",
        "containers": [{
            "name": "web",
            "image": "nginx",
            "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "imagePullPolicy": "IfNotPresent", "env": [{"name": "MODE", "value": "prod"}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "dnsPolicy": "ClusterFirst",
        "hostname": "web-0",
        "initContainers": [{"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1", "z2"]},
                    {"key": "rank", "operator": "Gt", "values": ["1"]},
                    {"key": "broken", "operator": "DoesNotExist"},
                ]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "preference": {"matchExpressions": [{"key": "rank", "operator": "Lt", "values": ["5"]}]}},
                ],
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"},
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": {
                        "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
                        "topologyKey": "topology.kubernetes.io/zone"}},
                ],
            },
        },
        "topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 2,
            "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["tier"],
        }],
    },
}
GATED = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "gated", "annotations": {"sim.kubesched.io/arrival": "30s", "sim.kubesched.io/duration": "5m"}},
    "spec": {"schedulingGates": [{"name": "example.com/wait"}], "priorityClassName": "batch", "preemptionPolicy": "Never",
             "containers": [{"name": "c", "image": "pause",
                             "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}}]},
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "api", "namespace": "apps", "annotations": {"sim.kubesched.io/arrival-interval": "1s"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "api"}},
        "template": {
            "metadata": {"labels": {"app": "api"}, "annotations": {"sim.kubesched.io/usage-cpu": "bursty:100m,peak=500m"}},
            "spec": {"containers": [{"name": "api", "image": "api", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                     "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "kubernetes.io/hostname",
                                                    "whenUnsatisfiable": "ScheduleAnyway",
                                                    "labelSelector": {"matchLabels": {"app": "api"}}}]},
        },
    },
}
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "crunch", "namespace": "apps", "annotations": {"sim.kubesched.io/duration": "2m"}},
    "spec": {"parallelism": 2, "completions": 4,
             "template": {"spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "w", "image": "w", "resources": {"requests": {"cpu": "500m"}}}]}}},
}
STATEFULSET = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "apps"},
    "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
             "template": {"metadata": {"labels": {"app": "db"}},
                          "spec": {"containers": [{"name": "db", "image": "db", "resources": {"requests": {"memory": "1Gi"}}}]}}},
}
REPLICASET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "cache", "namespace": "apps"},
    "spec": {"replicas": 2, "minReadySeconds": 5, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["cache"]}]},
             "template": {"metadata": {"labels": {"app": "cache"}},
                          "spec": {"containers": [{"name": "c", "image": "redis", "ports": [{"containerPort": 6379, "name": "redis"}],
                                                   "resources": {"requests": {"cpu": "50m"}}}]}}},
}
CONTROLLER = {
    "apiVersion": "v1",
    "kind": "ReplicationController",
    "metadata": {"name": "legacy", "namespace": "apps"},
    "spec": {"replicas": 1, "selector": {"app": "legacy"},
             "template": {"metadata": {"labels": {"app": "legacy"}},
                          "spec": {"containers": [{"name": "c", "image": "old", "resources": {"limits": {"memory": "32Mi"}},
                                                   "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}},
                                                   "securityContext": {"runAsUser": 1000, "runAsGroup": 1000}}],
                                   "securityContext": {"fsGroup": 2000}}}},
}
# The fields the scheduler ignores but the API server checks: probes, lifecycle hooks,
# securityContexts (pod and container), the OS.
PROBED = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "probed", "namespace": "apps"},
    "spec": {
        "os": {"name": "linux"},
        "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000],
                            "fsGroupChangePolicy": "OnRootMismatch", "supplementalGroupsPolicy": "Merge",
                            "seccompProfile": {"type": "RuntimeDefault"}, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
        "containers": [{
            "name": "app", "image": "app",
            "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1,
                              "successThreshold": 1, "failureThreshold": 3, "terminationGracePeriodSeconds": 10},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTPS",
                                           "httpHeaders": [{"name": "X-Probe", "value": "1"}]}, "periodSeconds": 5,
                               "successThreshold": 2},
            "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "failureThreshold": 30},
            "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 5"]}}, "postStart": {"tcpSocket": {"port": 8080}}},
            "securityContext": {"runAsUser": 1001, "runAsGroup": 1001, "allowPrivilegeEscalation": False, "procMount": "Default",
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}, "readOnlyRootFilesystem": True,
                                "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/app.json"},
                                "appArmorProfile": {"type": "RuntimeDefault"}},
        }],
        "initContainers": [{"name": "sidecar", "image": "proxy", "restartPolicy": "Always",
                            "livenessProbe": {"grpc": {"port": 9090}}, "securityContext": {"runAsUser": 0}}],
    },
}
# Dynamic resource allocation: claims (one of a ResourceClaim, one from a template) used by the
# containers, whole or by request, and an extended resource a DeviceClass may map.
CLAIMED = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "claimed", "namespace": "apps"},
    "spec": {
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"}, {"name": "nic", "resourceClaimTemplateName": "one-nic"}],
        "containers": [{"name": "train", "image": "train",
                        "resources": {"requests": {"cpu": "1", "example.com/fpga": "1"}, "limits": {"example.com/fpga": "1"},
                                      "claims": [{"name": "gpu"}, {"name": "nic", "request": "port"}]}}],
        "initContainers": [{"name": "warm", "image": "warm", "resources": {"claims": [{"name": "gpu"}]}}],
    },
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps", "labels": {"team": "a"}}}
PRIORITY = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000,
            "preemptionPolicy": "PreemptLowerPriority", "description": "high"}
BATCH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"}, "value": -5,
         "preemptionPolicy": "Never"}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "apps"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
# A Service reachable from outside, with the traffic policies and target ports (by number and name).
NODEPORT = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "edge", "namespace": "apps"},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "externalTrafficPolicy": "Local", "internalTrafficPolicy": "Local",
                     "ports": [{"name": "http", "port": 80, "targetPort": "web", "appProtocol": "http"},
                               {"name": "admin", "port": 9090, "targetPort": 9091}],
                     "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
                     "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"], "trafficDistribution": "PreferClose",
                     "externalIPs": ["192.0.2.10"]}}
BALANCER = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "apps"},
            "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 443}], "externalTrafficPolicy": "Local",
                     "loadBalancerClass": "example.com/lb", "loadBalancerSourceRanges": ["10.0.0.0/8", "2001:db8::/64"],
                     "allocateLoadBalancerNodePorts": False}}
SETTINGS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubesched-simulation"},
            "data": {"scrapeInterval": "15s", "prometheusOutages": "1m-2m"}}

SEEDS: tuple[dict[str, Any], ...] = (NODE, NODE2, POD, GATED, DEPLOYMENT, JOB, STATEFULSET, NAMESPACE, PRIORITY, BATCH, SERVICE, SETTINGS)
# More kinds, for the differential test against the API server (the unit fuzz suite counts SEEDS' pods).
MORE_SEEDS: tuple[dict[str, Any], ...] = (REPLICASET, CONTROLLER, PROBED, NODEPORT, BALANCER, CLAIMED)

# Values users (and copy-paste) put where they do not belong: numbers past every limit, operators
# and effects that do not exist, names the API refuses, odd quantities and durations.
NASTY_STRINGS = (
    "", " ", "1e30", "99999999999999999999999", "1e1000000", "-1", "0", "1.5", "NaN", "nan", "Inf", "+Inf", "-inf",
    "100m", "0.0000001", "1e-30", "1Ki", "1E", "9223372036854775807", "9223372036854775808", "1Ei", "8Ei", "18446744073709551616",
    "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal", "Sometimes", "DoNotSchedule", "ScheduleAnyway",
    "NoSchedule", "PreferNoSchedule", "NoExecute", "Honor", "Ignore", "Never", "Always", "OnFailure", "TCP", "SCTP", "HTTP",
    "UPPER", "a/b/c", "-bad-", "bad_", "über", "a" * 64, "a" * 254, "x." * 130, "kubernetes.io/", "/name", "1h", "1y",
    "999999h", "-5m", "0s", "steady:1e30", "bursty:1,peak=1e308", "diurnal:1,period=0s", "10m-1m", "1e9h-1e10h",
)
NASTY_INTS = (0, -1, 1, 100, 101, 65535, 65536, 70000, 2**31 - 1, 2**31, 2**62, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30)


def junk() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(NASTY_INTS),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(NASTY_STRINGS),
        st.text(max_size=12),
    )
    return st.one_of(
        scalars,
        st.lists(scalars, max_size=3),
        st.dictionaries(st.sampled_from(("key", "operator", "values", "name", "effect", "", "x")), scalars, max_size=3),
    )


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside obj (dict keys and list indexes), the root excluded."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield (*prefix, i)
            yield from paths(value, (*prefix, i))


def _parent(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        obj = obj[step]
    return obj


def _retyped(value: Any) -> Any:
    """The same value as another JSON type, as users write it: 3 as "3", "3" as 3, true as "true"."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return [value]
    return value


# Values that decoders and validators treat specially, put where any value was.
EDGE_VALUES = (0.5, 2.0, 1e21, 2**31, 2**63, -(2**63) - 1, "", " ", "0", "-0", "1.0", [], {})


def _list_ancestor(path: tuple[Any, ...]) -> int | None:
    """The length of the path to the innermost list item on `path` (so path[:n] is that item)."""
    for n in range(len(path), 0, -1):
        if isinstance(path[n - 1], int):
            return n
    return None


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[dict[str, Any], ...] = SEEDS) -> dict[str, Any]:
    """A seed object with one to three fields replaced by junk, retyped, deleted, added or
    duplicated. kind and apiVersion are rarely touched: another kind goes elsewhere and teaches
    the validators nothing."""
    obj = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = list(paths(obj))
        inner = [p for p in where if p[0] not in ("kind", "apiVersion")]
        path = draw(st.sampled_from(inner if inner and draw(st.integers(0, 19)) else where))
        parent = _parent(obj, path)
        action = draw(st.sampled_from(("replace", "replace", "retype", "edge", "delete", "add", "duplicate")))
        if action == "replace":
            parent[path[-1]] = draw(junk())
        elif action == "retype":
            parent[path[-1]] = _retyped(parent[path[-1]])
        elif action == "edge":
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(EDGE_VALUES)))
        elif action == "delete":
            del parent[path[-1]]
        elif action == "duplicate" and (n := _list_ancestor(path)) is not None:
            # A second entry equal to one already there: two containers of the same name, the same
            # toleration twice, a repeated port.
            items = _parent(obj, path[:n])
            items.append(copy.deepcopy(items[path[n - 1]]))
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(("extra", "key", "name", "value", "operator", "x-y")))] = draw(junk())
        else:
            parent.append(draw(junk()))
    return obj


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A small cluster: the seeds, with one to four of them replaced by mutants."""
    objects = [copy.deepcopy(s) for s in SEEDS]
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        objects[draw(st.integers(min_value=0, max_value=len(objects) - 1))] = draw(mutated())
    return objects
