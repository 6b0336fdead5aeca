"""resource.k8s.io/v1 objects through kubesched's loader and the real kube-apiserver v1.37.2, input by
input: valid seeds of the four kinds (tests/unit/fuzz/dracorpus.py) with one to three fields
replaced, retyped, deleted, added or duplicated (corpus.mutated), sent as server-side dry-run
creates with strict field validation. The bar: no object the API server refuses is accepted by
kubesched; where both refuse, the first message agrees (kubesched's, after `is invalid: `, starts
the API server's). Cases where kubesched is stricter are counted and printed with -s.

Known differences, on purpose or left to others:
- a CEL expression that does not compile: the API server refuses it, kubesched does not yet (the
  device CEL environment, devices/, will): counted as "CEL left to devices/", not a failure;
- kubesched cuts values past 100 characters in messages ("...(N more)"): the message is not
  compared then;
- Go iterates maps in random order, so with errors under two keys of one map the API server's
  first message varies: compared only when the first messages' fields are not map entries;
- non-ASCII values: kubesched's messages do not escape them as Go's %q does (field.shown).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import make_namespace
from integration.api.test_manifests_vs_apiserver import CONTEXT, as_kubectl_sends, loader_accepts
from integration.harness.rest import ApiError, Kube
from kubesched.api.knownfields import go_nulls
from kubesched.api.validation import validate_manifest
from unit.fuzz import corpus
from unit.fuzz.budget import examples
from unit.fuzz.dracorpus import DRA_SEEDS

PATHS = {
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}
# What the API server says of an expression its CEL environment refuses (kubesched does not compile yet).
CEL_REFUSAL = re.compile(r"is invalid: \[?[^ ]*cel\.expression: (Invalid value|Forbidden)")
MAP_KEY = re.compile(r"\[[^\]0-9][^\]]*\]")
_NS = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@pytest.fixture(scope="module")
def context(kube: Kube) -> Kube:
    for obj in CONTEXT:
        path = {"Namespace": "/api/v1/namespaces", "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses"}[obj["kind"]]
        try:
            kube.create(path, obj)
        except ApiError as exc:
            if exc.status != 409:
                raise
    return kube


def server_verdict(kube: Kube, obj: dict[str, Any]) -> tuple[bool, str]:
    obj = as_kubectl_sends(obj)
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    url_ns = ns if isinstance(ns, str) and _NS.fullmatch(ns) else "apps"
    path = PATHS[obj["kind"]].format(ns=url_ns)
    body, params = json.dumps(obj).encode(), {"dryRun": "All", "fieldValidation": "Strict"}
    status, payload = kube.request_raw("POST", path, body, params=params)
    if status == 404 and b"namespaces" in payload:
        # The simulator creates the namespaces objects use without declaring them.
        try:
            kube.create("/api/v1/namespaces", make_namespace(url_ns))
        except ApiError as exc:
            if exc.status != 409:
                raise
        status, payload = kube.request_raw("POST", path, body, params=params)
    try:
        message = json.loads(payload).get("message", "")
    except ValueError:
        message = payload.decode(errors="replace")[:300]
    return (200 <= status < 300 or status == 409), f"HTTP {status}: {message}"


def refusal(message: str) -> str:
    return message.split(" is invalid: ", 1)[1] if " is invalid: " in message else message


def first_issue(obj: dict[str, Any], loader_message: str) -> str:
    obj = go_nulls(obj["kind"], obj)
    meta = obj.get("metadata")
    if obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate") and isinstance(meta, dict) and not meta.get("namespace"):
        obj = {**obj, "metadata": {**meta, "namespace": "apps"}}  # what the request's URL gives it
    issues = validate_manifest(obj)
    return str(issues[0]) if issues else refusal(loader_message)


def agree_on_first(ours: str, theirs: str, loader_message: str = "") -> bool:
    if "cannot be handled as" in theirs or "json parse error" in theirs:
        # A value that does not decode: Go's decoder words it its own way (kubesched names the field).
        return "cannot be handled as" in loader_message
    rest = refusal(theirs)
    return rest.startswith(ours) or rest.startswith("[" + ours)


tally: Counter[str] = Counter()
stricter: list[str] = []
messages_differ: list[str] = []

SEEDS = DRA_SEEDS
if os.environ.get("FUZZ_SEEDS"):
    SEEDS = tuple(s for s in SEEDS if s["metadata"]["name"] in os.environ["FUZZ_SEEDS"].split(","))


def _compare(context: Kube, obj: dict[str, Any]) -> None:
    ours, our_message = loader_accepts(obj)
    if ours is None:
        tally["skipped (simulator limit)"] += 1
        return
    theirs, their_message = server_verdict(context, obj)
    tally[f"ours={'accept' if ours else 'refuse'} apiserver={'accept' if theirs else 'refuse'}"] += 1
    if theirs and not ours:
        stricter.append(f"{our_message}  <->  {their_message}")
    if ours and not theirs and CEL_REFUSAL.search(their_message):
        tally["CEL left to devices/"] += 1
        return
    assert theirs or not ours, f"accepted by kubesched, refused by the API server ({their_message}):\n{json.dumps(obj)[:2000]}"
    if not theirs and not ours:
        first = first_issue(obj, our_message)
        # Not compared: values kubesched cuts or shows with other escapes than Go's %q, errors under
        # a map key (Go's order of keys varies), and a namespace the request's URL contradicts.
        comparable = ("more)" not in first and first.isascii() and not MAP_KEY.search(first.split(": ", 1)[0])
                      and "does not match the namespace" not in their_message and not CEL_REFUSAL.search(their_message))
        if comparable and not agree_on_first(first, their_message, our_message):
            messages_differ.append(f"{first}  <->  {refusal(their_message)}")
            tally["first message differs"] += 1


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None, derandomize=os.environ.get("HYPOTHESIS_PROFILE") != "fuzz", database=None)
@given(st.data())
def test_no_dra_object_the_api_server_refuses_is_accepted(context: Kube, data: st.DataObject) -> None:
    obj = data.draw(corpus.mutated(SEEDS))
    try:
        json.dumps(obj, allow_nan=False)
    except ValueError:
        tally["skipped (NaN or Inf: no JSON form, kubectl cannot send it)"] += 1
        return
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in PATHS or obj.get("apiVersion") != "resource.k8s.io/v1":
        tally["skipped (kind or apiVersion mutated)"] += 1
        return
    _compare(context, obj)


@pytest.mark.parametrize("seed", DRA_SEEDS, ids=lambda s: f"{s['kind']}-{s['metadata']['name']}")
def test_seeds_are_accepted_by_both(context: Kube, seed: dict[str, Any]) -> None:
    ours, our_message = loader_accepts(seed)
    theirs, their_message = server_verdict(context, seed)
    assert ours and theirs, (our_message, their_message)


def _claim(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "hand", "namespace": "apps"},
            "spec": {"devices": {"requests": [{"name": "r", **request}]}}}


def _slice(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "hand"},
            "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n", **spec}}


def _device(**device: Any) -> dict[str, Any]:
    return _slice(devices=[{"name": "dev", **device}])


def _policy(value: Any, policy: dict[str, Any]) -> dict[str, Any]:
    return _device(allowMultipleAllocations=True, capacity={"mem": {"value": value, "requestPolicy": policy}})


# The rules random mutation rarely reaches: both verdicts and the first message must agree.
HAND_PICKED = [
    _claim(exactly={"deviceClassName": "c", "count": 0}), _claim(exactly={"deviceClassName": "c", "count": -3}),
    _claim(exactly={"deviceClassName": "c", "allocationMode": "All", "count": 2}),
    _claim(exactly={"deviceClassName": "c", "allocationMode": "Some"}),
    _claim(exactly={"deviceClassName": "C_bad"}), _claim(exactly={"deviceClassName": ""}),
    _claim(exactly={"deviceClassName": "c"}, firstAvailable=[{"name": "s", "deviceClassName": "c"}]), _claim(),
    _claim(firstAvailable=[{"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]),
    _claim(firstAvailable=[{"name": "s", "deviceClassName": "c"}, {"name": "s", "deviceClassName": "c"}]),
    _claim(firstAvailable=[{"name": "s", "deviceClassName": "Bad_Class"}]),
    _claim(firstAvailable=[{"name": "s", "deviceClassName": ""}]),
    _claim(exactly={"deviceClassName": "c", "adminAccess": True}),
    _claim(exactly={"deviceClassName": "c", "selectors": [{}]}),
    _claim(exactly={"deviceClassName": "c", "selectors": [{"cel": {"expression": "x" * 10241}}]}),
    _claim(exactly={"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
    _claim(exactly={"deviceClassName": "c", "tolerations": [{"key": "k", "operator": "Maybe"}]}),
    _claim(exactly={"deviceClassName": "c", "tolerations": [{"key": "k", "effect": "PreferNoSchedule"}]}),
    _claim(exactly={"deviceClassName": "c", "tolerations": [{"key": "bad key", "value": "v"}]}),
    _claim(exactly={"deviceClassName": "c", "capacity": {"requests": {"mem": "1Gx"}}}),
    {**_claim(exactly={"deviceClassName": "c"}), "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}],
        "constraints": [{"requests": ["r", "nope"], "matchAttribute": "example.com/numa"}, {"requests": ["r"]},
                        {"matchAttribute": "numa"}, {"distinctAttribute": "a/b/c"}]}}},
    {**_claim(exactly={"deviceClassName": "c"}), "spec": {"devices": {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}],
        "config": [{"requests": ["r/x"], "opaque": {"driver": "d.example.com", "parameters": []}}, {"requests": ["r"]}]}}},
    _device(attributes={"a": {"int": 1, "bool": True}}), _device(attributes={"a": {}}),
    _device(attributes={"a": {"version": "1.2"}}), _device(attributes={"a": {"string": "x" * 65}}),
    _device(attributes={"9bad": {"int": 1}}), _device(attributes={"/a": {"int": 1}}), _device(attributes={"Bad_Domain/a": {"int": 1}}),
    _device(attributes={f"a{i}": {"int": i} for i in range(33)}),
    _device(capacity={"mem": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}}),
    _policy("8Gi", {"default": "1Gi", "validValues": ["2Gi", "1Gi"]}), _policy("8Gi", {"validValues": ["1Gi"]}),
    _policy("8Gi", {"default": "3Gi", "validValues": ["1Gi", "16Gi"]}),
    _policy("8Gi", {"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}}),
    _policy("8Gi", {"default": "1Gi", "validRange": {}}), _policy("8Gi", {"default": "1Gi", "validRange": {"min": "16Gi"}}),
    _policy("8Gi", {"default": "1Gi", "validRange": {"min": "2Gi", "max": "1Gi"}}),
    _policy("8Gi", {"default": "3Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}),
    _policy("8Gi", {"default": "1Gi", "validRange": {"min": "1Gi", "step": "0"}}),
    _policy("8", {"default": "0.5", "validRange": {"min": "0.5", "step": "0.25"}}),
    _policy("8", {"default": "0.5", "validRange": {"min": "0.0005", "step": "0.25"}}),
    _device(taints=[{"key": "k", "effect": "Sometimes"}]), _device(taints=[{"key": "", "effect": "NoSchedule"}]),
    _device(taints=[{"key": "k"}]), _device(taints=[{"key": "k", "effect": "None"}] * 17),
    _device(bindingConditions=["a"]), _device(bindingConditions=["a"], bindingFailureConditions=["a"]),
    _device(bindingConditions=["a", "b", "c", "d", "e"], bindingFailureConditions=["f"]),
    _device(nodeName="n"), _device(consumesCounters=[{"counterSet": "s"}]),
    _device(consumesCounters=[{"counterSet": "s", "counters": {"m": {"value": "1"}}}] * 2),
    _slice(nodeName=None, allNodes=True, devices=[{"name": "d"}]), _slice(nodeName=""), _slice(allNodes=False),
    _slice(nodeName=None), _slice(allNodes=True), _slice(perDeviceNodeSelection=False),
    _slice(nodeName=None, perDeviceNodeSelection=True, devices=[{"name": "d"}]),
    _slice(nodeName=None, perDeviceNodeSelection=True, devices=[{"name": "d", "nodeName": "n", "allNodes": True}]),
    _slice(nodeName=None, nodeSelector={"nodeSelectorTerms": [{}, {}]}),
    _slice(devices=[], sharedCounters=[]), _slice(devices=[{"name": f"d{i}"} for i in range(129)]),
    _slice(devices=[{"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]} for i in range(65)]),
    _slice(pool={"name": "a//b", "resourceSliceCount": 0, "generation": -1}), _slice(driver="Bad_Driver"),
    _slice(sharedCounters=[{"name": "s"}]), _slice(sharedCounters=[{"name": "s", "counters": {"Bad": {"value": "1"}}}]),
    _slice(sharedCounters=[{"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)]),
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "Bad_Name"}, "spec": {}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
     "spec": {"config": [{"opaque": {"driver": "", "parameters": {"a": 1}}}, {}], "extendedResourceName": "gpu"}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "apps"},
     "spec": {"metadata": {"name": "x", "namespace": "y"},
              "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}},
]


@pytest.mark.parametrize("obj", HAND_PICKED, ids=lambda obj: json.dumps(obj["spec"])[:90])
def test_hand_picked_edges_agree(context: Kube, obj: dict[str, Any]) -> None:
    ours, our_message = loader_accepts(obj)
    theirs, their_message = server_verdict(context, obj)
    assert ours == theirs, f"loader: {ours} {our_message!r}; API server: {theirs} {their_message!r}"
    if not ours:
        first = first_issue(obj, our_message)
        if "more)" not in first:
            assert agree_on_first(first, their_message, our_message), f"{first!r} <-> {refusal(their_message)!r}"


def test_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a check beyond the bound: the tallies above, printed with -s."""
    with capsys.disabled():
        print("\nDRA objects vs kube-apiserver:", dict(tally))
        print(f"  stricter than the API server: {len(stricter)}")
        for line in stricter[:20]:
            print("  stricter:", line[:400])
        for line in messages_differ[:20]:
            print("  first message differs:", line[:400])
    total = sum(v for k, v in tally.items() if k.startswith("ours="))
    if total:
        assert len(stricter) <= max(3, total // 20), f"kubesched refused {len(stricter)} of {total} objects the API server accepts"
