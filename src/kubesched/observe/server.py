"""/healthz, /livez, /readyz and /metrics, as kube-scheduler serves them.

Each health endpoint runs named checks and answers 200 "ok" when all pass, 500
otherwise; `?verbose` lists every check as `[+]name ok` / `[-]name failed: why`,
the format of Kubernetes components. /metrics is the Prometheus text exposition.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)

# A check returns None when healthy, or the reason it is not.
Check = Callable[[], str | None]


class HealthServer:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
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
        app = web.Application()
        app.router.add_get("/healthz", self._handler(self.live_checks))
        app.router.add_get("/livez", self._handler(self.live_checks))
        app.router.add_get("/readyz", self._handler(self.ready_checks))
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self, host: str, port: int) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        addresses = self._runner.addresses
        self.port = addresses[0][1] if addresses else port
        log.info("serving /healthz /livez /readyz /metrics on %s:%s", host, self.port)

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
