"""resource.k8s.io/v1 objects through kubesched's loader and the real kube-apiserver v1.37.2, input by
input: valid seeds of the four kinds (tests/unit/fuzz/dracorpus.py) with one to three fields
replaced, retyped, deleted, added or duplicated (corpus.mutated), or with a selector's CEL
expression replaced (cel_mutated: bad syntax, unknown names, type errors, results other than
bool, domains no driver has, the cost limit), sent as server-side dry-run creates with strict
field validation. The bar: no object the API server refuses is accepted by kubesched; where both
refuse, the first message agrees (kubesched's, after `is invalid: `, starts the API server's).
Cases where kubesched is stricter are counted and printed with -s.

Known differences, on purpose or left to others:
- CEL compile errors kubesched words otherwise (docs/compatibility.md, DRA selectors): an
  attribute's type, which kube's checker calls google.protobuf.Any ("any" in a signature) and
  kubesched's dyn; a non-bool operand of && or ||; a method's signature in "found no matching
  overload" (kube: `kubernetes.Quantity.(int)`). The verdicts agree; the first message is not
  compared, and the case is counted under its reason (KNOWN_CEL_WORDING);
- kubesched cuts values past 100 characters in messages ("...(N more)"): the message is not
  compared then;
- Go iterates maps in random order, so with errors under two keys of one map the API server's
  first message varies: compared only when the first messages' fields are not map entries;
- non-ASCII values: kubesched's messages do not escape them as Go's %q does (field.shown).
"""

from __future__ import annotations

import copy
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
from kubesched.backends.sim.draadmission import check_selector
from unit.fuzz import corpus
from unit.fuzz.budget import examples
from unit.fuzz.dracorpus import DRA_SEEDS

PATHS = {
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}
# CEL compile errors kubesched words otherwise, by what kube's message says, with the reason.
KNOWN_CEL_WORDING = (
    (re.compile(r"google\.protobuf\.Any|\(any[,)]|, any[,)]"), "CEL: kube names an attribute's type google.protobuf.Any"),
    (re.compile(r"expected type 'bool' but found"), "CEL: kube's words for a non-bool operand of && or ||"),
    (re.compile(r"applied to '[^'(]+\.\("), "CEL: kube's words for a method's signature"),
)
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
    issues = validate_manifest(obj, check_selector=check_selector)
    return str(issues[0]) if issues else refusal(loader_message)


def agree_on_first(ours: str, theirs: str, loader_message: str = "") -> bool:
    if "cannot be handled as" in theirs or "json parse error" in theirs:
        # A value that does not decode: Go's decoder words it its own way (kubesched names the field).
        return "cannot be handled as" in loader_message
    rest = refusal(theirs)
    return rest.startswith(ours) or rest.startswith("[" + ours)


# Selector expressions for the API server's CEL environment to judge (cel_mutated): bad syntax,
# unknown names and fields, type errors, results other than bool, attributes and capacities of
# domains no driver publishes (valid), quantity and semver mistakes, and the cost limit.
COSTLY = "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, device.attributes[e].all(j, true))))"
CEL_EXPRESSIONS = (
    "1 +", "device.driver ==", "device.attributes['gpu.example.com'].model == 'a100", ")(", "device..driver", '"unterminated',
    "a ? b", "1", '"s"', "1.5", "null", "[true]", "device.driver", 'device.capacity["gpu.example.com"].memory',
    'quantity("1Gi")', 'semver("1.0.0")', "device.attributes[\"gpu.example.com\"]", 'device.attributes["gpu.example.com"].?model',
    "device.nothing", "foo == 1", "nodes.exists(n, true)", "device.attributes.gpu", "device.driver > 1", "device.driver + 1 == 2",
    'device.capacity["gpu.example.com"].memory > 1', "quantity(1)", "semver(1)", 'device.allowMultipleAllocations == "yes"',
    "isQuantity(1)", 'device.capacity["gpu.example.com"].memory.isGreaterThan(1)', "true && 1",
    'device.attributes["gpu.example.com"].ecc ? true : 1',
    'device.attributes["unknown.example.org"].whatever == 1', 'device.capacity["other.io"].x.isLessThan(quantity("1"))',
    'device.attributes["gpu.example.com"].cores + 1 > 8', 'device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")',
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.0.0"))',
    'cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.cores > 8)',
    'device.attributes["gpu.example.com"].model in ["a100", "h100"]', "size(device.driver) > 3",
    "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, true)))",
    COSTLY,
    'device.attributes.exists(d, device.attributes[d].exists(k, device.attributes[d][k] == "x"))',
)


@st.composite
def cel_mutated(draw: st.DrawFn, seeds: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """A seed with one selector's expression replaced (one or two of CEL_EXPRESSIONS, joined by
    && or ||); a template, which has no selector, gets one."""
    obj = copy.deepcopy(draw(st.sampled_from([s for s in seeds if s["kind"] != "ResourceSlice"])))
    if obj["kind"] == "ResourceClaimTemplate":
        obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "true"}}]
    *path, last = draw(st.sampled_from([p for p in corpus.paths(obj) if p[-2:] == ("cel", "expression")]))
    expression = draw(st.sampled_from(CEL_EXPRESSIONS))
    if draw(st.integers(0, 3)) == 0:
        expression = f"({expression}) {draw(st.sampled_from(('&&', '||')))} ({draw(st.sampled_from(CEL_EXPRESSIONS))})"
    holder = obj
    for step in path:
        holder = holder[step]
    holder[last] = expression
    return obj


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
    assert theirs or not ours, f"accepted by kubesched, refused by the API server ({their_message}):\n{json.dumps(obj)[:2000]}"
    if not theirs and not ours:
        first = first_issue(obj, our_message)
        # Not compared: values kubesched cuts or shows with other escapes than Go's %q, errors under
        # a map key (Go's order of keys varies), and a namespace the request's URL contradicts.
        comparable = ("more)" not in first and first.isascii() and not MAP_KEY.search(first.split(": ", 1)[0])
                      and "does not match the namespace" not in their_message)
        known = next((reason for pattern, reason in KNOWN_CEL_WORDING if pattern.search(refusal(their_message))), None)
        if comparable and known:
            tally[known] += 1
            comparable = False
        if comparable and not agree_on_first(first, their_message, our_message):
            messages_differ.append(f"{first}  <->  {refusal(their_message)}")
            tally["first message differs"] += 1


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          deadline=None, derandomize=os.environ.get("HYPOTHESIS_PROFILE") != "fuzz", database=None)
@given(st.data())
def test_no_dra_object_the_api_server_refuses_is_accepted(context: Kube, data: st.DataObject) -> None:
    obj = data.draw(corpus.mutated(SEEDS) if data.draw(st.integers(0, 3)) else cel_mutated(SEEDS))
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
    # CEL: where compile errors come among the others, the cost limit, several errors at once.
    _claim(exactly={"deviceClassName": "Bad_Class", "allocationMode": "Some", "selectors": [{"cel": {"expression": "nodes == 1"}}]}),
    _claim(firstAvailable=[{"name": "s", "deviceClassName": "Bad_Class", "selectors": [{"cel": {"expression": "1"}}]}]),
    _claim(exactly={"deviceClassName": "c", "selectors": [{"cel": {"expression": e}} for e in ("true", "1 +", "device.driver > 1")]}),
    _claim(exactly={"deviceClassName": "c", "selectors": [{"cel": {"expression": COSTLY}}]}),
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
     "spec": {"selectors": [{"cel": {"expression": "device.driver"}}, {"cel": {"expression": "a ? b"}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "apps"},
     "spec": {"spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [
         {"name": "s", "deviceClassName": "c", "selectors": [{"cel": {"expression": "nodes.exists(n, true)"}}]}]}]}}}},
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
    assert not messages_differ, f"{len(messages_differ)} first messages differ from the API server's"
    if total:
        assert len(stricter) <= max(3, total // 20), f"kubesched refused {len(stricter)} of {total} objects the API server accepts"
