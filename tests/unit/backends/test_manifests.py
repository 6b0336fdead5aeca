"""Simulator input: manifests -> ClusterInput through the loader (backends.sim.manifests): kinds read
and skipped, duplicates, error messages naming file, document, object and field, keep_going."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_objects, load_paths
from unit.backends.manifestkit import DEPLOYMENT, JOB, POD, error_of, load, write

# --- core kinds ------------------------------------------------------------------------------------


def test_node_without_resources_is_a_warning(tmp_path: Path) -> None:
    cluster = load(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: bare}\n")
    assert cluster.nodes[0].status.allocatable == {"pods": "110"}
    assert any("Node bare" in w and "allocatable" in w for w in cluster.warnings)


def test_unknown_kinds_and_foreign_groups_are_skipped_with_a_warning(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: b}
        ---
        apiVersion: example.com/v1
        kind: Deployment
        metadata: {name: not-apps}
        ---
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: agent}
    """)
    assert cluster.pods == [] and cluster.workload_selectors == []
    text = "\n".join(cluster.warnings)
    assert "skipped 2 objects of kind ConfigMap (v1)" in text
    assert "Deployment (example.com/v1)" in text
    assert "DaemonSet" in text and "cluster.yaml: document 4" in text


def test_timestamps_stay_strings(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Pod
        metadata:
          name: exported
          creationTimestamp: 2024-05-01T10:00:00Z
        spec:
          nodeName: n1
          containers: [{name: c, image: nginx}]
        status:
          phase: Running
          startTime: 2024-05-01T10:00:05Z
    """)
    pod = cluster.pods[0].pod
    assert pod.metadata.creation_timestamp == "2024-05-01T10:00:00Z"
    assert pod.status.phase == "Running" and pod.spec.node_name == "n1"


# --- files, directories, lists ---------------------------------------------------------------------------


def test_duplicate_objects_are_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="a") + "---" + POD.format(name="a"))
    assert "document 2: Pod default/a: defined twice: first at" in message and "document 1" in message


# --- priority -------------------------------------------------------------------------------------------------


def test_nulls_are_go_zero_values(tmp_path: Path) -> None:
    text = POD.format(name="a").replace("spec:\n", "spec:\n  nodeSelector: {disk: null}\n  tolerations: null\n")
    pod = load(tmp_path, text.replace("metadata:\n", "metadata:\n  labels: {tier: null}\n", 1)).pods[0].pod
    assert pod.metadata.labels == {"tier": ""} and pod.spec.node_selector == {"disk": ""}


# --- error messages -----------------------------------------------------------------------------------------------


def test_bad_quantity_in_pod_names_file_object_and_field(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="a").replace("cpu: 250m", "cpu: lots"), "pods.yaml")
    assert message == (
        f"{tmp_path / 'pods.yaml'}: document 1: Pod default/a: The Pod \"a\" is invalid: "
        "spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_bad_quantity_in_template_points_into_the_template(tmp_path: Path) -> None:
    message = error_of(tmp_path, DEPLOYMENT.replace("memory: 128Mi", "memory: 1.5.5Gi"))
    assert ('Deployment shop/web: The Deployment "web" is invalid: '
            'spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "1.5.5Gi"') in message


def test_bad_node_quantity(tmp_path: Path) -> None:
    message = error_of(tmp_path, "kind: Node\napiVersion: v1\nmetadata: {name: n1}\nstatus: {allocatable: {memory: 12XB}}\n")
    assert 'document 1: Node n1: The Node "n1" is invalid: status.allocatable.memory: Invalid value: "12XB"' in message
    message = error_of(tmp_path, "kind: Node\napiVersion: v1\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"-2\"}}\n")
    assert message.endswith('Node n1: The Node "n1" is invalid: status.capacity.cpu: Invalid value: "-2": must be greater '
                            "than or equal to 0")


def test_missing_name(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: pause}]}\n")
    assert message.endswith('document 1: Pod default/*: The Pod "" is invalid: metadata.name: Required value: name or '
                            "generateName is required")
    message = error_of(tmp_path, DEPLOYMENT.replace("  name: web\n", "", 1))
    assert 'Deployment shop/*: The Deployment "" is invalid: metadata.name: Required value' in message
    # generateName is enough for a pod.
    pod = load(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {generateName: job-}\nspec: {containers: [{name: c, image: pause}]}\n")
    assert re.fullmatch(r"job-[a-z0-9]{5}", pod.pods[0].pod.metadata.name)


def test_invalid_name_and_wrong_type(tmp_path: Path) -> None:
    assert 'metadata.name: Invalid value: "My_Pod"' in error_of(tmp_path, POD.format(name="My_Pod"))
    message = error_of(tmp_path, POD.format(name="a").replace("  name: a\n", "  name: a\n  labels: {replicas: 3}\n"))
    assert message.endswith('Pod default/a: Pod in version "v1" cannot be handled as a Pod: metadata.labels[...]: '
                            "expected `str`, got `int`")


def test_load_objects_from_dicts() -> None:
    cluster = load_objects([
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    ])
    assert cluster.pods[0].pod.metadata.name == "p"
    with pytest.raises(ManifestError, match=re.escape('<input>: document 1: Pod default/p: Pod in version "v1" cannot be '
                                                      "handled as a Pod: spec.containers: expected `array`")):
        load_objects([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": 3}}])


# --- validation and keep_going ---------------------------------------------------------------------------------


def named_pod(name: str, spec: str = "", namespace: str = "default") -> str:
    """A pod document; `spec` adds lines under spec (indented by two)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n"
            f"  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]\n{spec}")


MIXED = "---\n".join([
    named_pod("ok-1"),
    named_pod("bad-name").replace("name: c,", "name: Web,"),
    "apiVersion: v1\nkind: Node\nmetadata: {name: huge}\nstatus: {capacity: {cpu: \"1e30\", memory: 99999999999999999999999}}\n",
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"4\", memory: 8Gi}}\n",
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 2000000000\n",
    named_pod("wants-gold", "  priorityClassName: gold\n"),
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, labels: {\"bad key\": x}}\n",
    named_pod("in-team", namespace="team"),
    named_pod("weighty", "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
                         "      - {weight: 0, preference: {}}\n"),
    named_pod("ok-2"),
])


def test_keep_going_drops_refused_objects_and_lists_them(tmp_path: Path) -> None:
    path = write(tmp_path, MIXED)
    cluster = load_paths([path], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["ok-1", "ok-2"]
    assert [n.metadata.name for n in cluster.nodes] == ["n1"]
    assert "gold" not in {pc.metadata.name for pc in cluster.priority_classes}
    assert "team" not in {ns.metadata.name for ns in cluster.namespaces}
    f = str(path)
    assert cluster.errors == [
        f'{f}: document 2: Pod default/bad-name: The Pod "bad-name" is invalid: spec.containers[0].name: Invalid value: '
        "\"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
        "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        f'{f}: document 3: Node huge: The Node "huge" is invalid: [status.capacity.cpu: Invalid value: "1e30": must be less '
        "than or equal to 9223372036854775807m, status.capacity.memory: Invalid value: 99999999999999999999999: must be "
        "less than or equal to 9223372036854775807]",
        f'{f}: document 5: PriorityClass gold: The PriorityClass "gold" is invalid: value: Forbidden: maximum allowed value '
        "of a user defined priority is 1000000000",
        f'{f}: document 7: Namespace team: The Namespace "team" is invalid: metadata.labels: Invalid value: "bad key": name '
        "part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        f'{f}: document 9: Pod default/weighty: The Pod "weighty" is invalid: spec.affinity.nodeAffinity.'
        "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        # Objects that need a refused one fail as they would on the API server.
        f"{f}: document 6: Pod default/wants-gold: spec.priorityClassName: no PriorityClass with name gold was found",
        f'{f}: document 8: Pod team/in-team: namespaces "team" not found',
    ]
    assert all("\n" not in e for e in cluster.errors)


def test_without_keep_going_the_first_refusal_raises(tmp_path: Path) -> None:
    message = error_of(tmp_path, MIXED)
    assert "document 2: Pod default/bad-name: The Pod \"bad-name\" is invalid: spec.containers[0].name" in message
    assert load(tmp_path, named_pod("a")).errors == []


def test_load_objects_keep_going_and_fatal_shape_errors() -> None:
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}
    bad = {**good, "metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "x", "ports": [
        {"containerPort": 80, "hostPort": 70000}]}]}}
    cluster = load_objects([good, bad], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["p"]
    assert cluster.errors == [
        '<input>: document 2: Pod default/q: The Pod "q" is invalid: spec.containers[0].ports[0].hostPort: Invalid value: '
        "70000: must be between 1 and 65535, inclusive"
    ]
    # A document that is not an object is the input's shape, not one object: fatal in both modes.
    with pytest.raises(ManifestError, match="expected a Kubernetes object"):
        load_objects([good, ["not", "an", "object"]], keep_going=True)


def test_workload_refused_with_its_template_and_the_rest_runs(tmp_path: Path) -> None:
    spread = DEPLOYMENT.replace("    spec:\n", "    spec:\n      topologySpreadConstraints:\n"
                                              "      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Sometimes}\n", 1)
    cluster = load_paths([write(tmp_path, spread + "---\n" + named_pod("ok"))], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["ok"] and cluster.workload_selectors == []
    (error,) = cluster.errors
    assert error.endswith(
        'Deployment shop/web: The Deployment "web" is invalid: [spec.template.spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero, spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable: "
        'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"]'
    )


@pytest.mark.parametrize(("spec", "expected"), [
    ("  tolerations: [{key: a, operator: Maybe}]\n",
     'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'),
    ("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
     "      - {topologyKey: \"\", labelSelector: {matchLabels: {app: a}}}\n",
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not "
     "be empty"),
    ("  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
     "        - matchExpressions: [{key: zone, operator: Near, values: [a]}]\n",
     "matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"),
    ("  nodeSelector: {zone: \"a b\"}\n", 'spec.nodeSelector: Invalid value: "a b"'),
])
def test_api_server_refusals_through_the_loader(tmp_path: Path, spec: str, expected: str) -> None:
    assert expected in error_of(tmp_path, named_pod("p", spec))


def test_api_version_is_required_and_must_be_served(tmp_path: Path) -> None:
    assert "cluster.yaml: document 1: Pod: apiVersion: Required value" in error_of(
        tmp_path, "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    old = DEPLOYMENT.replace("apps/v1", "apps/v1beta1")
    assert 'Deployment shop/web: no matches for kind "Deployment" in version "apps/v1beta1"' in error_of(tmp_path, old)


def test_huge_scalars_are_cut_in_messages(tmp_path: Path) -> None:
    big = "x" * 10_000_000
    message = error_of(tmp_path, named_pod("p").replace("name: c,", f"name: {big},"))
    assert len(message) < 2000 and "...(9999900 more)" in message
    for text in (named_pod(big), named_pod("p", namespace=big), f"apiVersion: v1\nkind: {big}\n"):
        cluster = load_paths([write(tmp_path, text)], keep_going=True)
        assert all(len(line) < 2000 for line in cluster.errors + cluster.warnings)
        assert len(cluster.errors + cluster.warnings) == 1


def test_overflowing_quantities_never_reach_scheduling(tmp_path: Path) -> None:
    import asyncio

    from kubesched.backends.sim.engine import Simulation
    from kubesched.config.parse import default_config

    text = "---\n".join([
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"4\", memory: 8Gi}}\n",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus: {capacity: {cpu: \"1e1000000\"}}\n",
        named_pod("big").replace("cpu: 100m", "cpu: \"1e30\""),
        named_pod("small"),
    ])
    cluster = load_paths([write(tmp_path, text)], keep_going=True)
    assert len(cluster.errors) == 2
    result = asyncio.run(asyncio.wait_for(Simulation(cluster, default_config(), seed=0).run(), timeout=60))
    assert result.placements == {"default/small": "n1"}


def test_job_selector_without_manual_selector(tmp_path: Path) -> None:
    on_generated = JOB.replace("spec:\n  parallelism", "spec:\n  selector: {matchLabels: {batch.kubernetes.io/job-name: etl}}\n"
                                                       "  parallelism", 1)
    assert len(load(tmp_path, on_generated).pods) == 3
    on_app = on_generated.replace("batch.kubernetes.io/job-name: etl", "app: etl")
    assert 'spec.selector: Invalid value: {"matchLabels":{"app":"etl",' in error_of(tmp_path, on_app)
    assert "`selector` not auto-generated" in error_of(tmp_path, on_app)


def test_pods_bound_by_node_name_cannot_overflow_a_node(tmp_path: Path) -> None:
    # nodeName skips the fit check, so only the loader keeps the node's summed requests in int64.
    big = named_pod("b", "  nodeName: n1\n").replace("cpu: 100m", f"memory: \"{2**62}\"")
    docs = [big.replace("name: b,", f"name: b{i},") for i in range(3)]
    cluster = load_paths([write(tmp_path, "---\n".join(docs))], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["b0"]
    assert cluster.errors[0].endswith(
        'document 2: Pod default/b1: spec.nodeName: the memory requests of the pods bound to node "n1" add up beyond '
        "9223372036854775807"
    )
    assert len(cluster.errors) == 2


def test_services_are_validated(tmp_path: Path) -> None:
    svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}}\n"
    assert error_of(tmp_path, svc).endswith('Service default/web: The Service "web" is invalid: spec.ports: Required value')
    two = svc.replace("spec: {", "spec: {ports: [{port: 80}, {port: 70000, name: b}], ")
    assert error_of(tmp_path, two).endswith(
        'The Service "web" is invalid: [spec.ports[0].name: Required value, spec.ports[1].port: Invalid value: 70000: must '
        "be between 1 and 65535, inclusive]")
    # kube 1.34 names Services with DNS-1035 labels: a letter first.
    digit_first = svc.replace("name: web", "name: 1web").replace("spec: {", "spec: {ports: [{port: 80}], ")
    assert error_of(tmp_path, digit_first).endswith(
        'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '
        "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def test_copies_and_generated_names_stay_valid_names(tmp_path: Path) -> None:
    long = "a" * 252
    text = named_pod(long).replace(f"  name: {long},", f"  name: {long},")
    text = text.replace(f"metadata: {{name: {long}, namespace: default}}",
                        f"metadata: {{name: {long}, namespace: default, annotations: {{sim.kubesched.io/count: \"3\"}}}}")
    message = error_of(tmp_path, text)
    assert f'metadata.name: Invalid value: "{"a" * 100}"...(154 more): must be no more than 253 characters' in message
    generated = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: " + "g" * 100 + "-}\n" \
                "spec: {containers: [{name: c, image: x}]}\n"
    (sp,) = load(tmp_path, generated).pods
    assert len(sp.pod.metadata.name) == 63 and sp.pod.metadata.name.startswith("g" * 58)


# --- dynamic resource allocation ----------------------------------------------------------------------


def test_dra_kinds_are_read_not_skipped(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata: {name: gpu}
        spec: {extendedResourceName: example.com/gpu}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata: {name: shared}
        spec:
          devices:
            requests: [{name: gpu, exactly: {deviceClassName: gpu}}]
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {name: one, namespace: team, annotations: {sim.kubesched.io/arrival: 30s}}
        spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {name: n1-gpus}
        spec: {driver: gpu.example.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1}}
    """)
    assert not cluster.warnings
    got = [(resource, obj.metadata.namespace, obj.metadata.name, arrival) for resource, obj, arrival in cluster.devices]
    assert got == [("resource.k8s.io/DeviceClass", "", "gpu", 0.0),
                   ("resource.k8s.io/ResourceClaim", "default", "shared", 0.0),
                   ("resource.k8s.io/ResourceClaimTemplate", "team", "one", 30.0),
                   ("resource.k8s.io/ResourceSlice", "", "n1-gpus", 0.0)]
    assert cluster.devices[0][1].spec.extended_resource_name == "example.com/gpu"
    assert "team" in {ns.metadata.name for ns in cluster.namespaces}


@pytest.mark.parametrize(("doc", "expected"), [
    ("kind: DeviceClass\nmetadata: {name: gpu}\nspec: {extendedResourceName: gpu}",
     "DeviceClass gpu: The DeviceClass \"gpu\" is invalid: spec.extendedResourceName: Invalid value: \"gpu\": "
     "a name must be a domain-prefixed path, such as 'example.com/my-prop'"),
    ("kind: DeviceClass\nmetadata: {name: gpu}\nspec: {extendedResource: example.com/gpu}",
     'DeviceClass gpu: DeviceClass in version "v1" cannot be handled as a DeviceClass: strict decoding error: '
     'unknown field "spec.extendedResource"'),
    ("kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: g, exactly: {count: many}}]}}",
     'ResourceClaim default/c: ResourceClaim in version "v1" cannot be handled as a ResourceClaim: '
     "spec.devices.requests[0].exactly.count: expected `int`, got `str`"),
    # The loader hands the device CEL environment to the validation: selectors compile as on create.
    ("kind: DeviceClass\nmetadata: {name: gpu}\nspec: {selectors: [{cel: {expression: 'device.driver'}}]}",
     'DeviceClass gpu: The DeviceClass "gpu" is invalid: spec.selectors[0].cel.expression: Invalid value: "device.driver": '
     "must evaluate to bool or the unknown type, not string"),
])
def test_bad_dra_objects_are_refused_as_the_api_server_refuses_them(tmp_path: Path, doc: str, expected: str) -> None:
    assert error_of(tmp_path, "apiVersion: resource.k8s.io/v1\n" + doc).endswith(expected)


def test_dra_kinds_of_a_version_not_served_are_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: gpu}\n")
    assert message.endswith('DeviceClass gpu: no matches for kind "DeviceClass" in version "resource.k8s.io/v1beta1"')
