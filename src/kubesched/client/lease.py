"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.

- Candidates try every retry_period (jittered by client-go's factor 1.2) to acquire the Lease:
  create it when missing; take it over only when it is unheld or when its record (holder, times,
  transitions) has not changed for the record's leaseDurationSeconds as measured by the local
  monotonic clock (timestamps written by others are never compared with ours, so clock skew does not
  matter). Writes are PUTs carrying the resourceVersion that was read, so two candidates cannot both
  win.
- The leader renews every retry_period; when no renewal succeeds within renew_deadline (or another
  holder is seen) it sets `lost` and `run()` returns: the caller must stop acting as leader (exit, as
  kube-scheduler does).
- On cancellation with release_on_cancel, the leader writes an empty holderIdentity with
  leaseDurationSeconds 1 so that a standby takes over at its next try.

Give the elector its own ApiClient (kube-scheduler uses a separate client for leader election), so
that renewals never queue behind a burst of binds in a shared rate limiter.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kubesched.client.api import ApiClient, ApiError

__all__ = ["LeaderElector", "LeaderElectionRecord", "micro_time"]

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2


def micro_time(when: datetime | None = None) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    when = when or datetime.now(UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The part of a Lease's spec that leader election reads and writes."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Any) -> LeaderElectionRecord:
        spec = lease.get("spec") if isinstance(lease, dict) else None
        if not isinstance(spec, dict):
            spec = {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def apply_to(self, spec: dict[str, Any]) -> dict[str, Any]:
        """`spec` with this record's fields set (other fields, e.g. strategy, are kept)."""
        out = dict(spec)
        out["holderIdentity"] = self.holder_identity
        out["leaseDurationSeconds"] = self.lease_duration_seconds
        out["leaseTransitions"] = self.lease_transitions
        for key, value in (("acquireTime", self.acquire_time), ("renewTime", self.renew_time)):
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return out


class LeaderElector:
    """Elects one leader among the processes sharing a Lease `namespace/name`."""

    def __init__(
        self,
        client: ApiClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        if retry_period <= 0 or renew_deadline <= 0 or lease_duration <= 0:
            raise ValueError("leaseDuration, renewDeadline and retryPeriod must be greater than zero")
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(f"renewDeadline must be greater than retryPeriod*{JITTER_FACTOR}")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_new_leader = on_new_leader
        self._clock = clock
        self.collection_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.path = f"{self.collection_path}/{name}"

        self.is_leader = False
        self.leader: str | None = None
        self.leadership_known = asyncio.Event()
        self.became_leader = asyncio.Event()
        self.lost = asyncio.Event()
        self.transitions = 0  # times this elector became leader
        # Annotations the holder keeps on the Lease while it leads (where to reach it), removed
        # when it writes a record for someone else or releases.
        self.annotations: dict[str, str] = {}

        self._lease: dict[str, Any] | None = None  # the Lease as last read or written (resourceVersion for PUT)
        self._observed: LeaderElectionRecord | None = None
        self._observed_time = 0.0
        self._last_renew: float | None = None
        self._reported: str | None = None

    # --- public ------------------------------------------------------------------------------------

    @property
    def description(self) -> str:
        return f"{self.namespace}/{self.name}"

    def healthy(self, tolerance: float = 20.0) -> bool:
        """False only when we believe we lead but have not renewed for renew_deadline + tolerance."""
        if not self.is_leader or self._last_renew is None:
            return True
        return self._clock() - self._last_renew <= self.renew_deadline + tolerance

    async def run(self) -> None:
        """Acquire, then renew until renewal fails (sets `lost` and returns) or the task is cancelled."""
        try:
            await self._acquire()
            self.is_leader = True
            self.transitions += 1
            self.became_leader.set()
            log.info("became leader of lease %s as %s", self.description, self.identity)
            await self._renew_loop()
        except asyncio.CancelledError:
            if self.is_leader and self.release_on_cancel:
                await self.release()
            self.is_leader = False
            raise
        self.is_leader = False
        log.error("lost the lease %s: could not renew it within %gs", self.description, self.renew_deadline)
        self.lost.set()
        if self.release_on_cancel:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.retry_period):
                    await self.release()

    async def release(self) -> bool:
        """Give the Lease up (empty holder, leaseDurationSeconds 1) if we hold it; True on success."""
        if self._lease is None or self._observed is None or self._observed.holder_identity != self.identity:
            return True
        now = micro_time()
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=self._observed.lease_transitions,
        )
        try:
            async with asyncio.timeout(self.renew_deadline):
                await self._update(record)
        except (ApiError, TimeoutError) as exc:
            log.warning("could not release lease %s: %s", self.description, exc)
            return False
        self.is_leader = False
        self._set_observed(record)
        self._report()
        log.info("released lease %s", self.description)
        return True

    # --- loops -------------------------------------------------------------------------------------

    async def _acquire(self) -> None:
        log.info("attempting to acquire lease %s as %s", self.description, self.identity)
        while True:
            succeeded = await self._try_bounded(self.renew_deadline)
            self._report()
            self.leadership_known.set()
            if succeeded:
                self._last_renew = self._clock()
                return
            await asyncio.sleep(self.retry_period * (1.0 + random.random() * JITTER_FACTOR))

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.retry_period)
            if not await self._renew_within_deadline():
                self._report()
                return
            self._report()

    async def _renew_within_deadline(self) -> bool:
        deadline = self._clock() + self.renew_deadline
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return False
            if await self._try_bounded(remaining):
                self._last_renew = self._clock()
                return True
            observed = self._observed
            if observed is not None and observed.holder_identity and observed.holder_identity != self.identity:
                log.error("lease %s is now held by %s", self.description, observed.holder_identity)
                return False
            await asyncio.sleep(max(0.0, min(self.retry_period, deadline - self._clock())))

    async def _try_bounded(self, limit: float) -> bool:
        try:
            async with asyncio.timeout(limit):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.warning("lease %s: no answer within %.1fs", self.description, limit)
            return False
        except ApiError as exc:
            log.warning("lease %s: %s", self.description, exc)
            return False

    # --- one attempt ---------------------------------------------------------------------------------

    def _holds(self) -> bool:
        return self._observed is not None and self._observed.holder_identity == self.identity

    def _lease_valid(self, now: float) -> bool:
        observed = self._observed
        if observed is None:
            return False
        return self._observed_time + observed.lease_duration_seconds > now

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self._observed = record
        self._observed_time = self._clock()
        self.leader = record.holder_identity or None

    def _report(self) -> None:
        if self.leader == self._reported:
            return
        self._reported = self.leader
        if self.leader:
            log.info("lease %s: new leader %s", self.description, self.leader)
            if self.on_new_leader is not None:
                try:
                    self.on_new_leader(self.leader)
                except Exception:
                    log.exception("on_new_leader callback failed")

    async def _try_acquire_or_renew(self) -> bool:
        now_mono = self._clock()
        now = micro_time()
        desired = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, math.ceil(self.lease_duration)),
            acquire_time=now,
            renew_time=now,
            lease_transitions=0,
        )
        # 1. Fast path: the leader updates optimistically with the Lease it last wrote.
        if self._holds() and self._lease is not None and self._lease_valid(now_mono):
            assert self._observed is not None
            record = replace(desired, acquire_time=self._observed.acquire_time, lease_transitions=self._observed.lease_transitions)
            try:
                await self._update(record)
            except ApiError as exc:
                log.info("lease %s: optimistic renew failed (%s); reading it again", self.description, exc)
            else:
                self._set_observed(record)
                return True

        # 2. Read the Lease, or create it.
        try:
            lease = await self.client.get(self.path)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("lease %s: cannot read it: %s", self.description, exc)
                return False
            try:
                await self._create(desired)
            except ApiError as create_exc:
                log.info("lease %s: cannot create it: %s", self.description, create_exc)
                return False
            self._set_observed(desired)
            return True
        if not isinstance(lease, dict):
            log.warning("lease %s: the server returned something that is not a Lease", self.description)
            return False
        self._lease = lease
        old = LeaderElectionRecord.from_lease(lease)

        # 3. A changed record restarts the takeover clock.
        if old != self._observed:
            self._set_observed(old)
        if old.holder_identity and old.holder_identity != self.identity and self._lease_valid(now_mono):
            return False

        # 4. Renew our own record, or take the Lease over.
        if old.holder_identity == self.identity:
            record = replace(desired, acquire_time=old.acquire_time, lease_transitions=old.lease_transitions)
        else:
            record = replace(desired, lease_transitions=old.lease_transitions + 1)
        try:
            await self._update(record)
        except ApiError as exc:
            log.info("lease %s: update failed: %s", self.description, exc)
            return False
        self._set_observed(record)
        return True

    async def _create(self, record: LeaderElectionRecord) -> None:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if record.holder_identity == self.identity and self.annotations:
            metadata["annotations"] = dict(self.annotations)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": record.apply_to({})}
        created = await self.client.post(self.collection_path, body)
        self._lease = created if isinstance(created, dict) else None

    async def _update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise ApiError(0, "NotInitialized", "the lease was not read or created yet")
        body = copy.copy(self._lease)
        spec = body.get("spec")
        body["spec"] = record.apply_to(spec if isinstance(spec, dict) else {})
        if self.annotations:
            metadata = dict(body.get("metadata") or {})
            annotations = dict(metadata.get("annotations") or {})
            for key, value in self.annotations.items():
                if record.holder_identity == self.identity:
                    annotations[key] = value
                else:
                    annotations.pop(key, None)
            metadata["annotations"] = annotations
            body["metadata"] = metadata
        updated = await self.client.put(self.path, body)
        if isinstance(updated, dict):
            self._lease = updated
