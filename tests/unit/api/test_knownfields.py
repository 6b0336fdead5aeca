"""Strict field validation of manifests: unknown fields named as the API server names them."""

from __future__ import annotations

import pytest

from kubesched.api.knownfields import MAX_LISTED, go_nulls, strict_decoding_error, unknown_fields, wrong_type
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_objects


def pod(**spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "pause"}], **spec}}


def test_a_valid_object_has_no_unknown_fields() -> None:
    obj = pod(tolerations=[{"key": "k", "operator": "Exists"}], nodeSelector={"any-key": "v"},
              affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                  {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]}}})
    obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    obj["metadata"] = {"name": "p", "labels": {"a": "b"}, "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]}
    assert unknown_fields("Pod", obj) == []


def test_unknown_fields_in_document_order_with_list_indexes() -> None:
    obj = pod(toleration=[{"key": "x"}])
    obj["spec"]["containers"] = [{"name": "c", "image": "x", "resource": {}}]  # type: ignore[index]
    obj["spec"]["zz"] = 1  # type: ignore[index]
    obj["metadata"] = {"name": "p", "extra": True}
    assert unknown_fields("Pod", obj) == ["metadata.extra", "spec.containers[0].resource", "spec.toleration", "spec.zz"]


def test_templates_of_workloads_are_checked_too() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}},
                                        "spec": {"containers": [{"name": "c", "image": "x", "port": 80}]}}}}
    assert unknown_fields("Deployment", deployment) == ["spec.template.spec.containers[0].port"]


def test_wrong_types_are_not_unknown_fields() -> None:
    assert unknown_fields("Pod", pod(tolerations="all", nodeSelector=[1])) == []


def test_the_message_is_the_api_servers() -> None:
    assert strict_decoding_error(["spec.a", "spec.b"]) == 'strict decoding error: unknown field "spec.a", unknown field "spec.b"'
    long = strict_decoding_error([f"spec.f{i}" for i in range(MAX_LISTED + 5)])
    assert long.endswith(", and 5 more")


def test_the_loader_refuses_a_misspelt_field_as_kubectl_apply_does() -> None:
    with pytest.raises(ManifestError) as info:
        load_objects([pod(toleration=[{"key": "x", "operator": "Exists"}])])
    assert str(info.value).endswith(
        'Pod default/p: Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.toleration"'
    )


def test_keep_going_leaves_the_misspelt_object_out() -> None:
    good = pod()
    bad = pod(nodeSelectors={"a": "b"})
    bad["metadata"] = {"name": "q"}
    cluster = load_objects([good, bad], keep_going=True)
    assert [p.pod.metadata.name for p in cluster.pods] == ["p"]
    assert len(cluster.errors) == 1 and 'unknown field "spec.nodeSelectors"' in cluster.errors[0]


def test_nulls_read_as_go_reads_them() -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"a": None}, "annotations": None},
        "spec": {
            "containers": [None, {"name": "c", "resources": {"requests": {"cpu": None}}, "ports": [{"containerPort": None}]}],
            "nodeSelector": {"disk": None},
            "tolerations": None,
            "extra": None,
        },
    }
    assert go_nulls("Pod", pod) == {
        "metadata": {"name": "p", "labels": {"a": ""}},
        "spec": {
            "containers": [{}, {"name": "c", "resources": {"requests": {"cpu": "0"}}, "ports": [{}]}],
            "nodeSelector": {"disk": ""},
            "extra": None,  # unknown: left for the strict check
        },
    }
    assert pod["metadata"]["labels"] == {"a": None}  # a copy
    # Wrong types are left for the decoder to report; other kinds pass through.
    assert go_nulls("Pod", {"spec": [None]}) == {"spec": [None]}
    assert go_nulls("Widget", {"a": None}) == {"a": None}
    assert go_nulls("PriorityClass", {"value": None, "preemptionPolicy": None}) == {}


@pytest.mark.parametrize(("obj", "expected"), [
    ({"spec": {"containers": [{"name": "c", "image": 5}]}}, ("spec.containers[0].image", "expected `str`, got `number`")),
    ({"spec": {"terminationGracePeriodSeconds": 2**63}}, ("spec.terminationGracePeriodSeconds", "expected `int` <= 9223372036854775807")),
    ({"spec": {"containers": [{"ports": [{"containerPort": 80.5}]}]}},
     ("spec.containers[0].ports[0].containerPort", "expected `int`, got `float`")),
    ({"spec": {"containers": [{"resources": {"requests": {"cpu": True}}}]}},
     ("spec.containers[0].resources.requests[cpu]", "expected `str | number`, got `bool`")),
    ({"spec": {"hostNetwork": "yes"}}, ("spec.hostNetwork", "expected `bool`, got `str`")),
    ({"spec": {"tolerations": {"key": "a"}}}, ("spec.tolerations", "expected `array`, got `object`")),
    ({"spec": {"affinity": ["x"]}}, ("spec.affinity", "expected `object`, got `array`")),
    # Accepted as Go (after kubectl's re-encoding) accepts them: whole floats, numbers as quantities,
    # nulls, and unknown fields of any type (the strict check's business).
    ({"spec": {"containers": [{"ports": [{"containerPort": 80.0}], "resources": {"limits": {"cpu": 1.5}}}],
               "nodeName": None, "bogus": 5}}, None),
])
def test_values_of_the_wrong_type_are_found(obj: dict[str, object], expected: tuple[str, str] | None) -> None:
    assert wrong_type("Pod", obj) == expected


def test_a_description_of_the_wrong_type_is_refused_though_unread() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}, "value": 1, "description": False}
    cluster = load_objects([pc], keep_going=True)
    assert cluster.errors == ['<input>: document 1: PriorityClass x: PriorityClass in version "v1" cannot be handled as a '
                              "PriorityClass: description: expected `str`, got `bool`"]


def test_whole_floats_in_integer_fields_are_ints_as_kubectl_sends_them() -> None:
    pod = {"spec": {"tolerations": [{"key": "a", "operator": "Exists", "tolerationSeconds": 60.0}],
                    "containers": [{"name": "c", "ports": [{"containerPort": 80.5}]}]}}
    spec = go_nulls("Pod", pod)["spec"]
    assert spec["tolerations"][0]["tolerationSeconds"] == 60 and isinstance(spec["tolerations"][0]["tolerationSeconds"], int)
    assert spec["containers"][0]["ports"][0]["containerPort"] == 80.5  # not whole: the decoder's error
    pod_input = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                 "spec": {"containers": [{"name": "c", "image": "x"}],
                          "tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60.0}]}}
    cluster = load_objects([pod_input], keep_going=True)
    assert not cluster.errors and cluster.pods[0].pod.spec.tolerations[0].toleration_seconds == 60
