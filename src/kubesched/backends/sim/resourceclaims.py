"""The resourceclaim controller's part in the simulated cluster (kube-controller-manager v1.37.2's
pkg/controller/resourceclaim), for what the scheduler can observe of it:

- **Claims from templates.** For each entry of a pod's spec.resourceClaims that names a
  resourceClaimTemplateName, a ResourceClaim is created from the template: generateName
  `<pod>-<entry>-` (both parts cut in proportion when that is over 57 characters, as the controller
  cuts them), the pod as its controlling owner, the annotation `resource.kubernetes.io/pod-claim-name`
  naming the entry, the template's labels, annotations and spec. The names made are then written
  to the pod's status.resourceClaimStatuses (sorted by entry), a pod update for the scheduler,
  whose DynamicResources waits for it at PreEnqueue. A claim made earlier for the same entry and
  not yet recorded (found by owner and annotation) is recorded instead of making another.
- **A missing template** stops the pod's sync there, as the controller's error does: a Warning
  event `FailedResourceClaimCreation` on the pod, no claim, no status; the pod is synced again
  when the template is created.
- **Reservations of bound pods.** A pod created on a node (spec.nodeName) whose claim is allocated
  but not reserved for it is added to the claim's status.reservedFor.
- **Release.** When a pod finishes (Succeeded or Failed) or is deleted, its claims drop it from
  status.reservedFor (and any other reservation of a pod that is gone or done); a claim that no
  consumer holds any more is deallocated (status.allocation cleared), and a claim generated for a
  pod that is done is deleted. A deleted pod's own claims go with it, as the garbage collector
  removes them. Claims of the input are checked once when created, so a reservation for a pod the
  input never creates is dropped as the controller drops it.

Every write is a new version in the simulated API server's store (its resourceVersion counter)
and is delivered to the scheduler as a watch delivers it: a claim added, updated or deleted, a
pod updated.

Not modelled: PodGroup claims (DRAWorkloadResourceClaims is off in v1.37.2), the scheduler's
extended-resource claims (pod status.extendedResourceClaimStatus), and the delete-protection
finalizer (a claim's finalizers are not read yet; the controller clears the allocation of a claim
no longer in use, which is what it does for every claim the scheduler allocated).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import msgspec

from kubesched.api.customresources import object_key
from kubesched.api.dra import RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.objects import ObjectMeta, OwnerReference, Pod, PodResourceClaim, PodResourceClaimStatus
from kubesched.backends.sim.draadmission import creation_time
from kubesched.backends.sim.workloads import random_suffix, stable_uid
from kubesched.devices.manager import PodClaimError, pod_claim_name
from kubesched.infra.clock import Clock
from kubesched.scheduler.backend import SchedulerPort

# resourceapi.PodResourceClaimAnnotation: which entry of the pod's spec.resourceClaims a claim is for.
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# The controller leaves room for a hyphen and 5 random characters in a name of 63.
MAX_BASE_LENGTH = 57
FAILED_CREATION = "FailedResourceClaimCreation"


class SimApiServer(Protocol):
    """What the controller reads and writes of the simulated API server (SimCluster is one)."""

    resource_version: int  # the store's one counter: every write takes the next value
    scheduler: SchedulerPort | None  # where a watch delivers

    @property
    def clock(self) -> Clock: ...

    @property
    def pods(self) -> dict[str, Pod]:
        """uid -> the current object."""
        ...

    @property
    def devices(self) -> dict[str, dict[str, Any]]:
        """Event resource -> key -> the DRA object stored."""
        ...

    def note_event(self, pod_key: str, type_: str, reason: str, message: str) -> None: ...


def generate_name(pod_name: str, entry: str) -> str:
    """The controller's generateName for the claim of `entry` of pod `pod_name`: `<pod>-<entry>-`,
    or, when that is over 57 characters, both cut in proportion to their lengths and joined by a
    hyphen (no trailing one), so that a long pod name does not push the entry out."""
    base = f"{pod_name}-{entry}-"
    if len(base) <= MAX_BASE_LENGTH:
        return base
    return f"{pod_name[:len(pod_name) * MAX_BASE_LENGTH // len(base)]}-{entry[:len(entry) * MAX_BASE_LENGTH // len(base)]}"


def pod_done(pod: Pod) -> bool:
    """isPodDone: none of its containers runs or ever will (terminal, or deleted before scheduling)."""
    return pod.status.phase in ("Succeeded", "Failed") or (bool(pod.metadata.deletion_timestamp) and not pod.spec.node_name)


def pod_claim_names(pod: Pod) -> Iterator[str]:
    """resourceclaim.PodClaims: the names of the claims the pod uses that exist by now."""
    for entry in pod.spec.resource_claims:
        try:
            named = pod_claim_name(pod, entry)
        except PodClaimError:
            continue
        if named.name is not None:
            yield named.name


def _controlling_pod(claim: ResourceClaim) -> str:
    """The uid of the pod that controls the claim (a claim made from a template for it), or ""."""
    for ref in claim.metadata.owner_references:
        if ref.controller and ref.api_version == "v1" and ref.kind == "Pod":
            return ref.uid
    return ""


class ResourceClaimController:
    """The controller of one simulated cluster, called by its hooks (pods created, finished and
    deleted; claims and templates created); synchronous, as the simulator's watches are instant."""

    def __init__(self, api: SimApiServer, upcoming: set[str] | None = None) -> None:
        self.api = api
        # Uids of the input's pods not created yet: their reservations in the input's claims stand.
        self.upcoming: set[str] = upcoming if upcoming is not None else set()
        # Pod uid -> keys of the claims it controls (garbage collected with it, found as orphans).
        self._owned: dict[str, set[str]] = {}
        # Template key -> uids of the pods whose sync stopped because it is missing.
        self._waiting: dict[str, set[str]] = {}

    # --- the cluster's hooks ----------------------------------------------------------------------

    def pod_created(self, pod: Pod) -> None:
        self.upcoming.discard(pod.metadata.uid)
        if not pod.spec.resource_claims:
            return
        if pod_done(pod):
            self.pod_finished(pod)
        else:
            self._sync_pod(pod)

    def pod_finished(self, pod: Pod) -> None:
        """The pod reached Succeeded or Failed: its claims are released."""
        for name in list(pod_claim_names(pod)):
            self._sync_claim(f"{pod.metadata.namespace}/{name}")

    def pod_deleted(self, pod: Pod) -> None:
        """The pod is gone (no longer in the store): its claims are released, and those it
        controls deleted, as the garbage collector deletes a deleted owner's dependents."""
        self.pod_finished(pod)
        for key in sorted(self._owned.pop(pod.metadata.uid, ())):
            self._delete_claim(key)

    def claim_added(self, claim: ResourceClaim) -> None:
        """A claim of the input was created: indexed by its owner, and checked as the controller
        checks every claim it is told of."""
        owner = _controlling_pod(claim)
        if owner:
            self._owned.setdefault(owner, set()).add(object_key(claim))
        self._sync_claim(object_key(claim))

    def template_added(self, key: str) -> None:
        """A ResourceClaimTemplate was created: the pods that waited for it are synced again."""
        for uid in sorted(self._waiting.pop(key, ())):
            pod = self.api.pods.get(uid)
            if pod is not None and not pod_done(pod):
                self._sync_pod(pod)

    # --- pods ---------------------------------------------------------------------------------

    def _sync_pod(self, pod: Pod) -> None:
        """syncPod: claims made for the pod's template entries and recorded in its status; then,
        for a pod on a node, its allocated claims reserved for it."""
        if pod.metadata.deletion_timestamp:
            return
        made: dict[str, str] = {}
        for entry in pod.spec.resource_claims:
            failure = self._handle_entry(pod, entry, made)
            if failure:
                self.api.note_event(f"{pod.metadata.namespace}/{pod.metadata.name}", "Warning", FAILED_CREATION,
                                    f"PodResourceClaim {entry.name}: {failure}")
                return
        if made:
            pod = self._record(pod, made)
        if pod.spec.node_name:
            self._reserve_for(pod)

    def _handle_entry(self, pod: Pod, entry: PodResourceClaim, made: dict[str, str]) -> str:
        """handleClaim for one entry: "" when done (a claim made or found goes into `made`), else
        the error the controller reports."""
        namespace = pod.metadata.namespace
        try:
            named = pod_claim_name(pod, entry)
        except PodClaimError as exc:
            if not exc.not_created:
                return f"checking for claim before creating it: {exc}"
        else:
            if named.name is None:
                return ""  # the controller decided earlier that no claim is needed
            existing: ResourceClaim | None = self._claims().get(f"{namespace}/{named.name}")
            if existing is not None and (not named.must_check_owner or _controlling_pod(existing) == pod.metadata.uid):
                return ""
            # Recorded but gone (or another pod's): made again below, as the controller does.
        template_name = entry.resource_claim_template_name
        if template_name is None:
            return ""
        claim = self._orphan(pod, entry.name)
        if claim is None:
            template_key = f"{namespace}/{template_name}"
            template = self.api.devices.get(RESOURCE_CLAIM_TEMPLATE, {}).get(template_key)
            if template is None:
                self._waiting.setdefault(template_key, set()).add(pod.metadata.uid)
                return (f'resource claim template "{template_name}": '
                        f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found')
            claim = self._create_from(template, pod, entry.name)
        made[entry.name] = claim.metadata.name
        return ""

    def _orphan(self, pod: Pod, entry: str) -> ResourceClaim | None:
        """findPodResourceClaim: a claim the pod controls that was made for this entry."""
        claims = self._claims()
        for key in sorted(self._owned.get(pod.metadata.uid, ())):
            claim = claims.get(key)
            if claim is not None and claim.metadata.annotations.get(POD_CLAIM_ANNOTATION) == entry:
                return claim
        return None

    def _create_from(self, template: Any, pod: Pod, entry: str) -> ResourceClaim:
        meta = pod.metadata
        prefix = generate_name(meta.name, entry)
        claims = self._claims()
        attempt = 0
        while True:
            # Drawn from the pod and entry, so a run repeats; retried on the rare clash, as the
            # API server's name generator is.
            name = prefix + random_suffix(f"{meta.uid}/{entry}#{attempt}")
            if f"{meta.namespace}/{name}" not in claims:
                break
            attempt += 1
        source: ObjectMeta = template.spec.metadata
        claim = ResourceClaim(
            metadata=ObjectMeta(
                name=name,
                generate_name=prefix,
                namespace=meta.namespace,
                uid=stable_uid("ResourceClaim", meta.namespace, name),
                labels=dict(source.labels),
                annotations={**source.annotations, POD_CLAIM_ANNOTATION: entry},
                owner_references=[OwnerReference(api_version="v1", kind="Pod", name=meta.name, uid=meta.uid,
                                                 controller=True)],
                creation_timestamp=creation_time(self.api.clock.now()),
            ),
            spec=template.spec.spec,
        )
        stored = self._write(claim)
        self._owned.setdefault(meta.uid, set()).add(object_key(stored))
        return stored

    def _record(self, pod: Pod, made: dict[str, str]) -> Pod:
        """The pod's status.resourceClaimStatuses with the claims made (the controller's apply of
        the merged entries, sorted by name), delivered as a pod update."""
        merged = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses if s.resource_claim_name is not None}
        merged.update(made)
        statuses = [PodResourceClaimStatus(name=name, resource_claim_name=merged[name]) for name in sorted(merged)]
        updated = msgspec.structs.replace(pod, status=msgspec.structs.replace(pod.status, resource_claim_statuses=statuses))
        self.api.pods[pod.metadata.uid] = updated
        self._port().on_pod_update(updated)
        return updated

    def _reserve_for(self, pod: Pod) -> None:
        """A pod bound without the scheduler: its allocated claims get it in status.reservedFor
        (a claim made from a template must be the pod's own, or the sync stops there)."""
        claims = self._claims()
        for entry in pod.spec.resource_claims:
            try:
                named = pod_claim_name(pod, entry)
            except PodClaimError:
                return
            claim = claims.get(f"{pod.metadata.namespace}/{named.name}") if named.name is not None else None
            if claim is None:
                if named.name is not None:
                    return  # not in the store (yet): nothing to reserve, as the controller stops
                continue
            if named.must_check_owner and _controlling_pod(claim) != pod.metadata.uid:
                return
            if claim.status.allocation is None or any(ref.uid == pod.metadata.uid for ref in claim.status.reserved_for):
                continue
            consumer = ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
            self._write(_with_status(claim, reserved_for=[*claim.status.reserved_for, consumer]))

    # --- claims ---------------------------------------------------------------------------------

    def _sync_claim(self, key: str) -> None:
        """syncClaim: reservations of pods that are gone or done dropped, the claim deallocated
        when that leaves none, and deleted when it was made for a pod that is done."""
        claim: ResourceClaim | None = self._claims().get(key)
        if claim is None:
            return
        reserved = claim.status.reserved_for
        remaining = [ref for ref in reserved if ref.api_group or ref.resource != "pods" or self._may_run(claim, ref)]
        if len(remaining) < len(reserved):
            # The move from "in use" to "not in use" deallocates, so a later consumer is not
            # tied to the node chosen for the last one.
            claim = self._write(_with_status(claim, reserved_for=remaining,
                                             allocation=claim.status.allocation if remaining else None))
        if remaining:
            return
        owner = self.api.pods.get(_controlling_pod(claim))
        if owner is not None and pod_done(owner):
            self._delete_claim(key)

    def _may_run(self, claim: ResourceClaim, ref: ResourceClaimConsumerReference) -> bool:
        if ref.uid in self.upcoming:
            return True
        pod = self.api.pods.get(ref.uid)
        return (pod is not None and pod.metadata.name == ref.name and pod.metadata.namespace == claim.metadata.namespace
                and not pod_done(pod))

    def _port(self) -> SchedulerPort:
        assert self.api.scheduler is not None, "the simulated cluster has no scheduler connected"
        return self.api.scheduler

    def _claims(self) -> dict[str, ResourceClaim]:
        return self.api.devices.setdefault(RESOURCE_CLAIM, {})

    def _write(self, claim: ResourceClaim) -> ResourceClaim:
        """A new version in the store, delivered to the scheduler (its own copy, as an informer's)."""
        self.api.resource_version += 1
        claim = msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
            claim.metadata, resource_version=str(self.api.resource_version)))
        self._claims()[object_key(claim)] = claim
        self._port().on_resource_claim(msgspec.structs.replace(claim))
        return claim

    def _delete_claim(self, key: str) -> None:
        claim = self._claims().pop(key, None)
        if claim is None:
            return
        owned = self._owned.get(_controlling_pod(claim))
        if owned is not None:
            owned.discard(key)
        self.api.resource_version += 1
        self._port().on_resource_claim_delete(claim.metadata.namespace, claim.metadata.name)


def _with_status(claim: ResourceClaim, **changes: Any) -> ResourceClaim:
    return msgspec.structs.replace(claim, status=msgspec.structs.replace(claim.status, **changes))


__all__ = ["POD_CLAIM_ANNOTATION", "ResourceClaimController", "SimApiServer", "generate_name", "pod_claim_names",
           "pod_done"]
