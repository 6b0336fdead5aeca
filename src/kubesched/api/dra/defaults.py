"""The API server's defaulting of resource.k8s.io/v1 objects (pkg/apis/resource/v1/defaults.go and
its generated defaulters), applied before validation as the API server applies it on decode:

- a request (`exactly`) or subrequest without allocationMode gets ExactCount, and ExactCount
  without a count gets 1;
- a toleration without an operator gets Equal (in requests, subrequests and allocation results);
- a slice's device taint without timeAdded gets the time of creation (to the second).

And the registry's PrepareForCreate: a ResourceClaim's status is reset on create. The simulator
keeps a manifest's status (an allocated claim from `kubectl get -o yaml`), so that reset is the
caller's choice (`reset_claim_status`).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.dra.claims import DeviceSubRequest, ExactDeviceRequest, ResourceClaim, ResourceClaimSpec, ResourceClaimStatus
from kubesched.api.dra.common import ALLOCATION_MODE_EXACT_COUNT, TOLERATION_OP_EQUAL, DeviceToleration
from kubesched.api.dra.slices import ResourceSlice


def _tolerations(tolerations: Iterable[DeviceToleration]) -> None:
    for toleration in tolerations:
        if not toleration.operator:
            toleration.operator = TOLERATION_OP_EQUAL


def _request(request: ExactDeviceRequest | DeviceSubRequest) -> None:
    if not request.allocation_mode:
        request.allocation_mode = ALLOCATION_MODE_EXACT_COUNT
    if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT and request.count == 0:
        request.count = 1
    _tolerations(request.tolerations)


def default_claim_spec(spec: ResourceClaimSpec) -> None:
    for request in spec.devices.requests:
        if request.exactly is not None:
            _request(request.exactly)
        for sub in request.first_available:
            _request(sub)


def default_claim(claim: ResourceClaim) -> None:
    default_claim_spec(claim.spec)
    if claim.status.allocation is not None:
        for result in claim.status.allocation.devices.results:
            _tolerations(result.tolerations)


def reset_claim_status(claim: ResourceClaim) -> None:
    """PrepareForCreate: the status of a created claim is empty, whatever was sent."""
    claim.status = ResourceClaimStatus()


def default_slice(rs: ResourceSlice, now: str) -> None:
    """`now`: the creation time as RFC 3339 to the second (metav1.Time's form)."""
    for device in rs.spec.devices or ():
        for taint in device.taints:
            if taint.time_added is None:
                taint.time_added = now
