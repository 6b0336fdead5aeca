"""`kubesched run`: the scheduler on a real cluster, top to bottom.

1. Connect (kubeconfig or the in-cluster service account) with the configured QPS/burst.
2. Serve /healthz /livez /readyz /metrics /debug over HTTPS on the secure port (observe.server).
3. Start the informers and wait until every list has been delivered to the cache.
4. With leader election, wait for the Lease; standbys keep their caches warm meanwhile.
5. Schedule until told to stop (SIGTERM) or until leadership is lost. Losing it ends the
   process with a non-zero code, as kube-scheduler does: a fresh start rebuilds
   everything from the API rather than trusting a cache another leader has moved past.
   Meanwhile the leader watches its configuration file and reloads it (reload.controller):
   on a change, on SIGHUP, and once as it takes over (a standby may have missed a change).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.backends.kube.backend import KubeBackend
from kubesched.backends.kube.events import EventRecorder
from kubesched.backends.kube.informers import Informers, build_informers
from kubesched.client import ApiClient, LeaderElector, load_connection
from kubesched.client.debug import DEBUG_CERT_ANNOTATION, DEBUG_ENDPOINT_ANNOTATION
from kubesched.config.types import SchedulerConfig
from kubesched.framework.registry import Registry
from kubesched.infra import gcpolicy
from kubesched.infra.clock import RealClock, first_set
from kubesched.observe.auth import ALWAYS_ALLOW_PATHS, ApiReviewer, DelegatingAuth
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.observe.server import HealthServer
from kubesched.observe.tls import CertificateError, load_serving_cert, self_signed, server_context
from kubesched.observe.tracing import Tracer, TracingConfig
from kubesched.scheduler.backend import SchedulerPort
from kubesched.scheduler.core import Scheduler
from kubesched.scheduler.reload.controller import ReloadController

log = logging.getLogger(__name__)

CLIENT_CA_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
SYNC_LOG_EVERY = 10.0
DRAIN_TIMEOUT = 10.0
EXIT_LEADERSHIP_LOST = 1


class RunError(RuntimeError):
    """A problem of the setup (an address in use...), reported in one line."""


@dataclass
class RunOptions:
    config: SchedulerConfig
    kubeconfig: str | None = None
    bind_address: str = "0.0.0.0"
    secure_port: int = 10259  # kube-scheduler's; 0: no serving at all
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4()}")
    registry: Registry | None = None
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS
    advertise_address: str | None = None
    tracing: TracingConfig | None = None
    # The configuration file, watched for changes, and the text `config` was loaded from.
    config_path: Path | None = None
    config_text: str = ""


class KubeScheduler:
    """The parts of a running kubesched, wired together; `run` drives them."""

    def __init__(self, options: RunOptions) -> None:
        self.options = options
        cfg = options.config
        self.connection = load_connection(options.kubeconfig or cfg.client_connection.kubeconfig or None)
        self.client = ApiClient(self.connection, qps=cfg.client_connection.qps, burst=cfg.client_connection.burst)
        self.metrics = SchedulerMetrics()
        self.events = EventRecorder(self.client, controller="kubesched", instance=options.identity)
        self.backend = KubeBackend(self.client, self.events)
        self.scheduler: SchedulerPort = Scheduler(
            cfg, self.backend, RealClock(), registry=options.registry, metrics=self.metrics, tracer=Tracer(options.tracing)
        )
        self.informers: Informers = build_informers(self.client, self.scheduler, self.events.forget_pod)
        self.reload = ReloadController(self.scheduler, path=options.config_path, post_event=self._config_event,
                                       on_profiles_added=self._deliver_pending)
        if options.config_text:
            self.reload.start_from_file(options.config_text)
        le = cfg.leader_election
        self.elector: LeaderElector | None = None
        if le.leader_elect:
            self.elector = LeaderElector(
                self.client,
                le.resource_namespace,
                le.resource_name,
                options.identity,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
                on_new_leader=lambda who: log.info("the leader is now %s", who),
            )
        self.server = HealthServer(
            self.metrics.registry(), DelegatingAuth(ApiReviewer(self.client), options.always_allow_paths), debug=self.scheduler,
            configz=self.reload.configz,
        )
        self._register_observability()
        self.leading = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # --- health and metrics ------------------------------------------------------------------------

    def _register_observability(self) -> None:
        elector = self.elector

        def informers_synced() -> str | None:
            waiting = [r.name for r in self.informers.reflectors if not r.synced.is_set()]
            return f"waiting for the initial list of {', '.join(waiting)}" if waiting else None

        def leadership_known() -> str | None:
            if elector is None or elector.leadership_known.is_set():
                return None
            return "leadership not yet known"

        def leader_healthy() -> str | None:
            if elector is None or elector.healthy():
                return None
            return "failed to renew the leader lease in time"

        self.server.add_live_check("leaderElection", leader_healthy)
        self.server.add_ready_check("sched-handler-sync", informers_synced)
        self.server.add_ready_check("leaderElection-known", leadership_known)
        # Not ready while the running configuration is not the file's (a refused reload, a
        # rollback): scheduling goes on, but `kubectl get pods` and alerts on readiness show it.
        self.server.add_ready_check("config-reload", lambda: self.reload.problem)
        name = self.options.config.leader_election.resource_name
        self.metrics.add_gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            lambda: {(name,): 1.0 if self.leading.is_set() else 0.0},
        )
        self.metrics.add_counter_source(
            "kubesched_watch_events_total",
            "Reflector incidents by resource: relists (after 410 Gone or errors), watch restarts, undecodable objects.",
            ["resource", "kind"],
            self.informers.stats,
        )
        self.metrics.add_counter_source(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code and method.",
            ["code", "method"],
            lambda: {(str(code), method): float(n) for (method, code), n in self.client.requests_total.items()},
        )
        self.metrics.add_counter_source(
            "kubesched_events_total",
            "Events posted, dropped (queue full) and failed.",
            ["result"],
            lambda: {("posted",): float(self.events.posted), ("dropped",): float(self.events.dropped),
                     ("failed",): float(self.events.failed)},
        )

    # --- configuration reloads -----------------------------------------------------------------------------

    def _config_event(self, type_: str, reason: str, message: str) -> None:
        """An event about the configuration: regarding this scheduler's own Pod when the downward
        API names it (POD_NAME, POD_NAMESPACE), else its leader election Lease."""
        name, namespace = os.environ.get("POD_NAME"), os.environ.get("POD_NAMESPACE")
        if name and namespace:
            regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}
        else:
            le = self.options.config.leader_election
            regarding = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "namespace": le.resource_namespace,
                         "name": le.resource_name}
        self.events.record_about(regarding, type_, reason, message, "Reload")

    def _deliver_pending(self, profiles: set[str]) -> None:
        """A reload added profiles: the pending pods that name them, which the scheduler has been
        ignoring, are handed over from the informer's store."""
        pods: Any = next((r for r in self.informers.reflectors if r.name == "pods"), None)
        if pods is None:
            return
        for pod in list(pods.store.values()):
            if not pod.spec.node_name and (pod.spec.scheduler_name or "default-scheduler") in profiles:
                self.scheduler.on_pod_add(pod)

    # --- lifecycle ----------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        """Runs until `stop` is set (exit code 0) or leadership is lost (exit code 1)."""
        loop = asyncio.get_running_loop()
        try:
            await self._serve()
            self.events.start()
            if not self.options.config.delay_cache_until_active:
                self._start_informers()
            lost = asyncio.Event()
            if self.elector is not None:
                elector = self.elector
                self._tasks.append(loop.create_task(elector.run(), name="leader-election"))
                await first_set(stop, elector.became_leader, elector.lost)
                if stop.is_set():
                    return 0
                if elector.lost.is_set():
                    log.error("leader election lost before leading")
                    return EXIT_LEADERSHIP_LOST
                lost = elector.lost
            log.info("leading as %s", self.options.identity)
            self.leading.set()
            if self.options.config.delay_cache_until_active:
                self._start_informers()
            if not await self._wait_synced(stop, lost):
                return EXIT_LEADERSHIP_LOST if lost.is_set() else 0
            # What exists now (modules, the initial caches, the first generation) lives as long as the
            # process: out of the collector's sight, a full collection scans only what came since, a few
            # ms instead of about 50 (one stops every thread, holding the GIL: the loop too).
            gcpolicy.settle()
            gcpolicy.for_scheduling()
            halt = asyncio.Event()
            relay = loop.create_task(_relay(halt, stop, lost))
            await self.reload.check_file()  # a change a standby did not apply
            self._tasks.append(loop.create_task(self.reload.watch(halt), name="config-reload"))
            try:
                await self.scheduler.run(halt, pace=self.backend.room_for_writes)
            finally:
                relay.cancel()
                self.reload.guard.stop()
            if lost.is_set():
                log.error("leader election lost: stopping so that a fresh start rebuilds from the API")
                return EXIT_LEADERSHIP_LOST
            await self._drain()
            return 0
        finally:
            await self._shutdown()

    async def _serve(self) -> None:
        """HTTPS on the secure port; the leader's Lease then says where to reach it."""
        options = self.options
        if options.secure_port == 0:
            return
        address = options.bind_address
        try:
            if options.tls_cert_file or options.tls_private_key_file:
                if not (options.tls_cert_file and options.tls_private_key_file):
                    raise RunError("--tls-cert-file and --tls-private-key-file go together")
                cert = load_serving_cert(options.tls_cert_file, options.tls_private_key_file)
            else:
                cert = self_signed([socket.gethostname(), "localhost", "127.0.0.1", *self._specific(address)])
            context = server_context(cert, await self._client_ca())
        except CertificateError as exc:
            raise RunError(str(exc)) from None
        try:
            await self.server.start(address, options.secure_port, context)
        except OSError as exc:
            raise RunError(f"cannot serve the secure port on {address}:{options.secure_port}: {exc.strerror or exc}") from None
        if self.elector is not None:
            host = self._advertised()
            url = f"https://{f'[{host}]' if ':' in host else host}:{self.server.port}"
            self.elector.annotations = {DEBUG_ENDPOINT_ANNOTATION: url, DEBUG_CERT_ANNOTATION: cert.sha256}

    @staticmethod
    def _specific(address: str) -> list[str]:
        return [] if address in ("", "0.0.0.0", "::") else [address]

    def _advertised(self) -> str:
        """Where other processes reach this one: --advertise-address, the pod's IP (downward API),
        the bind address if it is a specific one, else the host's own address."""
        options = self.options
        if options.advertise_address:
            return options.advertise_address
        if os.environ.get("POD_IP"):
            return os.environ["POD_IP"]
        specific = self._specific(options.bind_address)
        if specific:
            return specific[0]
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return "127.0.0.1"

    async def _client_ca(self) -> bytes | None:
        """The CA that signs client certificates: --client-ca-file, else the one the API server
        publishes for delegated authentication (kube-system/extension-apiserver-authentication)."""
        if self.options.client_ca_file:
            try:
                with open(self.options.client_ca_file, "rb") as f:
                    return f.read()
            except OSError as exc:
                raise RunError(f"--client-ca-file {self.options.client_ca_file}: {exc.strerror}") from None
        try:
            cm = await self.client.get(CLIENT_CA_CONFIGMAP)
        except Exception as exc:
            log.warning("client certificates will not be accepted on the secure port: cannot read %s: %s", CLIENT_CA_CONFIGMAP, exc)
            return None
        data = cm.get("data") if isinstance(cm, dict) else None
        ca = data.get("client-ca-file") if isinstance(data, dict) else None
        return ca.encode() if isinstance(ca, str) and ca.strip() else None

    def _start_informers(self) -> None:
        loop = asyncio.get_running_loop()
        for reflector in self.informers.reflectors:
            self._tasks.append(loop.create_task(reflector.run(), name=f"watch {reflector.name}"))

    async def _wait_synced(self, stop: asyncio.Event, lost: asyncio.Event) -> bool:
        """True once every informer has delivered its first list; False if stopped first."""
        while not self.informers.synced:
            waits = [r.synced for r in self.informers.reflectors if not r.synced.is_set()]
            done = await first_set(stop, lost, *waits, timeout=SYNC_LOG_EVERY)
            if stop.is_set() or lost.is_set():
                return False
            if not done:
                log.info("waiting for the initial list of %s", ", ".join(r.name for r in self.informers.reflectors
                                                                          if not r.synced.is_set()))
        log.info("caches synced: %d nodes, %d pods pending", *self.scheduler.counts())
        return True

    async def _drain(self) -> None:
        try:
            await asyncio.wait_for(self.scheduler.drain_bindings(), DRAIN_TIMEOUT)
        except TimeoutError:
            log.warning("stopping with binding cycles still running")

    async def _shutdown(self) -> None:
        # The elector first: cancelling it releases the Lease, so a standby takes over at once.
        self._tasks.sort(key=lambda t: t.get_name() != "leader-election")
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.events.stop()
        await self.scheduler.close()
        await self.client.close()
        await self.server.stop()


async def _relay(target: asyncio.Event, *sources: asyncio.Event) -> None:
    await first_set(*sources)
    target.set()
