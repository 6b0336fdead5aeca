"""api.validation: each rule, accepted and refused, with kube's exact field path and message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.validation import (
    aggregate,
    invalid_object,
    shown,
    validate_manifest,
    validate_node,
    validate_pod,
    validate_priority_class,
)
from kubesched.api.validation.field import FieldIssue

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
             "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
KEY_NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
             "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
INT64 = "9223372036854775807"
NAA = "spec.affinity.nodeAffinity"
PAA = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
TSC = "spec.topologySpreadConstraints[0]"
C0 = "spec.containers[0]"
FEATURE_MSG = ("must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or "
               "MyFeature/mySubFeature), and contain only alphanumeric characters and slashes")


def base_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
    }


def pod_with(path: str, value: Any) -> dict[str, Any]:
    """The base pod with `value` set at a dotted path (list indexes as numbers)."""
    pod = base_pod()
    node: Any = pod
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        node = node[key] if isinstance(key, int) else node.setdefault(key, {})
    node[keys[-1]] = value
    return pod


def messages(issues: list[FieldIssue]) -> list[str]:
    return [str(i) for i in issues]


# (case id, path to set in the base pod, value, expected messages; [] = accepted)
POD_CASES: list[tuple[str, str, Any, list[str]]] = [
    ("valid", "metadata.name", "web-1", []),
    # names and metadata
    ("bad name", "metadata.name", "Web_1", [f'metadata.name: Invalid value: "Web_1": {SUBDOMAIN_MSG}']),
    ("long name", "metadata.name", "a" * 254, [f'metadata.name: Invalid value: "{"a" * 100}"...(154 more): must be no more than '
                                              "253 characters"]),
    ("bad namespace", "metadata.namespace", "Team", [f'metadata.namespace: Invalid value: "Team": {LABEL_MSG}']),
    ("namespace with dot", "metadata.namespace", "a.b", ['metadata.namespace: Invalid value: "a.b": must not contain dots']),
    ("generateName ok", "metadata", {"generateName": "job-", "namespace": "default"}, []),
    ("bad generateName", "metadata", {"generateName": "Job-", "namespace": "default"},
     [f'metadata.generateName: Invalid value: "Job-": {SUBDOMAIN_MSG}']),
    ("no name", "metadata", {"namespace": "default"}, ["metadata.name: Required value: name or generateName is required"]),
    ("bad label key", "metadata.labels", {"a b": "x"}, [f'metadata.labels: Invalid value: "a b": {KEY_NAME_MSG}']),
    ("bad label prefix", "metadata.labels", {"Ex.com/a": "x"},
     [f'metadata.labels: Invalid value: "Ex.com/a": prefix part {SUBDOMAIN_MSG}']),
    ("empty label prefix", "metadata.labels", {"/a": "x"}, ['metadata.labels: Invalid value: "/a": prefix part must be non-empty']),
    ("bad label value", "metadata.labels", {"a": "-x"}, [f'metadata.labels: Invalid value: "-x": {VALUE_MSG}']),
    ("empty label value", "metadata.labels", {"a": ""}, []),
    ("long label value", "metadata.labels", {"a": "x" * 64},
     [f'metadata.labels: Invalid value: "{"x" * 64}": must be no more than 63 characters']),
    ("bad annotation key", "metadata.annotations", {"a/b/c": "x"},
     ["metadata.annotations: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
      "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
      "and '/' (e.g. 'example.com/MyName')"]),
    ("annotations too big", "metadata.annotations", {"a": "x" * 262144},
     ["metadata.annotations: Too long: may not be more than 262144 bytes"]),
    ("uppercase annotation ok", "metadata.annotations", {"Example.com/Key": "x"}, []),
    ("owner reference ok", "metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                                         "uid": "u1", "controller": True}], []),
    ("owner reference fields", "metadata.ownerReferences", [{"apiVersion": "apps/", "kind": "ReplicaSet", "name": "rs"}],
     ['metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
      'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty']),
    ("two controllers", "metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1", "controller": True},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "b", "uid": "2", "controller": True}],
     ['metadata.ownerReferences: Invalid value: [{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"1",'
      '"controller":true},{"apiVersion":"batch/v1","kind":"Job","name":"b","uid":"2","controller":true}]: Only one reference can have '
      'Controller set to true. Found "true" in references for ReplicaSet/a and Job/b']),
    # containers
    ("no containers", "spec.containers", [], ["spec.containers: Required value"]),
    ("container name", "spec.containers.0.name", "Web", [f'{C0}.name: Invalid value: "Web": {LABEL_MSG}']),
    ("container name missing", "spec.containers.0.name", "", [f"{C0}.name: Required value"]),
    ("image missing", "spec.containers.0.image", "", [f"{C0}.image: Required value"]),
    ("image whitespace", "spec.containers.0.image", " nginx", [f'{C0}.image: Invalid value: " nginx": must not have leading or '
                                                               "trailing whitespace"]),
    ("duplicate container", "spec.initContainers", [{"name": "c", "image": "x"}],
     ['spec.initContainers[0].name: Duplicate value: "c"']),
    ("sidecar ok", "spec.initContainers", [{"name": "s", "image": "x", "restartPolicy": "Always"}], []),
    # v1.37.2's ContainerRestartRules and RestartAllContainersOnContainerExits (beta, on): any
    # container may have its own restartPolicy and restart rules (as its kube-apiserver answers).
    ("init restartPolicy", "spec.initContainers", [{"name": "s", "image": "x", "restartPolicy": "Never"}], []),
    ("init restartPolicy unknown", "spec.initContainers", [{"name": "s", "image": "x", "restartPolicy": "Sometimes"}],
     ['spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"']),
    ("container restartPolicy", "spec.containers.0.restartPolicy", "Always", []),
    ("container restartPolicy unknown", "spec.containers.0.restartPolicy", "Sometimes",
     [f'{C0}.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"']),
    ("restart rules", "spec.containers.0", {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}},
        {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}]}, []),
    ("restart rules need a policy", "spec.initContainers", [{"name": "i", "image": "x", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}]}],
     ["spec.initContainers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"]),
    ("restart rule action and operator", "spec.containers.0", {"name": "c", "image": "x", "restartPolicy": "Never",
                                                              "restartPolicyRules": [{"action": "Boom", "exitCodes": {"operator": "Nah"}}]},
     [f'{C0}.restartPolicyRules[0].action: Unsupported value: "Boom": supported values: "Restart", "RestartAllContainers"',
      f'{C0}.restartPolicyRules[0].exitCodes.operator: Unsupported value: "Nah": supported values: "In", "NotIn"']),
    ("restart rule exit codes", "spec.containers.0", {"name": "c", "image": "x", "restartPolicy": "Never",
                                                      "restartPolicyRules": [{"action": "Restart"}]},
     [f"{C0}.restartPolicyRules[0].exitCodes: Required value: must be specified"]),
    ("restart rules at most 20", "spec.containers.0", {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}] * 21},
     [f"{C0}.restartPolicyRules: Too many: 21: must have at most 20 items"]),
    ("exit codes at most 255", "spec.containers.0", {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": list(range(256))}}]},
     [f"{C0}.restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items"]),
    # ports
    ("hostPort range", "spec.containers.0.ports", [{"containerPort": 80, "hostPort": 70000}],
     [f"{C0}.ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive"]),
    ("containerPort required", "spec.containers.0.ports", [{"hostPort": 80}], [f"{C0}.ports[0].containerPort: Required value"]),
    ("containerPort range", "spec.containers.0.ports", [{"containerPort": -1}],
     [f"{C0}.ports[0].containerPort: Invalid value: -1: must be between 1 and 65535, inclusive"]),
    ("protocol", "spec.containers.0.ports", [{"containerPort": 80, "protocol": "tcp"}],
     [f'{C0}.ports[0].protocol: Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"']),
    ("port name", "spec.containers.0.ports", [{"containerPort": 80, "name": "HTTP"}],
     [f'{C0}.ports[0].name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      f'{C0}.ports[0].name: Invalid value: "HTTP": must contain at least one letter (a-z)']),
    ("duplicate host port", "spec.containers.0.ports", [{"containerPort": 80, "hostPort": 8080},
                                                        {"containerPort": 81, "hostPort": 8080}],
     [f'{C0}.ports[1].hostPort: Duplicate value: "TCP//8080"']),
    ("same host port other protocol", "spec.containers.0.ports", [{"containerPort": 80, "hostPort": 53},
                                                                  {"containerPort": 80, "hostPort": 53, "protocol": "UDP"}], []),
    ("hostNetwork defaults hostPort", "spec", {"hostNetwork": True, "containers": [
        {"name": "a", "image": "x", "ports": [{"containerPort": 80}]}, {"name": "b", "image": "x", "ports": [{"containerPort": 80}]}]},
     ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"']),
    ("hostNetwork port mismatch", "spec", {"hostNetwork": True, "containers": [
        {"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 81}]}]},
     [f"{C0}.ports[0].containerPort: Invalid value: 80: must match `hostPort` when `hostNetwork` is true"]),
    ("port out of int32", "spec.containers.0.ports", [{"containerPort": 2**40}],
     [f"{C0}.ports[0].containerPort: expected `int` <= 2147483647"]),
    # resources
    ("bad quantity", "spec.containers.0.resources", {"requests": {"cpu": "lots"}},
     [f'{C0}.resources.requests[cpu]: Invalid value: "lots": {QUANTITY_MSG}']),
    ("bad suffix", "spec.containers.0.resources", {"requests": {"memory": "1Ki2"}},
     [f"{C0}.resources.requests[memory]: Invalid value: \"1Ki2\": unable to parse quantity's suffix"]),
    ("cpu 1e30", "spec.containers.0.resources", {"requests": {"cpu": "1e30"}},
     [f'{C0}.resources.requests[cpu]: Invalid value: "1e30": must be less than or equal to {INT64}m']),
    ("cpu 1e1000000", "spec.containers.0.resources", {"requests": {"cpu": "1e1000000"}},
     [f'{C0}.resources.requests[cpu]: Invalid value: "1e1000000": must be less than or equal to {INT64}m']),
    ("memory huge int", "spec.containers.0.resources", {"requests": {"memory": 99999999999999999999999}},
     [f"{C0}.resources.requests[memory]: Invalid value: 99999999999999999999999: must be less than or equal to {INT64}"]),
    ("memory at the limit", "spec.containers.0.resources", {"requests": {"memory": INT64}}, []),
    ("binary capped as kube does", "spec.containers.0.resources", {"requests": {"memory": "16Ei"}}, []),
    ("negative", "spec.containers.0.resources", {"requests": {"memory": "-1Mi"}},
     [f'{C0}.resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0']),
    ("request above limit", "spec.containers.0.resources", {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1"}},
     [f'{C0}.resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1']),
    ("limit defaults request", "spec.containers.0.resources", {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}, []),
    ("extended needs limit", "spec.containers.0.resources", {"requests": {"nvidia.com/gpu": "1"}},
     [f"{C0}.resources.limits: Required value: Limit must be set for non overcommitable resources"]),
    ("extended request equals limit", "spec.containers.0.resources",
     {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
     [f'{C0}.resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2']),
    ("extended integer", "spec.containers.0.resources", {"limits": {"example.com/dongle": "500m"}},
     [f'{C0}.resources.limits[example.com/dongle]: Invalid value: "500m": must be an integer',
      f'{C0}.resources.requests[example.com/dongle]: Invalid value: "500m": must be an integer']),
    ("unknown resource", "spec.containers.0.resources", {"requests": {"gpu": "1"}},
     [f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully qualified',
      f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers']),
    ("bad extended name", "spec.containers.0.resources", {"limits": {"example.com/a_b/c": "1"}},
     [f'{C0}.resources.limits[example.com/a_b/c]: Invalid value: "example.com/a_b/c": a valid label key must consist of '
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
      "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
      "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      f'{C0}.resources.limits[example.com/a_b/c]: Invalid value: "example.com/a_b/c": doesn\'t follow extended resource '
      "name standard",
      f'{C0}.resources.requests[example.com/a_b/c]: Invalid value: "example.com/a_b/c": a valid label key must consist of '
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
      "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
      "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      f'{C0}.resources.requests[example.com/a_b/c]: Invalid value: "example.com/a_b/c": doesn\'t follow extended resource '
      "name standard"]),
    ("pods not a container resource", "spec.containers.0.resources", {"requests": {"pods": "1"}},
     [f'{C0}.resources.requests[pods]: Invalid value: "pods": must be a standard resource for containers']),
    ("hugepages need cpu or memory", "spec.containers.0.resources", {"limits": {"hugepages-2Mi": "4Mi"}},
     [f"{C0}.resources: Forbidden: HugePages require cpu or memory"]),
    ("overhead", "spec.overhead", {"cpu": "-1"}, ['spec.overhead[cpu]: Invalid value: "-1": must be greater than or equal to 0']),
    ("pod-level resources", "spec.resources", {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}, "limits": {"cpu": "1"}},
     ['spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
      'spec.resources.requests[nvidia.com/gpu]: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "hugepages-", '
      '"memory"',
      "spec.resources.limits: Required value: Limit must be set for non overcommitable resources"]),
    ("pod-level 1e30", "spec.resources", {"limits": {"memory": "1e30"}},
     [f'spec.resources.limits[memory]: Invalid value: "1e30": must be less than or equal to {INT64}',
      f'spec.resources.requests[memory]: Invalid value: "1e30": must be less than or equal to {INT64}']),
    ("pod total beyond int64", "spec.containers", [
        {"name": "a", "image": "x", "resources": {"requests": {"memory": INT64}}},
        {"name": "b", "image": "x", "resources": {"requests": {"memory": "1"}}}],
     [f'spec.containers: Invalid value: "memory": the pod\'s total request must be less than or equal to {INT64}']),
    # pod-level fields
    ("restartPolicy", "spec.restartPolicy", "Sometimes",
     ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"']),
    ("nodeSelector", "spec.nodeSelector", {"zone": "a b"}, [f'spec.nodeSelector: Invalid value: "a b": {VALUE_MSG}']),
    ("nodeName", "spec.nodeName", "Node_1", [f'spec.nodeName: Invalid value: "Node_1": {SUBDOMAIN_MSG}']),
    ("schedulerName", "spec.schedulerName", "My Scheduler",
     [f'spec.schedulerName: Invalid value: "My Scheduler": {SUBDOMAIN_MSG}']),
    ("priorityClassName", "spec.priorityClassName", "High", [f'spec.priorityClassName: Invalid value: "High": {SUBDOMAIN_MSG}']),
    ("preemptionPolicy", "spec.preemptionPolicy", "Always",
     ['spec.preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"']),
    ("priority int32", "spec.priority", 2**31, ["spec.priority: expected `int` <= 2147483647"]),
    ("activeDeadlineSeconds", "spec.activeDeadlineSeconds", 0,
     ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"]),
    ("gates with nodeName", "spec", {"containers": [{"name": "c", "image": "x"}], "nodeName": "n1",
                                     "schedulingGates": [{"name": "example.com/wait"}]},
     ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]),
    ("duplicate gate", "spec.schedulingGates", [{"name": "a"}, {"name": "a"}], ['spec.schedulingGates[1]: Duplicate value: "a"']),
    # node affinity
    ("preferred weight 0", f"{NAA}.preferredDuringSchedulingIgnoredDuringExecution".replace(".", ".", 1),
     [{"weight": 0, "preference": {}}],
     [f"{NAA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"]),
    ("preferred weight 2^62", f"{NAA}.preferredDuringSchedulingIgnoredDuringExecution", [{"weight": 2**62, "preference": {}}],
     [f"{NAA}.preferredDuringSchedulingIgnoredDuringExecution[0].weight: expected `int` <= 2147483647"]),
    ("no terms", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []},
     [f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one "
      "node selector term"]),
    ("node operator", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]},
     [f'{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: '
      'Invalid value: "Near": not a valid selector operator']),
    ("In needs values", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]},
     [f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
      "Required value: must be specified when `operator` is 'In' or 'NotIn'"]),
    ("Exists takes none", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}]},
     [f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
      "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"]),
    ("Gt one value", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["1", "2"]}]}]},
     [f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
      "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"]),
    # The API server does not parse Gt/Lt values; such a term matches no node when scheduling.
    ("Gt non-integer accepted", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["many"]}]}]}, []),
    # Required terms' values must be label values on create (the kube-apiserver refuses "x y" and "-1");
    # preferred terms' are not checked.
    ("required values are label values", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["-1"]}]}]},
     [f'{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: '
      f'Invalid value: "-1": {VALUE_MSG}']),
    ("preferred values are not", f"{NAA}.preferredDuringSchedulingIgnoredDuringExecution",
     [{"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x y"]}]}}], []),
    ("matchFields key", f"{NAA}.requiredDuringSchedulingIgnoredDuringExecution",
     {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}]},
     [f'{NAA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: '
      '"metadata.uid": not a valid field selector key']),
    # pod (anti-)affinity
    ("topologyKey empty", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     [{"topologyKey": "", "labelSelector": {"matchLabels": {"app": "web"}}}],
     [f"{PAA}.topologyKey: Required value: can not be empty",
      f'{PAA}.topologyKey: Invalid value: "": name part must be non-empty',
      f'{PAA}.topologyKey: Invalid value: "": {KEY_NAME_MSG}']),
    ("preferred pod weight", "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution",
     [{"weight": 101, "podAffinityTerm": {"topologyKey": "zone"}}],
     ["spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be "
      "in the range 1-100"]),
    ("selector operator", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     [{"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["a"]}]}}],
     [f'{PAA}.labelSelector.matchExpressions[0].operator: Invalid value: "Equals": not a valid selector operator']),
    ("selector value", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     [{"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]}}],
     [f'{PAA}.labelSelector.matchExpressions[0].values[0]: Invalid value: "a b": {VALUE_MSG}']),
    ("namespaces", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     [{"topologyKey": "zone", "namespaces": ["Team"]}], [f'{PAA}.namespace: Invalid value: "Team": {LABEL_MSG}']),
    ("matchLabelKeys need selector", "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
     [{"topologyKey": "zone", "matchLabelKeys": ["app"]}],
     [f"{PAA}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"]),
    # tolerations
    ("toleration operator", "spec.tolerations", [{"key": "a", "operator": "Maybe"}],
     ['spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"']),
    # Lt and Gt are refused (their feature gate is off in v1.37.2) with v1.37.2's list of operators.
    ("toleration Gt", "spec.tolerations", [{"key": "a", "operator": "Gt", "value": "3", "effect": "NoSchedule"}],
     ['spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"']),
    ("toleration Lt", "spec.tolerations", [{"key": "a", "operator": "Lt", "value": "x"}],
     ['spec.tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", "Exists", "Lt", "Gt"']),
    ("toleration effect", "spec.tolerations", [{"key": "a", "operator": "Exists", "effect": "NoRun"}],
     ['spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", '
      '"NoExecute"']),
    ("Exists with value", "spec.tolerations", [{"key": "a", "operator": "Exists", "value": "v"}],
     ['spec.tolerations[0].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'']),
    ("empty key needs Exists", "spec.tolerations", [{"operator": "Equal", "value": "v"}],
     ['spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
      '"match all values and all keys"']),
    ("match everything ok", "spec.tolerations", [{"operator": "Exists"}], []),
    ("tolerationSeconds needs NoExecute", "spec.tolerations", [{"key": "a", "operator": "Exists", "effect": "NoSchedule",
                                                                "tolerationSeconds": 5}],
     ["spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"]),
    ("toleration value", "spec.tolerations", [{"key": "a", "value": "a b"}],
     [f'spec.tolerations[0].operator: Invalid value: "a b": {VALUE_MSG}']),
    ("toleration key", "spec.tolerations", [{"key": "a b", "operator": "Exists"}],
     [f'spec.tolerations[0].key: Invalid value: "a b": {KEY_NAME_MSG}']),
    # topology spread
    ("whenUnsatisfiable", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}],
     [f'{TSC}.whenUnsatisfiable: Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"']),
    ("maxSkew 0", "spec.topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
     [f"{TSC}.maxSkew: Invalid value: 0: must be greater than zero"]),
    ("topologyKey required", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "",
                                                                 "whenUnsatisfiable": "DoNotSchedule"}],
     [f"{TSC}.topologyKey: Required value: can not be empty"]),
    ("minDomains", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone", "minDomains": 0,
                                                       "whenUnsatisfiable": "ScheduleAnyway"}],
     [f"{TSC}.minDomains: Invalid value: 0: must be greater than zero",
      f"{TSC}.minDomains: Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"]),
    ("policies", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                                     "nodeAffinityPolicy": "Always", "nodeTaintsPolicy": "Honor"}],
     [f'{TSC}.nodeAffinityPolicy: Unsupported value: "Always": supported values: "Honor", "Ignore"']),
    ("repeated constraint", "spec.topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
     [f'{TSC}.{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{zone, DoNotSchedule}}"']),
    ("matchLabelKeys in selector", "spec.topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["app"]}],
     [f'{TSC}[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector']),
    # The API server merges each key the pod has a label for into the selector, once: listed again,
    # it is "in both"; a key the pod lacks merges nothing.
    ("matchLabelKeys repeated", "spec.topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"x": "y"}}, "matchLabelKeys": ["app", "zz", "zz", "app"]}],
     [f'{TSC}[3]: Invalid value: "app": exists in both matchLabelKeys and labelSelector']),
]


@pytest.mark.parametrize(("path", "value", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pod_rules(path: str, value: Any, expected: list[str]) -> None:
    assert messages(validate_pod(pod_with(path, value))) == expected


@pytest.mark.parametrize(("shared", "expected"), [
    ({"hostNetwork": True}, ["spec.hostNetwork: Forbidden: when `hostUsers` is false"]),
    ({"hostPID": True, "hostIPC": True},
     ["spec.HostPID: Forbidden: when `hostUsers` is false", "spec.HostIPC: Forbidden: when `hostUsers` is false"]),
    ({}, []),
])
def test_a_user_namespace_shares_no_host_namespace(shared: dict[str, Any], expected: list[str]) -> None:
    """As kube-apiserver v1.37.2 answers (UserNamespacesHostNetworkSupport is alpha, off)."""
    pod = base_pod()
    pod["spec"].update(hostUsers=False, **shared)
    assert messages(validate_pod(pod)) == expected
    pod["spec"]["hostUsers"] = True
    assert messages(validate_pod(pod)) == []


def test_typed_and_raw_pods_give_the_same_answer() -> None:
    raw = pod_with("spec.containers.0.name", "Web")
    typed = Pod(**{})  # an empty typed pod: name, namespace and containers missing
    assert messages(validate_pod(raw))[0].startswith('spec.containers[0].name: Invalid value: "Web"')
    assert messages(validate_pod(typed)) == [
        "metadata.name: Required value: name or generateName is required",
        "metadata.namespace: Required value",
        "spec.containers: Required value",
    ]
    assert messages(validate_pod({"metadata": {"name": 5}})) == ["metadata.name: expected `str`, got `int`"]


def base_node() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}


NODE_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    # The API server computes an integer resource's milli-value in int64: past 2^63/1000 it wraps,
    # and the wrapped value is "not an integer" (as kube-apiserver 1.34 answers).
    ("pods whose milli-value wraps", {"status": {"capacity": {"pods": "9223372036854776"}}},
     ['status.capacity.pods: Invalid value: "9223372036854776": must be an integer']),
    ("pods just below", {"status": {"capacity": {"pods": "9223372036854775"}}}, []),
    ("taint effect", {"spec": {"taints": [{"key": "a", "effect": "NoRun"}]}},
     ['metadata.taints[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"']),
    ("taint effect required", {"spec": {"taints": [{"key": "a", "effect": ""}]}}, ["metadata.taints[0].effect: Required value"]),
    ("taint key", {"spec": {"taints": [{"key": "", "effect": "NoSchedule"}]}},
     ['metadata.taints[0].key: Invalid value: "": name part must be non-empty',
      f'metadata.taints[0].key: Invalid value: "": {KEY_NAME_MSG}']),
    ("taint value", {"spec": {"taints": [{"key": "a", "value": "a b", "effect": "NoSchedule"}]}},
     [f'metadata.taints[0].value: Invalid value: "a b": {VALUE_MSG}']),
    ("duplicate taint", {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "x", "effect": "NoSchedule"}]}},
     ['metadata.taints[1]: Duplicate value: {"Key":"a","Value":"x","Effect":"NoSchedule","TimeAdded":null}: '
      "taints must be unique by key and effect pair"]),
    ("same key other effect", {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]}}, []),
    ("negative capacity", {"status": {"capacity": {"cpu": "-2"}}},
     ['status.capacity.cpu: Invalid value: "-2": must be greater than or equal to 0']),
    ("fractional pods", {"status": {"allocatable": {"pods": "1.5"}}},
     ['status.allocatable.pods: Invalid value: "1500m": must be an integer']),
    ("cpu 1e30", {"status": {"allocatable": {"cpu": "1e30"}}},
     [f'status.allocatable.cpu: Invalid value: "1e30": must be less than or equal to {INT64}m']),
    ("bad quantity", {"status": {"capacity": {"memory": "12XB"}}}, [f'status.capacity.memory: Invalid value: "12XB": {QUANTITY_MSG}']),
    ("bad name", {"metadata": {"name": "Node_1"}}, [f'metadata.name: Invalid value: "Node_1": {SUBDOMAIN_MSG}']),
    ("images", {"status": {"images": [{"names": ["a:1"], "sizeBytes": 2**61}, {"names": ["b:1"], "sizeBytes": 2**61}]}}, []),
    # status.declaredFeatures, as kube-apiserver v1.37.2 answers.
    ("declared features", {"status": {"declaredFeatures": ["A", "B/c", "RestartAllContainersOnContainerExits"]}}, []),
    ("declared features unsorted", {"status": {"declaredFeatures": ["B", "A"]}},
     ['status.declaredFeatures[1]: Invalid value: "A": list must be sorted alphabetically']),
    ("declared features repeated", {"status": {"declaredFeatures": ["A", "A"]}}, ['status.declaredFeatures[1]: Duplicate value: "A"']),
    ("declared feature names", {"status": {"declaredFeatures": ["lower", "A-b"]}},
     [f'status.declaredFeatures[0]: Invalid value: "lower": invalid feature name "lower": {FEATURE_MSG}',
      'status.declaredFeatures[1]: Invalid value: "A-b": list must be sorted alphabetically',
      f'status.declaredFeatures[1]: Invalid value: "A-b": invalid feature name "A-b": {FEATURE_MSG}']),
    ("declared feature slashes", {"status": {"declaredFeatures": ["A/", "A//b"]}},
     [f'status.declaredFeatures[0]: Invalid value: "A/": invalid feature name "A/": {FEATURE_MSG}',
      f'status.declaredFeatures[1]: Invalid value: "A//b": invalid feature name "A//b": {FEATURE_MSG}']),
    ("declared feature too long", {"status": {"declaredFeatures": ["A" * 254]}},
     [f'status.declaredFeatures[0]: Invalid value: "{"A" * 100}"...(154 more): invalid feature name "{"A" * 100}"...(154 more): '
      "must be no more than 253 characters"]),
    ("declared feature not a line", {"status": {"declaredFeatures": ["A\n"]}},
     [f'status.declaredFeatures[0]: Invalid value: "A\\n": invalid feature name "A\\n": {FEATURE_MSG}']),
    ("images too big", {"status": {"images": [{"names": ["a:1", "a@sha256:x"], "sizeBytes": 2**61},
                                              {"names": ["b:1"], "sizeBytes": 2**61}]}},
     ["status.images: Invalid value: 6917529027641081856: the images' sizeBytes must add up to at most 4611686018427387904"]),
]


@pytest.mark.parametrize(("patch", "expected"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_node_rules(patch: dict[str, Any], expected: list[str]) -> None:
    node = base_node()
    for key, value in patch.items():
        node[key] = {**node.get(key, {}), **value}
    assert messages(validate_node(node)) == expected


PC_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {"metadata": {"name": "high"}, "value": 1000}, []),
    # The API server takes a class without value as value 0 (its Go int32 cannot tell them apart).
    ("missing value is 0", {"metadata": {"name": "high"}}, []),
    ("too high", {"metadata": {"name": "high"}, "value": 1_000_000_001},
     ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]),
    ("int32", {"metadata": {"name": "high"}, "value": -(2**31) - 1}, ["value: expected `int` >= -2147483648"]),
    ("system name", {"metadata": {"name": "system-mine"}, "value": 1},
     ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
      "system-mine is not a known system priority class"]),
    ("system class as exported", {"metadata": {"name": "system-node-critical"}, "value": 2000001000}, []),
    ("system class changed", {"metadata": {"name": "system-node-critical"}, "value": 5},
     ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
      "value of system-node-critical PriorityClass must be 2000001000"]),
    ("preemptionPolicy", {"metadata": {"name": "high"}, "value": 1, "preemptionPolicy": "Sometimes"},
     ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"']),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in PC_CASES], ids=[c[0] for c in PC_CASES])
def test_priority_class_rules(raw: dict[str, Any], expected: list[str]) -> None:
    raw = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **raw}
    assert messages(validate_priority_class(raw)) == expected


TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def workload(kind: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": copy.deepcopy(TEMPLATE)}
    if kind not in ("Job", "ReplicationController"):
        body["selector"] = {"matchLabels": {"app": "web"}}
    if kind == "Job":
        body["template"]["spec"]["restartPolicy"] = "Never"
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web", "namespace": "shop"}, "spec": body}


WORKLOAD_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("deployment ok", workload("Deployment", replicas=3), []),
    ("negative replicas", workload("Deployment", replicas=-1), ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ("replicas int32", workload("ReplicaSet", replicas=2**40), ["spec.replicas: expected `int` <= 2147483647"]),
    ("mismatch", workload("ReplicaSet", selector={"matchLabels": {"app": "api"}}),
     ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`']),
    ("empty selector", workload("StatefulSet", selector={}),
     ["spec.selector: Invalid value: {}: empty selector is invalid for statefulset"]),
    ("template restartPolicy", workload("Deployment", template={**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}),
     ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']),
    ("template labels path", workload("Deployment", selector={"matchLabels": {"a b": "x"}},
                                      template={**TEMPLATE, "metadata": {"labels": {"a b": "x"}}}),
     [f'spec.selector.matchLabels: Invalid value: "a b": {KEY_NAME_MSG}',
      'spec.selector: Invalid value: {"matchLabels":{"a b":"x"}}: invalid label selector',
      f'spec.template.labels: Invalid value: "a b": {KEY_NAME_MSG}']),
    ("template containers", workload("Deployment", template={"metadata": TEMPLATE["metadata"], "spec": {}}),
     ["spec.template.spec.containers: Required value"]),
    ("statefulset name is a label", {**workload("StatefulSet"), "metadata": {"name": "db.v1", "namespace": "shop"}},
     ['metadata.name: Invalid value: "db.v1": must not contain dots']),
    ("ordinals", workload("StatefulSet", ordinals={"start": -1}),
     ["spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"]),
    ("podManagementPolicy", workload("StatefulSet", podManagementPolicy="Random"),
     ['spec.podManagementPolicy: Invalid value: "Random": must be \'OrderedReady\' or \'Parallel\'']),
    # Texts below are the pinned kube-apiserver's answers to the same objects.
    ("serviceName is a label", workload("StatefulSet", serviceName="a.b"),
     ['spec.serviceName: Invalid value: "a.b": must not contain dots']),
    ("serviceName blank", workload("StatefulSet", serviceName=" "),
     ['spec.serviceName: Invalid value: " ": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '
      "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
      "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("updateStrategy type", workload("StatefulSet", updateStrategy={"type": "Bogus", "rollingUpdate": {"partition": 3}}),
     ['spec.updateStrategy: Invalid value: {"Type":"Bogus","RollingUpdate":{"Partition":3,"MaxUnavailable":null}}: '
      "must be 'RollingUpdate' or 'OnDelete'"]),
    ("updateStrategy OnDelete", workload("StatefulSet", updateStrategy={"type": "OnDelete", "rollingUpdate": {"partition": 1}}),
     ['spec.updateStrategy.rollingUpdate: Invalid value: {"Partition":1,"MaxUnavailable":null}: '
      "only allowed for updateStrategy 'RollingUpdate'"]),
    ("partition", workload("StatefulSet", updateStrategy={"rollingUpdate": {"partition": -1}}),
     ["spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"]),
    ("statefulset maxUnavailable is dropped (feature gate off)", workload("StatefulSet", updateStrategy={
        "rollingUpdate": {"maxUnavailable": "x"}}), []),
    ("pvc retention", workload("StatefulSet", persistentVolumeClaimRetentionPolicy={"whenDeleted": "X", "whenScaled": ""}),
     ['spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "X": supported values: "Retain", "Delete"']),
    ("templates are not merged nor checked for keys in both", workload("Deployment", template={**TEMPLATE, "spec": {
        **TEMPLATE["spec"], "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                                           "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["app"]}]}}),
     []),
    ("deployment strategy type", workload("Deployment", strategy={"type": "Bogus", "rollingUpdate": {"maxSurge": "1<"}}),
     ['spec.strategy: Unsupported value: {"Type":"Bogus","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":"1\\u003c"}}: '
      'supported values: "Recreate", "RollingUpdate"']),
    ("recreate with rollingUpdate", workload("Deployment", strategy={"type": "Recreate", "rollingUpdate": {}}),
     ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]),
    ("surge and unavailable 0", workload("Deployment", strategy={"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "0"}}),
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0": a valid percent string must be a numeric string '
      "followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
      'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0": may not be 0 when `maxSurge` is 0']),
    ("unavailable over 100%", workload("Deployment", strategy={"rollingUpdate": {"maxUnavailable": "200%", "maxSurge": -1}}),
     ["spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
      'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "200%": must not be greater than 100%']),
    ("progress deadline defaults to 600", workload("Deployment", minReadySeconds=600),
     ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]),
    ("progress deadline", workload("Deployment", minReadySeconds=5, progressDeadlineSeconds=5),
     ["spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"]),
    ("job ok", workload("Job", parallelism=2, completions=4), []),
    # As v1.37.2 says it: the Always that defaulting writes is not the user's (tests/integration/api).
    ("job restartPolicy default", workload("Job", template=copy.deepcopy(TEMPLATE)),
     ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("job restartPolicy Always", workload("Job", template={**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Always"}}),
     ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("job restartPolicy with podFailurePolicy",
     workload("Job", podFailurePolicy={"rules": []}, template={**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "OnFailure"}}),
     ['spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified']),
    ("job parallelism", workload("Job", parallelism=-1), ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]),
    ("job completionMode", workload("Job", completionMode="Sparse"),
     ['spec.completionMode: Unsupported value: "Sparse": supported values: "NonIndexed", "Indexed"']),
    ("indexed needs completions", workload("Job", completionMode="Indexed"),
     ["spec.completions: Required value: when completion mode is Indexed"]),
    ("job selector not generated", {**workload("Job", selector={"matchLabels": {"app": "web"}}),
                                    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"}},
     ['spec.selector: Invalid value: {"matchLabels":{"app":"web","batch.kubernetes.io/controller-uid":"u-1"}}: '
      "`selector` not auto-generated",
      'spec.template.metadata.labels: Invalid value: {"app":"web","batch.kubernetes.io/controller-uid":"u-1",'
      '"batch.kubernetes.io/job-name":"web","controller-uid":"u-1","job-name":"web"}: `selector` does not match template `labels`']),
    ("job selector on generated labels", workload("Job", selector={"matchLabels": {"batch.kubernetes.io/job-name": "web"}}), []),
    ("invalid selector", workload("ReplicaSet", selector={"matchExpressions": [{"key": "app", "operator": "Near"}]}),
     ['spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
      'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Near"}]}: invalid label selector']),
    ("job manual selector", workload("Job", manualSelector=True, selector={"matchLabels": {"app": "api"}}),
     ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`']),
    ("job name too long for its label", {**workload("Job"), "metadata": {"name": "j" * 64, "namespace": "shop"}},
     [f'spec.template.labels: Invalid value: "{"j" * 64}": must be no more than 63 characters'] * 2),
    ("rc selector defaults to template labels", workload("ReplicationController"), []),
    ("rc mismatch", workload("ReplicationController", selector={"app": "api"}),
     ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`']),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in WORKLOAD_CASES], ids=[c[0] for c in WORKLOAD_CASES])
def test_workload_rules(raw: dict[str, Any], expected: list[str]) -> None:
    assert messages(validate_manifest(raw)) == expected


def test_namespace_names_are_labels() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}
    assert messages(validate_manifest(ns)) == ['metadata.name: Invalid value: "team.a": must not contain dots']
    assert validate_manifest({**ns, "metadata": {"name": "team-a"}}) == []


def test_csidriver_names_are_dns_subdomains() -> None:
    """A CSIDriver's name is checked as a DNS subdomain (up to 253 characters, lowercase), as v1.37.2
    checks it; not as the 63-character driver name of a volume's csi.driver."""
    def driver(name: str) -> list[str]:
        return [str(i) for i in validate_manifest({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                                                   "metadata": {"name": name}, "spec": {}})]

    assert driver("a" * 70 + ".com") == []
    assert driver("Ab.example.com") == [f'metadata.name: Invalid value: "Ab.example.com": {SUBDOMAIN_MSG}']
    assert driver("") == ["metadata.name: Required value: name or generateName is required"]


def test_shown_quotes_and_cuts() -> None:
    assert shown("Web") == '"Web"'
    assert shown('say "hi"\n') == '"say \\"hi\\"\\n"'
    assert shown(70000) == "70000"
    assert shown(None) == "null"
    big = shown("x" * 10_000_000)
    assert big == '"' + "x" * 100 + '"...(9999900 more)'
    assert shown(10**200).endswith("...(101 more)")


def test_kubectl_line_joins_issues_as_kube_does() -> None:
    one = [FieldIssue("spec.a", "Required value")]
    two = [FieldIssue("spec.a", "Required value"), FieldIssue("spec.b", "Forbidden: x"), FieldIssue("spec.a", "Required value")]
    assert invalid_object("Pod", "web", one) == 'The Pod "web" is invalid: spec.a: Required value'
    assert aggregate(two) == "[spec.a: Required value, spec.b: Forbidden: x]"


def test_a_line_stays_bounded_however_many_issues() -> None:
    pod = pod_with("metadata.labels", {f"bad key {i}": "x" for i in range(500)})
    line = invalid_object("Pod", "web-1", validate_pod(pod))
    assert line.endswith(", and 490 more]") and line.count("metadata.labels: Invalid value") == 10


def test_undecodable_objects_are_reported_as_the_api_server_does() -> None:
    issues = validate_pod(pod_with("spec.priority", "high"))
    assert invalid_object("Pod", "web-1", issues) == (
        'Pod in version "v1" cannot be handled as a Pod: spec.priority: expected `int | null`, got `str`'
    )
    assert invalid_object("Deployment", "web", issues, "apps/v1").startswith('Deployment in version "v1" cannot be handled')


def test_missing_fields_are_go_zero_values_not_decode_errors() -> None:
    # The API server's decoder requires no field: a preferred term without preference is an empty
    # term (accepted), one without weight has weight 0 (refused by validation, not by decoding).
    term: dict[str, Any] = {"weight": 5}
    assert validate_pod(pod_with("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", [term])) == []
    spread = [{"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    issues = messages(validate_pod(pod_with("spec.topologySpreadConstraints", spread)))
    assert issues == ["spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"]


# Fields the scheduler ignores but the API server validates; texts are kube-apiserver 1.34's.
OTHER_POD_FIELD_CASES: list[tuple[str, str, Any, list[str]]] = [
    ("pull policy", "spec.containers.0.imagePullPolicy", "Bogus",
     ['spec.containers[0].imagePullPolicy: Unsupported value: "Bogus": supported values: "Always", "IfNotPresent", "Never"']),
    ("termination message policy", "spec.containers.0.terminationMessagePolicy", "Bogus",
     ['spec.containers[0].terminationMessagePolicy: Unsupported value: "Bogus": supported values: "File", "FallbackToLogsOnError"']),
    ("env name", "spec.containers.0.env", [{"name": ""}, {"name": "a=b"}, {"name": "1 x"}],
     ["spec.containers[0].env[0].name: Required value",
      'spec.containers[0].env[1].name: Invalid value: "a=b": a valid environment variable name must consist only of printable '
      "ASCII characters other than '='"]),
    ("mount of no volume", "spec.containers.0.volumeMounts", [{"name": "data"}],
     ['spec.containers[0].volumeMounts[0].name: Not found: "data"', "spec.containers[0].volumeMounts[0].mountPath: Required value"]),
    ("volume names", "spec.volumes", [{"name": "data"}, {"name": "data"}, {"name": "Data"}],
     ['spec.volumes[1].name: Duplicate value: "data"', f'spec.volumes[2].name: Invalid value: "Data": {LABEL_MSG}']),
    ("dnsPolicy", "spec.dnsPolicy", "Bogus",
     ['spec.dnsPolicy: Unsupported value: "Bogus": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"']),
    ("dnsPolicy None", "spec.dnsPolicy", "None", ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]),
    ("hostname", "spec.hostname", "Bad_Host", [f'spec.hostname: Invalid value: "Bad_Host": {LABEL_MSG}']),
]


@pytest.mark.parametrize(("path", "value", "expected"), [c[1:] for c in OTHER_POD_FIELD_CASES], ids=[c[0] for c in OTHER_POD_FIELD_CASES])
def test_fields_the_scheduler_ignores_are_validated(path: str, value: Any, expected: list[str]) -> None:
    assert messages(validate_pod(pod_with(path, value))) == expected


def test_job_and_service_fields() -> None:
    assert messages(validate_manifest(workload("Job", ttlSecondsAfterFinished=-1, backoffLimitPerIndex=1,
                                               podReplacementPolicy="TerminatingOrFailed", podFailurePolicy={"rules": []}))) == [
        "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
        "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
        'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"',
    ]
    assert messages(validate_manifest(workload("Job", maxFailedIndexes=1, completionMode="Indexed", completions=2))) == [
        "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"ports": [{"port": 80}], "sessionAffinity": "Bogus"}}
    assert messages(validate_manifest(svc)) == ['spec.sessionAffinity: Unsupported value: "Bogus": supported values: "ClientIP", "None"']
