"""The secure port: /healthz, /livez, /readyz, /metrics, /configz and /debug, as kube-scheduler
serves its own (HTTPS, delegated authentication and authorization; see observe.auth).

Each health endpoint runs named checks and answers 200 "ok" when all pass, 500
otherwise; `?verbose` lists every check as `[+]name ok` / `[-]name failed: why`,
the format of Kubernetes components. /metrics is the Prometheus text exposition.
/debug/explain/{namespace}/{name} and /debug/decisions?limit=N answer JSON from the
scheduler (DebugSource), on the event loop between scheduling cycles, so they read one
consistent cache. /configz answers the configuration in force as JSON, as kube components do
(`{"componentconfig": ...}`), with kubesched's reload state beside it.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

from kubesched.observe.auth import DelegatingAuth, user_from_peer_cert

log = logging.getLogger(__name__)

# A check returns None when healthy, or the reason it is not.
Check = Callable[[], str | None]

DECISIONS_DEFAULT = 100
DECISIONS_MAX = 1000


class DebugSource(Protocol):
    def explain(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def decision_history(self, limit: int = 100) -> list[dict[str, Any]]: ...


def status_body(code: int, reason: str, message: str) -> str:
    """A metav1 Status, as the API machinery answers a refused request."""
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                       "reason": reason, "details": {}, "code": code})


_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 400: "BadRequest", 500: "InternalError"}


def _status(code: int, message: str) -> web.Response:
    return web.Response(status=code, text=status_body(code, _REASONS.get(code, ""), message), content_type="application/json")


class HealthServer:
    def __init__(
        self,
        registry: CollectorRegistry,
        auth: DelegatingAuth | None = None,
        debug: DebugSource | None = None,
        configz: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.registry = registry
        self.auth = auth
        self.debug = debug
        self.configz = configz
        self.live_checks: dict[str, Check] = {"ping": lambda: None}
        self.ready_checks: dict[str, Check] = {"ping": lambda: None}
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def add_live_check(self, name: str, check: Check) -> None:
        """Counts for /livez and /healthz (and therefore /readyz too)."""
        self.live_checks[name] = check
        self.ready_checks[name] = check

    def add_ready_check(self, name: str, check: Check) -> None:
        self.ready_checks[name] = check

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard] if self.auth is not None else [])
        app.router.add_get("/healthz", self._handler(self.live_checks))
        app.router.add_get("/livez", self._handler(self.live_checks))
        app.router.add_get("/readyz", self._handler(self.ready_checks))
        app.router.add_get("/metrics", self._metrics)
        if self.debug is not None:
            app.router.add_get("/debug/explain/{namespace}/{name}", self._explain)
            app.router.add_get("/debug/decisions", self._decisions)
        if self.configz is not None:
            app.router.add_get("/configz", self._configz)
        return app

    async def _configz(self, request: web.Request) -> web.Response:
        assert self.configz is not None
        return web.json_response(self.configz())

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=ssl_context)
        await site.start()
        addresses = self._runner.addresses
        self.port = addresses[0][1] if addresses else port
        scheme = "https" if ssl_context is not None else "http"
        log.info("serving /healthz /livez /readyz /metrics%s on %s://%s:%s",
                 " /debug" if self.debug is not None else "", scheme, host, self.port)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """Authenticates and authorizes every request before its handler runs."""
        assert self.auth is not None
        cert_user = None
        if request.transport is not None:
            cert_user = user_from_peer_cert(request.transport.get_extra_info("peercert"))
        decision = await self.auth.decide(request.method, request.path, request.headers.get("Authorization"), cert_user)
        if decision.code != 200:
            return _status(decision.code, decision.message)
        return await handler(request)

    async def _explain(self, request: web.Request) -> web.Response:
        assert self.debug is not None
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        data = self.debug.explain(namespace, name)
        if data is None:
            return _status(404, f'pods "{name}" not found in namespace "{namespace}" (no such pod pending or placed here)')
        return web.json_response(data)

    async def _decisions(self, request: web.Request) -> web.Response:
        assert self.debug is not None
        text = request.query.get("limit", str(DECISIONS_DEFAULT))
        if not text.isdigit() or not 1 <= int(text) <= DECISIONS_MAX:
            return _status(400, f"limit {text[:40]!r}: must be a whole number from 1 to {DECISIONS_MAX}")
        return web.json_response(self.debug.decision_history(int(text)))

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _handler(self, checks: dict[str, Check]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            lines = []
            failed = False
            for name, check in checks.items():
                try:
                    why = check()
                except Exception as exc:  # a check must answer, not crash the endpoint
                    why = f"check raised {exc!r}"
                if why is None:
                    lines.append(f"[+]{name} ok")
                else:
                    failed = True
                    lines.append(f"[-]{name} failed: {why}")
            path = request.path.lstrip("/")
            if failed:
                lines.append(f"{path} check failed")
                return web.Response(status=500, text="\n".join(lines) + "\n")
            if "verbose" in request.query:
                lines.append(f"{path} check passed")
                return web.Response(text="\n".join(lines) + "\n")
            return web.Response(text="ok")

        return handle

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
