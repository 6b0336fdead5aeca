"""Pod-level resources (spec.resources): the API server's defaulting on create
(PodLevelResourcesFixDefaulting) and its checks against the containers, rule by rule. The same pods
are compared with the real kube-apiserver in tests/integration/api/test_pod_level_resources.py."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.objects import PodSpec
from kubesched.api.validation.podlevel import default_pod_level, validate_pod_resources


def container(name: str, *, restart: str | None = None, **resources: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "i", "resources": resources}
    if restart:
        out["restartPolicy"] = restart
    return out


def spec(raw: dict[str, Any]) -> PodSpec:
    return msgspec.convert(raw, PodSpec)


DEFAULTING: list[tuple[str, dict[str, Any], tuple[dict[str, str], dict[str, str]] | None]] = [
    ("a missing cpu or memory request is the containers' aggregate request (from their limits too)",
     {"containers": [container("c", limits={"cpu": "500m", "memory": "1Gi"})], "resources": {"requests": {"cpu": "1"}}},
     ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})),
    ("a missing hugepages limit is the containers' aggregate limit, and the request follows it",
     {"containers": [container("c", limits={"hugepages-2Mi": "4Mi", "memory": "1Gi"})], "resources": {"limits": {"memory": "2Gi"}}},
     ({"memory": "1Gi", "hugepages-2Mi": "4Mi"}, {"memory": "2Gi", "hugepages-2Mi": "4Mi"})),
    ("a request the containers do not make is the pod-level limit",
     {"containers": [container("a", requests={"cpu": "100m"}), container("b", requests={"cpu": "200m"})],
      "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
     ({"cpu": "300m", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})),
    ("a limit every container sets is the larger of the pod-level request and their aggregate",
     {"containers": [container("c", limits={"cpu": "1"})], "initContainers": [container("i", limits={"cpu": "1"})],
      "resources": {"requests": {"cpu": "3"}}},
     ({"cpu": "3"}, {"cpu": "3"})),
    ("no limit when some container leaves it unset",
     {"containers": [container("a", limits={"cpu": "1"}), container("b")], "resources": {"requests": {"cpu": "3"}}},
     ({"cpu": "3"}, {})),
    ("an empty pod level is left alone", {"containers": [container("c")], "resources": {}}, None),
    ("no pod level at all", {"containers": [container("c", requests={"cpu": "1"})]}, None),
]


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in DEFAULTING], ids=[c[0] for c in DEFAULTING])
def test_defaulting(raw: dict[str, Any], expected: tuple[dict[str, str], dict[str, str]] | None) -> None:
    defaulted = default_pod_level(spec(raw))
    assert (None if defaulted is None else (defaulted.requests, defaulted.limits)) == expected


HUGE_BELOW = {"containers": [container("c", limits={"hugepages-2Mi": "4Mi", "memory": "1Gi"})],
              "resources": {"limits": {"hugepages-2Mi": "2Mi", "memory": "2Gi"}}}
PAGES_LIMIT = ('spec.resources.limits[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or equal to aggregate '
               'container limits of 4Mi')
PAGES_CONTAINER = ('spec.resources.containers[0][hugepages-2Mi].limits: Invalid value: "4Mi": must be less than or equal '
                   'to pod limits of 2Mi')
VALIDATION: list[tuple[str, dict[str, Any], bool, list[str]]] = [
    ("requests below the aggregate of app containers, sidecars and init containers",
     {"containers": [container("c", requests={"cpu": "1"})],
      "initContainers": [container("s", restart="Always", requests={"cpu": "1"}), container("i", requests={"cpu": "3"})],
      "resources": {"requests": {"cpu": "3500m"}}}, False,
     ['spec.resources.requests[cpu]: Invalid value: "3500m": must be greater than or equal to aggregate container requests of 4']),
    ("a pod's request defaulted from the containers may exceed its pod-level limit",
     {"containers": [container("c", requests={"cpu": "2"})], "resources": {"limits": {"cpu": "1"}}}, False,
     ['spec.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1']),
    ("a template is checked as given: nothing defaulted",
     {"containers": [container("c", requests={"cpu": "2"})], "resources": {"limits": {"cpu": "1"}}}, True, []),
    ("hugepages below the containers' limits, on a pod (requests defaulted)", HUGE_BELOW, False,
     ['spec.resources.requests[hugepages-2Mi]: Invalid value: "2Mi": must be greater than or equal to aggregate '
      'container requests of 4Mi', PAGES_LIMIT, PAGES_CONTAINER]),
    ("hugepages below the containers' limits, in a template", HUGE_BELOW, True, [PAGES_LIMIT, PAGES_CONTAINER]),
    ("a container limit above the pod's",
     {"containers": [container("c", requests={"cpu": "1"}, limits={"cpu": "2"})],
      "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1500m"}}}, False,
     ['spec.resources.containers[0][cpu].limits: Invalid value: "2": must be less than or equal to pod limits of 1500m']),
    ("a windows pod", {"os": {"name": "windows"}, "containers": [container("c")], "resources": {"requests": {"cpu": "1"}}}, False,
     ["spec.resources: Forbidden: may not be set for a windows pod"]),
    ("claims, even an empty list", {"containers": [container("c")], "resources": {"requests": {"cpu": "1"}, "claims": []}}, False,
     ["spec.resources.claims: Forbidden: claims may not be set for Resources at pod-level"]),
    ("a resource the pod level may not set", {"containers": [container("c")], "resources": {"requests": {"ephemeral-storage": "1Gi"}}},
     False, ['spec.resources.requests[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", '
             '"hugepages-", "memory"']),
]


@pytest.mark.parametrize(("raw", "template", "expected"), [c[1:] for c in VALIDATION], ids=[c[0] for c in VALIDATION])
def test_validation(raw: dict[str, Any], template: bool, expected: list[str]) -> None:
    issues = validate_pod_resources(spec(raw), "spec", template=template, claim_names=set())
    assert [str(i) for i in issues] == expected
