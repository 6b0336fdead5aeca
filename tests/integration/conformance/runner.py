"""Runs a generated scenario on a real apiserver through one scheduler, pod by pod, and records what
a user sees of each: the node it lands on, the first FailedScheduling condition, the nomination,
the pods preempted for it, the PodDisruptionBudgets' status when it was created; and, from the
scheduler's log, the nodes feasible in the cycle that
placed it with their final scores (kube-scheduler's -v=10 "Calculated node's final score for pod",
kubesched's `kubesched.decisions` logger). Both schedulers run all of generate.PROFILES at once."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from builders import make_pdb, make_priority_class
from integration.harness.disruption import mark_ready
from integration.harness.objects import create_ready_node
from integration.harness.rest import ApiError, Kube, collection_path, object_path
from kubesched.observe.decisions import parse_final_scores

from .generate import JSON, PRIORITIES, PROFILES

QUIET = 0.6  # seconds a failed pod must stay failed (and unnominated) to count as settled
STEP_TIMEOUT = 20.0
SETTLE_TIMEOUT = 15.0  # seconds the disruption controller has to count a step's pods
# What of a budget's status is compared: what the disruption controller computes from the pods.
BUDGET_FIELDS = ("expectedPods", "desiredHealthy", "currentHealthy", "disruptionsAllowed")
Budgets = dict[str, dict[str, int]]


@dataclass
class Step:
    pod: str
    node: str | None = None
    message: str | None = None  # the first PodScheduled=False message seen
    reason: str | None = None
    nominated: str | None = None
    preempted: list[str] = field(default_factory=list)
    # The cycle that placed the pod: its feasible nodes ([] when no cycle placed it) and their
    # final scores (None when it did not score: one node was feasible, or the nominated one).
    feasible: list[str] = field(default_factory=list)
    scores: dict[str, int] | None = None
    final: str | None = None  # at the end of the scenario: the node, or the PodScheduled=False message
    # Where the scenario's other pods were when this one was created (None: pending; deleted ones
    # left out): two runs are compared on a pod only from the same state (see queueing_apart).
    cluster: dict[str, str | None] = field(default_factory=dict)
    # The scenario's PodDisruptionBudgets' status then, by name (BUDGET_FIELDS); and, on the last
    # step only, at the end of the scenario.
    budgets: Budgets = field(default_factory=dict)
    budgets_at_end: Budgets | None = None
    # The pod's ResourceClaims when its step ended, by claim_key, as claim_view shows them; and, on
    # the last step only, every claim of the scenario at its end.
    claims: dict[str, JSON] = field(default_factory=dict)
    claims_at_end: dict[str, JSON] | None = None
    # The reference run's claims (all of them, as the API server has them) when the step ended:
    # what a run that breaks a tie the other way is realigned to (see Realign).
    raw_claims: dict[str, JSON] = field(default_factory=dict)


def scheduler_name(side: str, profile: str) -> str:
    return f"{side}-{profile}"


def profiles(side: str) -> list[JSON]:
    return [{"schedulerName": scheduler_name(side, name), **body} for name, body in PROFILES.items()]


def priority_classes() -> list[JSON]:
    """The scenarios' PriorityClasses ("never" is the one with preemptionPolicy Never)."""
    return [
        make_priority_class(f"conformance-{name}", value,
                            preemptionPolicy="Never" if name == "never" else "PreemptLowerPriority")
        for name, value in PRIORITIES.items()
    ]


def ensure_priority_classes(kube: Kube) -> None:
    for pc in priority_classes():
        if kube.get_or_none(f"/apis/scheduling.k8s.io/v1/priorityclasses/{pc['metadata']['name']}") is None:
            kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", pc)


def create_nodes(kube: Kube, scenario: JSON, prefix: str) -> None:
    for n in scenario["nodes"]:
        name = f"{prefix}{n['name']}"
        create_ready_node(
            kube, name, cpu=n["cpu"], memory=n["memory"], pods=n["pods"],
            labels=n["labels"], taints=n["taints"], extra_resources=n.get("extended"),
        )
        if n["unschedulable"]:
            kube.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": True}})
        if n.get("declared"):
            kube.patch(f"/api/v1/nodes/{name}/status", {"status": {"declaredFeatures": n["declared"]}})
    for obj in dra_cluster_manifests(scenario, prefix):
        kube.create(collection_path(obj["kind"]), obj)


def delete_nodes(kube: Kube, scenario: JSON, prefix: str) -> None:
    for n in scenario["nodes"]:
        kube.delete(f"/api/v1/nodes/{prefix}{n['name']}", missing_ok=True)
    for obj in dra_cluster_manifests(scenario, prefix):
        kube.delete(object_path(obj), missing_ok=True)


# --- Dynamic Resource Allocation (devices.py generates it) ------------------------------------------

DRA_API = "resource.k8s.io/v1"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
TEMPLATES = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"  # the resourceclaim controller's annotation
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"  # the scheduler's finalizer on an allocated claim


def dra_cluster_manifests(scenario: JSON, prefix: str) -> list[JSON]:
    """The scenario's DeviceClasses and ResourceSlices. The real runs prefix slices, pools and
    nodes as they prefix nodes (cluster-wide objects of one scenario, shared by its two runs)."""
    dra = scenario.get("dra")
    if not dra:
        return []
    out = [{"apiVersion": DRA_API, "kind": "DeviceClass", "metadata": {"name": c["name"]},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in c["selectors"]]} if c["selectors"] else {}}
           for c in dra["classes"]]
    for s in dra["slices"]:
        where = {k: prefix + v if k == "nodeName" else v for k, v in s["where"].items()}
        spec: JSON = {"driver": s["driver"], "pool": {"name": prefix + s["pool"], "generation": 0, "resourceSliceCount": s["count"]},
                      **where}
        if s["devices"]:
            spec["devices"] = s["devices"]
        if s.get("sharedCounters"):
            spec["sharedCounters"] = s["sharedCounters"]
        out.append({"apiVersion": DRA_API, "kind": "ResourceSlice", "metadata": {"name": prefix + s["name"]}, "spec": spec})
    return out


def dra_namespace_manifests(scenario: JSON, namespace: str) -> list[JSON]:
    """The scenario's ResourceClaimTemplates and ResourceClaims (created before any pod)."""
    dra = scenario.get("dra") or {}
    return [
        *({"apiVersion": DRA_API, "kind": "ResourceClaimTemplate", "metadata": {"name": t["name"], "namespace": namespace},
           "spec": {"spec": t["spec"]}} for t in dra.get("templates", ())),
        *({"apiVersion": DRA_API, "kind": "ResourceClaim", "metadata": {"name": c["name"], "namespace": namespace},
           "spec": c["spec"]} for c in dra.get("claims", ())),
    ]


def claim_key(claim: JSON) -> str:
    """A claim's name, or for one the resourceclaim controller made from a template (its name is
    random), "<pod>:<the pod's entry>"."""
    meta = claim.get("metadata") or {}
    entry = (meta.get("annotations") or {}).get(POD_CLAIM_NAME)
    owner = next((o["name"] for o in meta.get("ownerReferences") or () if o.get("kind") == "Pod"), None)
    return f"{owner}:{entry}" if entry and owner else str(meta.get("name"))


def pod_claim_keys(pod: JSON) -> list[str]:
    """The claim_keys of a scenario pod's spec.resourceClaims."""
    return [e["resourceClaimName"] if e.get("resourceClaimName") else f"{pod['name']}:{e['name']}"
            for e in pod["spec"].get("resourceClaims", ())]


def _set(value: Any) -> bool:
    return value is not None and value != [] and value != {}


def claim_view(claim: JSON, prefix: str) -> JSON:
    """What is compared of a claim: its allocation (each result in order, a shareID only as being
    there: it is a random UID; the node selector; configuration), the pods it is reserved for, by
    name, and its finalizers; node and pool names without the run's prefix, absent and empty
    fields alike left out."""
    status = claim.get("status") or {}
    view: JSON = {"reservedFor": [r.get("name") for r in status.get("reservedFor") or ()]}
    allocation = status.get("allocation")
    if allocation:
        devices = allocation.get("devices") or {}
        results = []
        for result in devices.get("results") or ():
            shown = {k: v for k, v in result.items() if _set(v)}
            shown["pool"] = str(shown.get("pool", "")).removeprefix(prefix)
            if "shareID" in shown:
                shown["shareID"] = "(set)"
            results.append(shown)
        view["allocation"] = {"results": results}
        if _set(devices.get("config")):
            view["allocation"]["config"] = devices["config"]
        if allocation.get("nodeSelector"):
            view["allocation"]["nodeSelector"] = json.loads(_unprefix(json.dumps(allocation["nodeSelector"]), prefix))
    finalizers = (claim.get("metadata") or {}).get("finalizers")
    if finalizers:
        view["finalizers"] = sorted(finalizers)
    return view


def _claims(kube: Kube, namespace: str) -> dict[str, JSON]:
    """The namespace's claims by claim_key (generated claims of pods deleted since left out)."""
    pods = {p["metadata"]["uid"] for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")}
    out = {}
    for claim in kube.list(CLAIMS.format(ns=namespace)):
        owners = [o["uid"] for o in claim["metadata"].get("ownerReferences") or () if o.get("kind") == "Pod"]
        if owners and owners[0] not in pods:
            continue
        out[claim_key(claim)] = claim
    return out


def _clear_claims(kube: Kube, namespace: str) -> None:
    """Deletes the namespace's claims and templates; the resourceclaim controller would take
    allocated claims' finalizer off once their pods are gone, this does not wait for it."""
    for path in (CLAIMS, TEMPLATES):
        kube.request("DELETE", path.format(ns=namespace), {"apiVersion": "v1", "kind": "DeleteOptions"})
    deadline = time.monotonic() + 20
    while (left := kube.list(CLAIMS.format(ns=namespace))) and time.monotonic() < deadline:
        for claim in left:
            if claim["metadata"].get("finalizers"):
                kube.patch(f"{CLAIMS.format(ns=namespace)}/{claim['metadata']['name']}", {"metadata": {"finalizers": None}})
        time.sleep(0.05)


def pod_manifest(pod: JSON, namespace: str, scheduler: str, prefix: str) -> JSON:
    """A scenario pod as an object: bound ones keep their (prefixed) node, pending ones name
    `scheduler`; priority classes get the scenarios' prefix."""
    spec = json.loads(json.dumps(pod["spec"]))
    if "nodeName" in spec:
        spec["nodeName"] = prefix + spec["nodeName"]
    else:
        spec["schedulerName"] = scheduler
    if "priorityClassName" in spec:
        spec["priorityClassName"] = "conformance-" + spec["priorityClassName"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod["name"], "namespace": namespace, "labels": pod["labels"]},
            "spec": spec}


def budget_manifest(budget: JSON, namespace: str) -> JSON:
    """A scenario's budget as a policy/v1 PodDisruptionBudget selecting its app's pods."""
    return make_pdb(budget["name"], namespace=namespace, match_labels={"app": budget["app"]},
                    min_available=budget.get("minAvailable"), max_unavailable=budget.get("maxUnavailable"))


def budget_status(status: JSON) -> dict[str, int]:
    return {name: int(status.get(name) or 0) for name in BUDGET_FIELDS}


def _settled_budgets(kube: Kube, scenario: JSON, namespace: str) -> Budgets:
    """The budgets' status once the disruption controller has counted the pods as they are now.
    Bound pods are marked Ready first, as their kubelet would (the simulated kubelet makes a pod
    ready as it lands); then the controller has SETTLE_TIMEOUT seconds to report every budget's
    pods: its expected pods (the selected ones for an integer minAvailable, none otherwise: no pod
    has a controller) and the ready ones."""
    if not scenario.get("pdbs"):
        return {}
    pods = [p for p in kube.list(f"/api/v1/namespaces/{namespace}/pods") if not p["metadata"].get("deletionTimestamp")]
    for pod in pods:
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))
        if pod["spec"].get("nodeName") and not ready:
            mark_ready(kube, namespace, pod["metadata"]["name"])
    want = {}
    for budget in scenario["pdbs"]:
        selected = [p for p in pods if (p["metadata"].get("labels") or {}).get("app") == budget["app"]]
        expected = len(selected) if isinstance(budget.get("minAvailable"), int) else 0
        want[budget["name"]] = (expected, sum(1 for p in selected if p["spec"].get("nodeName")))

    def current() -> dict[str, JSON]:
        return {name: kube.get(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}") for name in want}

    def counted(pdb: JSON) -> bool:
        status = pdb.get("status") or {}
        return (status.get("observedGeneration") == pdb["metadata"]["generation"]
                and (status.get("expectedPods", 0), status.get("currentHealthy", 0)) == want[pdb["metadata"]["name"]])

    deadline = time.monotonic() + SETTLE_TIMEOUT
    budgets = current()
    while not all(map(counted, budgets.values())) and time.monotonic() < deadline:
        time.sleep(0.05)
        budgets = current()
    time.sleep(0.1)  # for the schedulers' informers to have the status too
    return {name: budget_status(pdb.get("status") or {}) for name, pdb in budgets.items()}


def _create(kube: Kube, manifest: JSON) -> JSON:
    deadline = time.monotonic() + 10
    while True:
        try:
            return kube.create(f"/api/v1/namespaces/{manifest['metadata']['namespace']}/pods", manifest)
        except ApiError as e:  # the Priority admission plugin may not know a new class yet
            if e.status != 403 or "PriorityClass" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _names(kube: Kube, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")}


def _placements(kube: Kube, namespace: str, prefix: str) -> dict[str, str | None]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"].removeprefix(prefix) if p["spec"].get("nodeName") else None
        for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")
    }


def _condition(pod: JSON) -> tuple[str, str] | None:
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return c.get("reason", ""), c.get("message", "")
    return None


@dataclass
class Realign:
    """Where the reference run went after a tie this run broke the other way: the pod bound to
    `node`; `restore`, victims only this run preempted, back where they were; `delete`, victims
    only the reference preempted, gone."""

    node: str
    restore: dict[str, str] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    # The reference's claims after the step (Step.raw_claims): the allocations and reservations
    # the run's claims are given (the reference's devices, on the same nodes and pools).
    claims: dict[str, JSON] = field(default_factory=dict)


def run_side(
    kube: Kube, scenario: JSON, namespace: str, side: str, prefix: str, align: Callable[[Step], Realign | None] | None = None
) -> list[Step]:
    """Creates the scenario's running pods, then each pending pod in turn, waiting for it to settle.
    `align(step)` may say that the reference broke a tie the other way (another of the nodes tied for
    the best score, another of the preemption candidates tied on every criterion): the pods are then
    re-created (bound) or deleted as in the reference, so that the two runs go on from the same state."""
    scheduler = scheduler_name(side, scenario["profile"])
    for budget in scenario.get("pdbs", ()):
        kube.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", budget_manifest(budget, namespace))
    for obj in dra_namespace_manifests(scenario, namespace):
        kube.create(collection_path(obj["kind"], namespace), obj)
    for pod in scenario["existing"]:
        _create(kube, pod_manifest(pod, namespace, scheduler, prefix))
    steps = []
    for pod in scenario["pending"]:
        budgets = _settled_budgets(kube, scenario, namespace)
        before = _placements(kube, namespace, prefix)
        created = _create(kube, pod_manifest(pod, namespace, scheduler, prefix))
        step = Step(pod["name"], cluster=before, budgets=budgets)
        _follow(kube, namespace, pod["name"], created, step, prefix)
        step.preempted = sorted(set(before) - _names(kube, namespace) - {pod["name"]})
        if scenario.get("dra"):
            claims = _claims(kube, namespace)
            step.raw_claims = {key: {"status": claim.get("status") or {}} for key, claim in claims.items()}
            step.claims = {key: claim_view(claims[key], prefix) if key in claims else {"missing": True}
                           for key in pod_claim_keys(pod)}
        steps.append(step)
        fix = align(step) if align is not None and step.node else None
        if fix is not None and fix.node != step.node:
            _realign(kube, scenario, namespace, prefix, pod["name"], fix)
    time.sleep(QUIET)  # retries the last pods' events set off
    if steps and scenario.get("pdbs"):
        steps[-1].budgets_at_end = _settled_budgets(kube, scenario, namespace)
    if steps and scenario.get("dra"):
        steps[-1].claims_at_end = {key: claim_view(c, prefix) for key, c in sorted(_claims(kube, namespace).items())}
    for step in steps:
        current = kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{step.pod}")
        if current is None:
            step.final = "(deleted)"
        elif current["spec"].get("nodeName"):
            step.final = current["spec"]["nodeName"].removeprefix(prefix)
        else:
            cond = _condition(current)
            step.final = _unprefix(cond[1], prefix) if cond else None
    return steps


def _realign(kube: Kube, scenario: JSON, namespace: str, prefix: str, name: str, fix: Realign) -> None:
    by_name = {p["name"]: p for p in [*scenario["existing"], *scenario["pending"]]}
    for gone in (name, *fix.delete):
        path = f"/api/v1/namespaces/{namespace}/pods/{gone}"
        kube.delete(path, grace_period_seconds=0, missing_ok=True)
        _wait_gone(kube, path)
    if fix.claims:
        _wait_released(kube, namespace)
    for again, node in {**fix.restore, name: fix.node}.items():
        pod = by_name[again]
        _create(kube, pod_manifest({**pod, "spec": {**pod["spec"], "nodeName": node}}, namespace, "", prefix))
    if fix.claims:
        _claims_as(kube, namespace, fix.claims)


def _wait_released(kube: Kube, namespace: str) -> None:
    """Until the resourceclaim controller has taken the pods just deleted off their claims."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pods = {p["metadata"]["uid"] for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")}
        claims = kube.list(CLAIMS.format(ns=namespace))
        if all(r.get("uid") in pods for c in claims for r in (c.get("status") or {}).get("reservedFor") or ()):
            return
        time.sleep(0.05)


def _claims_as(kube: Kube, namespace: str, reference: dict[str, JSON]) -> None:
    """Gives the namespace's claims the reference's allocations and reservations (the same pods by
    name), as its scheduler would have written them."""
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")}
    for key, claim in _claims(kube, namespace).items():
        want = (reference.get(key) or {}).get("status") or {}
        path = f"{CLAIMS.format(ns=namespace)}/{claim['metadata']['name']}"
        if want.get("allocation") and DELETE_PROTECTION not in (claim["metadata"].get("finalizers") or ()):
            claim = kube.patch(path, {"metadata": {"finalizers": [*(claim["metadata"].get("finalizers") or ()), DELETE_PROTECTION],
                                                   "resourceVersion": claim["metadata"]["resourceVersion"]}})
        reserved = [{**r, "uid": uids[r["name"]]} for r in want.get("reservedFor") or () if r.get("name") in uids]
        status = {k: v for k, v in {"allocation": want.get("allocation"), "reservedFor": reserved}.items() if v}
        kube.replace(f"{path}/status", {**claim, "status": status})


def _follow(kube: Kube, namespace: str, name: str, created: JSON, step: Step, prefix: str) -> None:
    """Every state the pod passes through, through a watch (polling could miss a nomination or a
    failure that lasts a few milliseconds), until it is bound, or has failed and nothing changed
    for QUIET seconds while it is not nominated."""
    version = created["metadata"]["resourceVersion"]
    cond = _condition(created)  # a gated pod is created with its condition (the API server's)
    if cond is not None:
        step.reason, step.message = cond[0], _unprefix(cond[1], prefix)
    deadline = time.monotonic() + STEP_TIMEOUT
    waiting_for_more = True
    while waiting_for_more and time.monotonic() < deadline:
        params = {"fieldSelector": f"metadata.name={name}", "resourceVersion": version, "allowWatchBookmarks": "false"}
        quiet_end = True
        for event in kube.watch(f"/api/v1/namespaces/{namespace}/pods", params, timeout=QUIET):
            obj = event["object"]
            if event["type"] == "ERROR":
                break
            version = obj["metadata"]["resourceVersion"]
            nominated = obj.get("status", {}).get("nominatedNodeName")
            if nominated and step.nominated is None:
                step.nominated = nominated.removeprefix(prefix)
            node = obj["spec"].get("nodeName")
            if node:
                step.node = node.removeprefix(prefix)
                return
            cond = _condition(obj)
            if cond is not None and step.message is None:
                step.reason, step.message = cond[0], _unprefix(cond[1], prefix)
            if event["type"] == "DELETED":
                return
            if time.monotonic() > deadline:
                quiet_end = False
                break
        # The watch ended: QUIET seconds without a change (or the server closed it).
        current = kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")
        if current is None:
            return
        if current["spec"].get("nodeName"):
            step.node = current["spec"]["nodeName"].removeprefix(prefix)
            return
        settled = step.message is not None and not current.get("status", {}).get("nominatedNodeName")
        waiting_for_more = quiet_end and not settled


def _wait_gone(kube: Kube, path: str) -> None:
    deadline = time.monotonic() + 10
    while kube.get_or_none(path) is not None and time.monotonic() < deadline:
        time.sleep(0.03)


def _unprefix(message: str, prefix: str) -> str:
    return re.sub(re.escape(prefix) + r"(node-\d+)", r"\1", message)


def clear_namespace(kube: Kube, namespace: str) -> None:
    """Deletes the scenario's pods and budgets (budgets first: the controller then stops counting)."""
    kube.request("DELETE", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
                 {"apiVersion": "v1", "kind": "DeleteOptions"})
    for name in _names(kube, namespace):
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", grace_period_seconds=0, missing_ok=True)
    deadline = time.monotonic() + 20
    while _names(kube, namespace) and time.monotonic() < deadline:
        time.sleep(0.05)
    if kube.list(CLAIMS.format(ns=namespace)) or kube.list(TEMPLATES.format(ns=namespace)):
        _clear_claims(kube, namespace)
        time.sleep(0.2)  # both schedulers see the devices free before the next run's pods


def compare(kube_steps: list[Step], ours: list[Step]) -> list[str]:
    """Every point on which the two runs differ, one line each. Scores are compared where both
    scored, on the nodes feasible for both (a difference in the feasible nodes is its own line)."""
    out = []
    for theirs, mine in zip(kube_steps, ours, strict=True):
        for what in ("node", "reason", "message", "nominated", "preempted", "feasible", "budgets"):
            a, b = getattr(theirs, what), getattr(mine, what)
            if a != b:
                out.append(f"{theirs.pod} {what}: kube-scheduler {a!r} / kubesched {b!r}")
        out += _claim_lines(theirs.pod, "claim", theirs.claims, mine.claims)
        if theirs.scores is not None and mine.scores is not None:
            both = sorted(set(theirs.scores) & set(mine.scores))
            a_s = {n: theirs.scores[n] for n in both if theirs.scores[n] != mine.scores[n]}
            b_s = {n: mine.scores[n] for n in a_s}
            if a_s:
                out.append(f"{theirs.pod} scores: kube-scheduler {a_s!r} / kubesched {b_s!r}")
    return out


def queueing_apart(kube_steps: list[Step], ours: list[Step], lines: list[str]) -> list[str]:
    """`lines` (from compare) with those of pods created while earlier pods were placed differently
    marked "(queueing)": a pod left pending and retried on later events ended elsewhere, or at
    another time, in one run (docs/compatibility.md, The conformance suite), so the two runs went on
    from other states."""
    apart = {}
    for theirs, mine in zip(kube_steps, ours, strict=True):
        if theirs.cluster != mine.cluster:
            names = sorted(set(theirs.cluster) | set(mine.cluster))
            a = {n: theirs.cluster.get(n, "(deleted)") for n in names}
            b = {n: mine.cluster.get(n, "(deleted)") for n in names}
            a, b = {n: v for n, v in a.items() if v != b[n]}, {n: v for n, v in b.items() if v != a[n]}
            apart[theirs.pod] = f" (created after other pods ended apart: kube-scheduler {a!r} / kubesched {b!r})"
    out = []
    for line in lines:
        pod = line.split(" ", 1)[0]
        out.append(f"(queueing) {line}{apart[pod]}" if pod in apart else line)
    return out


def compare_final(kube_steps: list[Step], ours: list[Step]) -> list[str]:
    """Where pods left pending ended, or what their condition says after the later pods' events;
    and the budgets' status at the end."""
    out = [
        f"{theirs.pod} final: kube-scheduler {theirs.final!r} / kubesched {mine.final!r}"
        for theirs, mine in zip(kube_steps, ours, strict=True)
        if theirs.node is None and theirs.final != mine.final
    ]
    if kube_steps:
        out += _claim_lines(kube_steps[-1].pod, "claim_at_end", kube_steps[-1].claims_at_end or {}, ours[-1].claims_at_end or {})
    if kube_steps and kube_steps[-1].budgets_at_end != ours[-1].budgets_at_end:
        out.append(f"{kube_steps[-1].pod} budgets_at_end: kube-scheduler {kube_steps[-1].budgets_at_end!r} / "
                   f"kubesched {ours[-1].budgets_at_end!r}")
    return out


def _claim_lines(pod: str, what: str, theirs: dict[str, JSON], mine: dict[str, JSON]) -> list[str]:
    return [f"{pod} {what} {key}: kube-scheduler {theirs.get(key)!r} / kubesched {mine.get(key)!r}"
            for key in sorted(set(theirs) | set(mine)) if theirs.get(key) != mine.get(key)]


def write_reproducer(directory: Path, scenario: JSON, kube_steps: list[Step], ours: list[Step], diffs: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"scenario-{scenario['seed']}.json"
    path.write_text(json.dumps({
        "scenario": scenario,
        "kube-scheduler": [asdict(s) for s in kube_steps],
        "kubesched": [asdict(s) for s in ours],
        "differences": diffs,
    }, indent=2))
    return path


def set_placement(step: Step, scores: dict[str, int] | None) -> None:
    """The feasible nodes of the cycle that placed the pod: the scored ones, or only the node it
    landed on when that cycle did not score (schedule_one.go takes a single feasible node as is,
    and a preemptor's nominated node is tried alone first); none when no cycle placed it."""
    if step.node is None:
        step.feasible, step.scores = [], None
    elif scores:
        step.feasible, step.scores = sorted(scores), scores
    else:
        step.feasible, step.scores = [step.node], None


_KUBE_LINE = re.compile(
    r'"(Attempting to schedule pod|Calculated node\'s final score for pod|Successfully bound pod to node)" '
    r'pod="([^"]+)"(?: node="([^"]+)")?(?: score=(-?\d+))?(?: evaluatedNodes=\d+ feasibleNodes=(\d+))?'
)


@dataclass
class KubeCycle:
    scores: dict[str, int] = field(default_factory=dict)
    bound_to: str | None = None
    feasible: int | None = None  # as "Successfully bound pod to node" counts them


def kube_placements(log: str, namespace: str, prefix: str) -> dict[str, KubeCycle]:
    """Per pod (by name), the cycle that bound it, from kube-scheduler's -v=10 log of one scenario
    (`log` starts where the scenario began): the final score per node (named without the prefix)
    when it scored, the number of feasible nodes it reported."""
    cycles: dict[str, KubeCycle] = {}
    placed: dict[str, KubeCycle] = {}
    for m in _KUBE_LINE.finditer(log):
        what, pod = m.group(1), m.group(2)
        ns, _, name = pod.partition("/")
        if ns != namespace:
            continue
        if what.startswith("Attempting"):
            cycles[name] = KubeCycle()
        elif name not in cycles:
            continue
        elif what.startswith("Calculated"):
            cycles[name].scores[m.group(3).removeprefix(prefix)] = int(m.group(4))
        else:
            cycle = cycles[name]
            cycle.bound_to = m.group(3).removeprefix(prefix)
            cycle.feasible = int(m.group(5)) if m.group(5) else None
            placed[name] = cycle
    return placed


def kube_placement_problems(steps: list[Step], placements: dict[str, KubeCycle]) -> list[str]:
    """Sets each step's feasible nodes and scores from kube's log; what in the log does not add up."""
    out = []
    for step in steps:
        cycle = placements.get(step.pod) if step.node is not None else None
        set_placement(step, cycle.scores if cycle else None)
        if step.node is None:
            continue
        if cycle is None or cycle.bound_to != step.node or cycle.feasible != len(step.feasible):
            out.append(f"{step.pod} kube-scheduler's log: bound to {step.node!r}, log says {cycle!r}")
    return out


def kubesched_placements(steps: list[Step], log: str, namespace: str, prefix: str) -> None:
    """Sets each step's feasible nodes and scores from kubesched's `kubesched.decisions` log of
    one scenario: a scored cycle places its pod, so a placed pod's scores are its last line."""
    last: dict[str, dict[str, int]] = {}
    for pod, scores in parse_final_scores(log):
        ns, _, name = pod.partition("/")
        if ns == namespace:
            last[name] = {node.removeprefix(prefix): score for node, score in scores.items()}
    for step in steps:
        set_placement(step, last.get(step.pod))


@dataclass
class KubePreemption:
    """A pod's first preemption in kube-scheduler's -v=10 log: the candidate nodes with their victims
    (DefaultPreemption's "Pods are potential preemption victims on node") and the node chosen."""

    chosen: str
    candidates: dict[str, list[str]]


_MARKS = ('"Attempting to schedule pod"', '"Pods are potential preemption victims on node"',
          '"the target node for the preemption is determined"')


def kube_preemptions(log: str, namespace: str, prefix: str) -> dict[str, KubePreemption]:
    """Per pod (by name), its first preemption in the scenario's log."""
    current: dict[str, dict[str, list[str]]] = {}
    out: dict[str, KubePreemption] = {}
    for line in log.splitlines():
        mark = next((m for m in _MARKS if m in line), None)
        pod = re.search(r' pod="([^"]+)"', line) if mark else None
        if mark is None or pod is None or not pod.group(1).startswith(namespace + "/"):
            continue
        name = pod.group(1).split("/", 1)[1]
        node = re.search(r' node="([^"]+)"', line)
        if mark == _MARKS[0]:
            current[name] = {}
        elif node is None or name not in current:
            continue
        elif mark == _MARKS[1]:
            victims = re.search(r" pods=(\[[^\]]*\])", line)
            names = re.findall(r'"name":"([^"]+)"', victims.group(1) if victims else "")  # one line a victim
            current[name].setdefault(node.group(1).removeprefix(prefix), []).extend(names)
        elif name not in out:
            out[name] = KubePreemption(node.group(1).removeprefix(prefix), current[name])
    return out


def priorities(scenario: JSON) -> dict[str, int]:
    """Each pod's priority (0 without a class, there being no default PriorityClass)."""
    return {p["name"]: PRIORITIES.get(p["spec"].get("priorityClassName", ""), 0) for p in [*scenario["existing"], *scenario["pending"]]}


def budget_violations(scenario: JSON, step: Step, node: str, victims: list[str]) -> int:
    """How many of `victims` kube counted as violating a budget on `node` (the candidate's
    numPDBViolations): the node's potential victims (its pods of lower priority than the step's
    pod), most important first, draw down the budgets selecting them from their disruptionsAllowed
    at the step; a pod that takes one below zero violates it. Among pods of equal priority kube's
    order is its sort's (no start times here): they are taken by name, which may count otherwise
    when a budget runs out among them."""
    if not step.budgets:
        return 0
    priority = priorities(scenario)
    app = {p["name"]: p["labels"].get("app") for p in [*scenario["existing"], *scenario["pending"]]}
    allowed = {b["name"]: step.budgets.get(b["name"], {}).get("disruptionsAllowed", 0) for b in scenario["pdbs"]}
    potential = sorted((p for p, n in step.cluster.items() if n == node and priority[p] < priority[step.pod]),
                       key=lambda p: (-priority[p], p))
    violating = set()
    for pod in potential:
        for budget in scenario["pdbs"]:
            if app[pod] == budget["app"]:
                allowed[budget["name"]] -= 1
                if allowed[budget["name"]] < 0:
                    violating.add(pod)
                    break
    return len(violating & set(victims))


def preemption_tie(theirs: Step, mine: Step, preemption: KubePreemption | None, scenario: JSON) -> bool:
    """Whether `mine` preempted on another of the candidates tied with kube-scheduler's choice on
    every criterion of pickOneNodeForPreemption (budget violations first, see budget_violations),
    with the very victims kube found there. No kubelet sets status.startTime here, so kube's last
    criterion (the latest start of the highest-priority victims) reads time.Now() for every victim,
    call after call, over candidates taken from a map: among those tied on the others the pick is
    random."""
    if preemption is None or mine.nominated is None or theirs.nominated is None or mine.nominated == theirs.nominated:
        return False
    priority = priorities(scenario)

    def key(node: str) -> tuple[int, int, int, int]:
        victims = preemption.candidates[node]
        ps = [priority.get(v, 0) for v in victims]
        return (budget_violations(scenario, theirs, node, victims), max(ps, default=0), sum(p + 2**31 for p in ps), len(ps))

    if mine.nominated not in preemption.candidates or theirs.nominated not in preemption.candidates:
        return False
    return key(mine.nominated) == key(theirs.nominated) == min(map(key, preemption.candidates)) and (
        mine.preempted == sorted(preemption.candidates[mine.nominated])
    )


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def read_log(path: Path, since: int) -> str:
    with path.open("rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace")
