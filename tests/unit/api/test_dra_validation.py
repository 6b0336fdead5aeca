"""resource.k8s.io/v1 validation, rule by rule, with the messages kube-apiserver v1.37.2 gives (each
checked against the real API server by integration/api/test_dra_vs_apiserver.py), the API server's
defaulting, and the order it reports errors in (handwritten first, then the declarative rules')."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from kubesched.api.dra import ResourceClaim, ResourceSlice
from kubesched.api.dra.defaults import default_claim, default_slice
from kubesched.api.validation import validate_manifest
from kubesched.api.validation.dra import admin_access_issue
from kubesched.devices.cel import validate_selector
from unit.fuzz.dracorpus import DRA_SEEDS

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
             "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an "
         "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
EVERY_TYPE = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"
NOT_A_REQUEST = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
WHERE = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
PER_DEVICE = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true "
              "in the ResourceSlice spec")


def claim(**request: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "apps"},
            "spec": {"devices": {"requests": [{"name": "r", **request}]}}}


def devices(**claim_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "apps"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}], **claim_spec}}}


def exactly(**fields: Any) -> dict[str, Any]:
    return claim(exactly={"deviceClassName": "c", **fields})


def slice_(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n", **spec}}


def device(**fields: Any) -> dict[str, Any]:
    return slice_(devices=[{"name": "dev", **fields}])


def policy(value: Any, request_policy: dict[str, Any]) -> dict[str, Any]:
    return device(allowMultipleAllocations=True, capacity={"mem": {"value": value, "requestPolicy": request_policy}})


def class_(name: str = "c", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


R0 = "spec.devices.requests[0]"
D0 = "spec.devices[0]"
POLICY = f"{D0}.capacity[mem].requestPolicy"

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    # requests
    ("a count of 0 is defaulted to 1", exactly(count=0), []),
    ("a negative count", exactly(count=-3), [f"{R0}.exactly.count: Invalid value: -3: must be greater than zero"]),
    ("a count with All", exactly(allocationMode="All", count=2),
     [f"{R0}.exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]),
    ("an unknown mode", exactly(allocationMode="Some"),
     [f'{R0}.exactly.allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"']),
    ("a bad class name", exactly(deviceClassName="C_bad"), [f'{R0}.exactly.deviceClassName: Invalid value: "C_bad": {SUBDOMAIN}']),
    ("no class", exactly(deviceClassName=""), [f"{R0}.exactly.deviceClassName: Required value"]),
    ("both kinds of request", claim(exactly={"deviceClassName": "c"}, firstAvailable=[{"name": "s", "deviceClassName": "c"}]),
     [f"{R0}: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"]),
    ("neither kind of request", claim(), [f"{R0}: Required value: exactly one of `exactly` or `firstAvailable` is required"]),
    ("nine subrequests", claim(firstAvailable=[{"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]),
     [f"{R0}.firstAvailable: Too many: 9: must have at most 8 items"]),
    ("a repeated subrequest: the whole item, defaulted", claim(firstAvailable=[{"name": "s", "deviceClassName": "c"}] * 2),
     [f'{R0}.firstAvailable[1]: Duplicate value: {{"name":"s","deviceClassName":"c","allocationMode":"ExactCount","count":1}}']),
    ("a subrequest without a class", claim(firstAvailable=[{"name": "s", "deviceClassName": ""}]),
     [f"{R0}.firstAvailable[0].deviceClassName: Required value"]),
    ("a bad request name", claim(name="R", exactly={"deviceClassName": "c"}), [f'{R0}.name: Invalid value: "R": {LABEL}']),
    ("thirty-three requests", devices(requests=[{"name": f"r{i}", "exactly": {"deviceClassName": "c"}} for i in range(33)]),
     ["spec.devices.requests: Too many: 33: must have at most 32 items"]),
    # selectors and tolerations
    ("a selector without cel", exactly(selectors=[{}]), [f"{R0}.exactly.selectors[0].cel: Required value"]),
    ("a CEL expression over 10 KiB", exactly(selectors=[{"cel": {"expression": "x" * 10241}}]),
     [f"{R0}.exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"]),
    ("Exists with a value", exactly(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     [f'{R0}.exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`']),
    ("an unknown operator", exactly(tolerations=[{"key": "k", "operator": "Maybe"}]),
     [f'{R0}.exactly.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"']),
    ("a node taint's effect", exactly(tolerations=[{"key": "k", "effect": "PreferNoSchedule"}]),
     [f'{R0}.exactly.tolerations[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"']),
    ("a bad quantity fails decoding", exactly(capacity={"requests": {"mem": "1Gx"}}),
     [f"{R0}.exactly.capacity.requests[mem]: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]),
    # constraints and config
    ("constraints", devices(constraints=[{"requests": ["r", "nope"], "matchAttribute": "example.com/numa"}, {"requests": ["r"]},
                                         {"matchAttribute": "numa"}]),
     [f'spec.devices.constraints[0].requests[1]: Invalid value: "nope": {NOT_A_REQUEST}',
      'spec.devices.constraints[1]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple '
      "fields are set",
      'spec.devices.constraints[2].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain and a name separated '
      "by a slash"]),
    ("config", devices(config=[{"requests": ["r/x"], "opaque": {"driver": "d.example.com", "parameters": []}}, {"requests": ["r"]}]),
     [f'spec.devices.config[0].requests[0]: Invalid value: "r/x": {NOT_A_REQUEST}',
      'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object',
      "spec.devices.config[1].opaque: Required value"]),
    # classes
    ("a class's name comes after its spec", class_("Bad_Name", config=[{}]),
     ["spec.config[0].opaque: Required value", f'metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN}']),
    ("a class's driver is the declarative rule's", class_(config=[{"opaque": {"driver": "", "parameters": {"a": 1}}}, {}]),
     ["spec.config[1].opaque: Required value", "spec.config[0].opaque.driver: Required value"]),
    ("an upper-case driver in configuration", class_(config=[{"opaque": {"driver": "D_", "parameters": {"a": 1}}}]),
     ['spec.config[0].opaque.driver: Invalid value: "D_": an RFC 1123 subdomain must consist of alphanumeric characters, \'-\' or '
      "'.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("configuration over 10 KiB", class_(config=[{"opaque": {"driver": "d", "parameters": {"a": "x" * 10240}}}]),
     ["spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"]),
    # templates
    ("a template's metadata holds labels and annotations only",
     {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "apps"},
      "spec": {"metadata": {"name": "x", "namespace": "y"}, "spec": {"devices": {"requests": []}}}},
     ["spec.metadata.name: Forbidden: cannot be set", "spec.metadata.namespace: Forbidden: cannot be set"]),
    # slices: where the devices are
    ("no node", slice_(nodeName=None), [f"spec: Required value: {WHERE}"]),
    ("an empty node name", slice_(nodeName=""),
     ['spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string', f"spec: Required value: {WHERE}"]),
    ("two places", slice_(allNodes=True), [f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {WHERE}, but multiple fields are set']),
    ("allNodes false", slice_(allNodes=False), ["spec.allNodes: Invalid value: false: must be either unset or set to true"]),
    ("two selector terms", slice_(nodeName=None, nodeSelector={"nodeSelectorTerms": [{}, {}]}),
     ['spec.nodeSelector.nodeSelectorTerms: Invalid value: [{"MatchExpressions":null,"MatchFields":null},'
      '{"MatchExpressions":null,"MatchFields":null}]: must have exactly one node selector term']),
    ("per device, none chosen", slice_(nodeName=None, perDeviceNodeSelection=True, devices=[{"name": "d"}]),
     [f"{D0}: Required value: {PER_DEVICE}"]),
    ("per device, two chosen",
     slice_(nodeName=None, perDeviceNodeSelection=True, devices=[{"name": "d", "nodeName": "n", "allNodes": True}]),
     [f'{D0}: Invalid value: "{{`nodeName`, `allNodes`}}": {PER_DEVICE}']),
    ("a device's node without perDeviceNodeSelection", device(nodeName="n"),
     [f"{D0}: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to "
      "true in the ResourceSlice spec"]),
    ("counters and devices in one slice", slice_(devices=[], sharedCounters=[]),
     ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']),
    ("129 devices", slice_(devices=[{"name": f"d{i}"} for i in range(129)]), ["spec.devices: Too many: 129: must have at most 128 items"]),
    ("65 tainted devices", slice_(devices=[{"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]} for i in range(65)]),
     ["spec.devices: Too many: 65: must have at most 64 items"]),
    ("a repeated device", slice_(devices=[{"name": "d"}, {"name": "d"}]), ['spec.devices[1]: Duplicate value: "d"']),
    ("the pool", slice_(pool={"name": "a//b", "resourceSliceCount": 0, "generation": -1}),
     [f'spec.pool.name: Invalid value: "": {SUBDOMAIN}', "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
      "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"]),
    ("a bad driver", slice_(driver="Bad_Driver"), [f'spec.driver: Invalid value: "Bad_Driver": {SUBDOMAIN}']),
    # attributes and capacity
    ("two values", device(attributes={"a": {"int": 1, "bool": True}}),
     [f'{D0}.attributes[a]: Invalid value: "{{int, bool}}": must specify exactly one of: {EVERY_TYPE}']),
    ("no value", device(attributes={"a": {}}), [f'{D0}.attributes[a]: Invalid value: "": must specify one of: {EVERY_TYPE}']),
    ("list values are dropped (DRAListTypeAttributes is off)", device(attributes={"a": {"ints": [1]}}),
     [f'{D0}.attributes[a]: Invalid value: "": must specify one of: {EVERY_TYPE}']),
    ("not semver", device(attributes={"a": {"version": "1.2"}}),
     [f'{D0}.attributes[a].version: Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0']),
    ("a long string", device(attributes={"a": {"string": "x" * 65}}),
     [f"{D0}.attributes[a].string: Too long: may not be more than 64 bytes"]),
    ("not a C identifier", device(attributes={"9bad": {"int": 1}}),
     [f"{D0}.attributes: Invalid value: \"9bad\": a valid C identifier must start with alphabetic character or '_', followed by a "
      "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
      "'[A-Za-z_][A-Za-z0-9_]*')"]),
    ("an empty domain", device(attributes={"/a": {"int": 1}}), [f'{D0}.attributes: Invalid value: "": the domain must not be empty']),
    ("33 attributes", device(attributes={f"a{i}": {"int": i} for i in range(33)}),
     [f"{D0}: Invalid value: 33: the total number of attributes and capacities must not exceed 32"]),
    ("a policy on a device for one", device(capacity={"mem": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}}),
     [f"{POLICY}: Forbidden: allowMultipleAllocations must be true"]),
    ("unsorted options", policy("8Gi", {"default": "1Gi", "validValues": ["2Gi", "1Gi"]}),
     [f'{POLICY}.validValues[1]: Invalid value: "1Gi": values must be sorted in ascending order']),
    ("options without a default", policy("8Gi", {"validValues": ["1Gi"]}),
     [f"{POLICY}.default: Required value: required when validValues is defined"]),
    ("an option beyond capacity", policy("8Gi", {"default": "3Gi", "validValues": ["1Gi", "16Gi"]}),
     [f'{POLICY}.validValues[1]: Invalid value: "16Gi": option is larger than capacity value: 8Gi',
      f'{POLICY}.validValues: Invalid value: "3Gi": default value is not valid according to the requestPolicy']),
    ("options and a range", policy("8Gi", {"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}}),
     [f'{POLICY}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time']),
    ("a range without min", policy("8Gi", {"default": "1Gi", "validRange": {}}),
     [f"{POLICY}.validRange.min: Required value: required when validRange is defined"]),
    ("min and max crossed", policy("8Gi", {"default": "1Gi", "validRange": {"min": "2Gi", "max": "1Gi"}}),
     [f'{POLICY}.validRange.default: Invalid value: "1Gi": default is less than min: 2Gi',
      f'{POLICY}.validRange.max: Invalid value: "2Gi": min is larger than max: 1Gi']),
    ("a default on the step", policy("8Gi", {"default": "3Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}), []),
    ("a default off the step", policy("8Gi", {"default": "2Gi", "validRange": {"min": "1Gi", "step": "2Gi"}}),
     [f'{POLICY}.validRange.step: Invalid value: "2Gi": value is not a multiple of a given step (2Gi) from (1Gi)']),
    ("a zero step", policy("8Gi", {"default": "1Gi", "validRange": {"min": "1Gi", "step": "0"}}),
     [f'{POLICY}.validRange.step: Invalid value: "0": must be greater than zero']),
    ("fractions are whole units (DRAFractionalCapacityRange is off)",
     policy("8", {"default": "0.5", "validRange": {"min": "0.0005", "step": "0.25"}}),
     []),
    # taints, counters, binding conditions
    ("an unknown effect", device(taints=[{"key": "k", "effect": "Sometimes"}]),
     [f'{D0}.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"']),
    ("no effect", device(taints=[{"key": "k"}]), [f"{D0}.taints[0].effect: Required value"]),
    ("seventeen taints", device(taints=[{"key": "k", "effect": "None"}] * 17), [f"{D0}.taints: Too many: 17: must have at most 16 items"]),
    ("conditions without failure conditions", device(bindingConditions=["a"]),
     [f"{D0}.bindingFailureConditions: Invalid value: null: bindingFailureConditions are required to use bindingConditions"]),
    ("overlapping conditions", device(bindingConditions=["a"], bindingFailureConditions=["a"]),
     [f'{D0}.bindingFailureConditions[0]: Invalid value: "a": bindingFailureConditions must not overlap with bindingConditions']),
    ("five conditions", device(bindingConditions=["a", "b", "c", "d", "e"], bindingFailureConditions=["f"]),
     [f"{D0}.bindingConditions: Too many: 5: must have at most 4 items"]),
    ("a consumption without counters", device(consumesCounters=[{"counterSet": "s"}]),
     [f"{D0}.consumesCounters[0].counters: Required value"]),
    ("a counter set without counters", slice_(sharedCounters=[{"name": "s"}]), ["spec.sharedCounters[0].counters: Required value"]),
    ("a bad counter name", slice_(sharedCounters=[{"name": "s", "counters": {"Bad": {"value": "1"}}}]),
     [f'spec.sharedCounters[0].counters: Invalid value: "Bad": {LABEL}']),
    ("a repeated counter set: the whole item", slice_(sharedCounters=[{"name": "s", "counters": {"c": {"value": 8}}}] * 2),
     ['spec.sharedCounters[1]: Duplicate value: {"name":"s","counters":{"c":{"value":"8"}}}']),
    ("nine counter sets", slice_(sharedCounters=[{"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)]),
     ["spec.sharedCounters: Too many: 9: must have at most 8 items"]),
]


@pytest.mark.parametrize(("manifest", "expected"), [(m, e) for _, m, e in CASES], ids=[c[0] for c in CASES])
def test_the_api_servers_rules_and_messages(manifest: dict[str, Any], expected: list[str]) -> None:
    assert [str(issue) for issue in validate_manifest(manifest)] == expected


@pytest.mark.parametrize("seed", DRA_SEEDS, ids=lambda s: s["metadata"]["name"])
def test_the_seeds_are_valid(seed: dict[str, Any]) -> None:
    assert validate_manifest(copy.deepcopy(seed)) == []


def test_declarative_errors_come_after_the_handwritten_ones() -> None:
    manifest = exactly(allocationMode="Some", selectors=[{}])
    assert [issue.path for issue in validate_manifest(manifest)] == [f"{R0}.exactly.selectors[0].cel", f"{R0}.exactly.allocationMode"]


def test_a_claim_is_defaulted_as_the_api_server_defaults_it() -> None:
    manifest = exactly(tolerations=[{"key": "k"}])
    subrequest = {"name": "a", "deviceClassName": "c", "allocationMode": "All"}
    manifest["spec"]["devices"]["requests"].append({"name": "s", "firstAvailable": [subrequest]})
    obj = msgspec.convert(manifest, ResourceClaim)
    default_claim(obj)
    first = obj.spec.devices.requests[0].exactly
    assert first is not None and (first.allocation_mode, first.count, first.tolerations[0].operator) == ("ExactCount", 1, "Equal")
    sub = obj.spec.devices.requests[1].first_available[0]
    assert (sub.allocation_mode, sub.count) == ("All", 0)


def test_a_slice_taint_gets_its_time_added() -> None:
    taints = [{"key": "k", "effect": "NoSchedule"}, {"key": "j", "effect": "None", "timeAdded": "2026-01-01T00:00:00Z"}]
    rs = msgspec.convert(device(taints=taints), ResourceSlice)
    default_slice(rs, "1970-01-01T00:01:00Z")
    assert rs.spec.devices is not None
    assert [t.time_added for t in rs.spec.devices[0].taints] == ["1970-01-01T00:01:00Z", "2026-01-01T00:00:00Z"]


def test_admin_access_needs_the_namespace_label() -> None:
    obj = msgspec.convert(exactly(adminAccess=True), ResourceClaim)
    issue = admin_access_issue(obj.spec, {})
    assert issue is not None and str(issue) == (
        f"{R0}.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
        "containing namespace")
    assert admin_access_issue(obj.spec, {"resource.kubernetes.io/admin-access": "true"}) is None
    assert admin_access_issue(msgspec.convert(exactly(adminAccess=False), ResourceClaim).spec, {}) is None


def test_an_allocated_claims_status_is_checked_as_its_status_update_was() -> None:
    manifest = exactly()
    manifest["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}],
                          "devices": [{"driver": "d.example.com", "pool": "p", "device": "x"}]}
    assert [str(i) for i in validate_manifest(manifest)] == [
        'status.devices[0]: Invalid value: "d.example.com/p/x": must be an allocated device in the claim',
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
    ]
    manifest["status"]["allocation"] = {"devices": {"results": [{"request": "r", "driver": "d.example.com", "pool": "p", "device": "x"}]}}
    assert validate_manifest(manifest) == []
    manifest["status"]["allocation"]["devices"]["results"][0]["request"] = "other"
    assert [str(i) for i in validate_manifest(manifest)] == [
        f'status.allocation.devices.results[0].request: Invalid value: "other": {NOT_A_REQUEST}']


# --- selectors compiled by the CEL environment the caller hands in (the simulator's: devices.cel) -------

COSTLY = ("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
          "device.attributes[e].all(j, true))))")
SYNTAX = ("compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', "
          "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | device.driver ==\n | ................^")


def cel(*expressions: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": e}} for e in expressions]


CEL_CASES = [
    ("a class's selector that does not parse", class_(selectors=cel("device.driver ==")),
     [f'spec.selectors[0].cel.expression: Invalid value: "device.driver ==": {SYNTAX}']),
    ("a selector that is no bool", exactly(selectors=cel('device.driver == "a"', "1")),
     [f'{R0}.exactly.selectors[1].cel.expression: Invalid value: "1": must evaluate to bool or the unknown type, not int']),
    ("an unknown variable", exactly(selectors=cel("nodes == 1")),
     [f"{R0}.exactly.selectors[0].cel.expression: Invalid value: \"nodes == 1\": compilation failed: ERROR: <input>:1:1: "
      "undeclared reference to 'nodes' (in container '')\n | nodes == 1\n | ^"]),
    ("a type error", exactly(selectors=cel("device.driver > 1")),
     [f"{R0}.exactly.selectors[0].cel.expression: Invalid value: \"device.driver > 1\": compilation failed: ERROR: <input>:1:15: "
      "found no matching overload for '_>_' applied to '(string, int)'\n | device.driver > 1\n | ..............^"]),
    ("a template's subrequest over the cost limit",
     {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "apps"},
      "spec": {"spec": claim(firstAvailable=[{"name": "s", "deviceClassName": "c", "selectors": cel(COSTLY)}])["spec"]}},
     [f"spec.{R0}.firstAvailable[0].selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"]),
    ("an attribute of a domain no driver has compiles", exactly(selectors=cel('device.attributes["no.such.io"].x == 1')), []),
]


@pytest.mark.parametrize(("manifest", "expected"), [(m, e) for _, m, e in CEL_CASES], ids=[c[0] for c in CEL_CASES])
def test_selectors_are_compiled_by_the_check_handed_in(manifest: dict[str, Any], expected: list[str]) -> None:
    assert [str(issue) for issue in validate_manifest(manifest, check_selector=validate_selector)] == expected


def test_compile_errors_come_in_kubes_order() -> None:
    # Handwritten, in validateExactDeviceRequest's order: the class name, the selectors; then the
    # declarative rules (allocationMode).
    manifest = exactly(deviceClassName="Bad_Class", allocationMode="Some", selectors=cel("nodes == 1"))
    assert [issue.path for issue in validate_manifest(manifest, check_selector=validate_selector)] == [
        f"{R0}.exactly.deviceClassName", f"{R0}.exactly.selectors[0].cel.expression", f"{R0}.exactly.allocationMode"]
    # A subrequest's class name is the declarative validation's: after the selectors.
    manifest = claim(firstAvailable=[{"name": "s", "deviceClassName": "Bad_Class", "selectors": cel("1")}])
    assert [issue.path for issue in validate_manifest(manifest, check_selector=validate_selector)] == [
        f"{R0}.firstAvailable[0].selectors[0].cel.expression", f"{R0}.firstAvailable[0].deviceClassName"]


def test_without_a_cel_environment_an_expression_is_checked_for_presence_and_length_only() -> None:
    assert validate_manifest(exactly(selectors=cel("1", "nodes == 1", COSTLY))) == []
    assert [i.path for i in validate_manifest(exactly(selectors=cel("")))] == [f"{R0}.exactly.selectors[0].cel.expression"]
