"""Reloading the configuration of a running scheduler, and rolling it back.

A reload, whether the file changed, SIGHUP asked for one, or a simulated scenario changes the
configuration at a given time, goes through `apply_text`:

1. The new text is checked completely first, off the scheduling loop where there is one: user
   plugin modules whose source changed are re-imported, then the file is parsed and the whole
   scheduler built once on an empty cluster, as `kubesched config validate` does. Settings that
   only take effect at a start (leaderElection, clientConnection, delayCacheUntilActive) must be
   unchanged. Anything wrong refuses the reload: the running configuration stays, and the refusal
   is logged, posted as a Warning event, shown by /readyz and counted.
2. A configuration that means what the running one means (same digest: same effective settings,
   same plugin sources) changes nothing.
3. Otherwise its frameworks are built beside the running ones (unchanged plugins carried over) and
   put in force between two scheduling cycles (Scheduler.activate); the SLO guard watches it for
   its window. The previous generation is kept, warm, until the new one has passed: a rollback
   puts it back as it was, and the file is left as it is (the two then differ, which /configz,
   /readyz and a metric say) until the file changes again, which is evaluated afresh.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.config.dump import config_to_v1, configuration_digest, kubesched_to_v1alpha1
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config_text
from kubesched.config.types import SchedulerConfig
from kubesched.framework.registry import Registry
from kubesched.infra.clock import first_set
from kubesched.observe.metrics import LabelledCounter
from kubesched.plugins.registry import in_tree_registry
from kubesched.scheduler.configload import build_check
from kubesched.scheduler.generation import Generation, plugin_modules, retire
from kubesched.scheduler.reload import modules
from kubesched.scheduler.reload.guard import SLOGuard
from kubesched.scheduler.reload.source import ConfigFile, digest_text
from kubesched.scheduler.reload.target import ReloadTarget

log = logging.getLogger(__name__)

# Sections of the configuration a running scheduler cannot change: they set up the connection to
# the API server and leadership before scheduling starts.
RESTART_ONLY = ("leaderElection", "clientConnection", "delayCacheUntilActive")
HISTORY = 50
# The GIL hand-over interval while a check runs in its thread. At Python's 5 ms, the loop waits up to
# 5 ms each time it wants the GIL back from the busy checking thread, several times per pod: pods
# arriving during a check waited 4-5 times longer than otherwise (test_reload, 21 profiles).
CHECK_SWITCH_INTERVAL = 0.0005

APPLIED = "applied"
UNCHANGED = "unchanged"
REFUSED = "refused"
ROLLED_BACK = "rolled_back"
CONFIRMED = "confirmed"

# Event reasons (the scheduler posts them about its own pod, or its Lease).
RELOADED = "ConfigurationReloaded"
RELOAD_FAILED = "ConfigurationReloadFailed"
ROLLED_BACK_REASON = "ConfigurationRolledBack"

PostEvent = Callable[[str, str, str], None]  # type, reason, message


@dataclass(slots=True)
class ReloadRecord:
    time: float  # on the scheduler's clock
    result: str  # applied, unchanged, refused, rolled_back, confirmed
    origin: str
    generation: int  # the generation in force afterwards
    digest: str  # the configuration digest in force afterwards
    message: str = ""
    seconds: float = 0.0  # how long the reload took, the check included
    paused: float = 0.0  # how long scheduling stood still for it (building and activating)

    def as_dict(self) -> dict[str, Any]:
        return {"time": self.time, "result": self.result, "origin": self.origin, "generation": self.generation,
                "digest": self.digest, "message": self.message, "seconds": round(self.seconds, 6),
                "pausedSeconds": round(self.paused, 6)}


@dataclass(slots=True)
class _Prepared:
    """A configuration text checked and ready to build: or why it cannot be."""

    origin: str
    config: SchedulerConfig | None = None
    registry: Registry | None = None
    digest: str = ""
    problem: str = ""


class ReloadController:
    def __init__(
        self,
        scheduler: ReloadTarget,
        *,
        path: str | Path | None = None,
        registry_factory: Callable[[], Registry] = in_tree_registry,
        post_event: PostEvent | None = None,
        on_profiles_added: Callable[[set[str]], None] | None = None,
    ) -> None:
        """`path`: the file to watch (None: changes come through apply_text only, as in a
        simulation). `on_profiles_added`: told the names of profiles a change brings, so the
        backend delivers their pending pods, which it has not been handing over."""
        self.scheduler = scheduler
        self.clock = scheduler.clock
        self.file = ConfigFile(path) if path is not None else None
        self.registry_factory = registry_factory
        self.post_event = post_event or (lambda type_, reason, message: None)
        self.on_profiles_added = on_profiles_added or (lambda names: None)
        self.good: Generation = scheduler.generation  # the last known-good generation
        self.probation: Generation | None = None  # in force, still watched by the guard
        self.history: deque[ReloadRecord] = deque(maxlen=HISTORY)
        self.problem: str | None = None  # why the file is not what runs, for /readyz
        self.file_digest = ""  # the digest of the file's text last evaluated
        self.running_text_digest = ""  # the digest of the text the running generation came from
        self._wake = asyncio.Event()
        self._forced = False
        self._held: list[Generation] = [self.good]  # generations whose plugins may still be in use
        self.guard = SLOGuard(scheduler, self._breached, self._passed)
        self.results = LabelledCounter(
            "kubesched_config_reloads_total",
            "Configuration reloads by result: applied, unchanged (same meaning), refused (invalid, or a setting "
            "that needs a restart).",
            ["result"],
        )
        self.rollbacks = LabelledCounter(
            "kubesched_config_rollbacks_total",
            "Configurations the SLO guard rolled back, by the objective they broke.",
            ["objective"],
        )
        self._last_success = 0.0
        self._register_metrics()
        modules.digests(plugin_modules(scheduler.config))  # the user modules' sources as imported

    def start_from_file(self, text: str) -> None:
        """The file's text the scheduler was started with: later changes are compared with it."""
        self.file_digest = self.running_text_digest = digest_text(text)
        if self.file is not None:
            self.file.read()  # remembers what the path leads to now
        self._last_success = time.time()

    # --- the loop of `kubesched run` -------------------------------------------------------------

    def request(self) -> None:
        """SIGHUP: look at the file now, and evaluate it even if it did not change."""
        self._forced = True
        self._wake.set()

    async def watch(self, stop: asyncio.Event) -> None:
        """Looks at the file every reload.pollInterval (of the configuration in force), and at once
        on request, until `stop`; the guard's sampling runs meanwhile."""
        self.guard.start()
        while not stop.is_set():
            interval = self.scheduler.config.kubesched.reload.poll_interval
            await first_set(self._wake, stop, timeout=interval if interval > 0 else None)
            if stop.is_set():
                return
            forced, self._forced = self._forced, False
            self._wake.clear()
            await self.check_file(force=forced)

    async def check_file(self, *, force: bool = False) -> ReloadRecord | None:
        """Reloads if the file changed (or `force`); None when there was nothing to evaluate."""
        if self.file is None or (not force and not self.file.touched()):
            return None
        origin = str(self.file.path)
        try:
            text, digest = self.file.read()
        except ConfigError as exc:
            return self._refuse(origin, str(exc), time.perf_counter())
        if not force and digest == self.file_digest:
            return None  # the same text under a new inode or time (a ConfigMap resync)
        self.file_digest = digest
        started = time.perf_counter()
        # The check builds a whole scheduler: off the loop, so that scheduling goes on meanwhile.
        # One check at a time (this coroutine is the only caller that awaits it).
        switch = sys.getswitchinterval()
        sys.setswitchinterval(CHECK_SWITCH_INTERVAL)
        try:
            prepared = await asyncio.to_thread(self._prepare, text, origin)
        finally:
            sys.setswitchinterval(switch)
        return self._apply(prepared, digest, started)

    # --- one reload ------------------------------------------------------------------------------

    def apply_text(self, text: str, origin: str) -> ReloadRecord:
        """Checks and applies a configuration text now, on this thread (a simulation's change)."""
        started = time.perf_counter()
        self.file_digest = digest = digest_text(text)
        return self._apply(self._prepare(text, origin), digest, started)

    def _prepare(self, text: str, origin: str) -> _Prepared:
        """Everything that needs no scheduler state: safe on another thread."""
        running = self.scheduler.config
        try:
            modules.refresh(plugin_modules(running))
            registry = self.registry_factory()
            cfg = parse_config_text(text, origin, registry)
            build_check(cfg, registry)
            self._check_restart_only(cfg, running)
            modules.refresh(plugin_modules(cfg))  # a module first named now was imported just now
        except (ConfigError, modules.ModuleError) as exc:
            return _Prepared(origin, problem=str(exc))
        except Exception as exc:  # nothing a file holds may crash the scheduler
            log.exception("checking the configuration from %s failed", origin)
            return _Prepared(origin, problem=f"cannot check the configuration: {type(exc).__name__}: {exc}")
        digest = configuration_digest(cfg, modules.digests(plugin_modules(cfg)))
        return _Prepared(origin, cfg, registry, digest)

    @staticmethod
    def _check_restart_only(new: SchedulerConfig, running: SchedulerConfig) -> None:
        before, after = config_to_v1(running), config_to_v1(new)
        changed = [key for key in RESTART_ONLY if before.get(key) != after.get(key)]
        if changed:
            fields: list[str] = []
            for key in changed:
                a, b = before.get(key), after.get(key)
                if isinstance(a, dict) and isinstance(b, dict):
                    fields.extend(f"{key}.{k}" for k in a if a.get(k) != b.get(k))
                else:
                    fields.append(key)
            raise ConfigError(
                f"{', '.join(fields)}: changed, but takes effect only when kubesched restarts; the running configuration "
                f"is kept (restore the running value, or restart kubesched to apply it)"
            )

    def _apply(self, prepared: _Prepared, text_digest: str, started: float) -> ReloadRecord:
        if prepared.config is None or prepared.registry is None:
            return self._refuse(prepared.origin, prepared.problem, started)
        current = self.scheduler.generation
        if prepared.digest == current.digest:
            self.running_text_digest = text_digest
            self.problem = None
            return self._record(UNCHANGED, prepared.origin, "the configuration means what the running one means", started)
        paused = time.perf_counter()
        try:
            gen = self.scheduler.build_generation(prepared.config, prepared.registry, digest=prepared.digest,
                                                  origin=prepared.origin)
        except Exception as exc:  # a plugin that builds on an empty cluster but not on this one
            return self._refuse(prepared.origin, f"a plugin cannot be built on the running cluster: {type(exc).__name__}: {exc}",
                                started)
        self._put_in_force(gen)
        paused = time.perf_counter() - paused
        self.running_text_digest = text_digest
        self.problem = None
        self._last_success = time.time()
        if self.guard.watch(gen):
            self.probation = gen  # the known-good generation stays, warm, for a rollback
        else:
            self.good, self.probation = gen, None
        self._retire_unused()
        message = f"generation {gen.number} ({gen.digest}) in force"
        if self.probation is not None:
            message += f"; the SLO guard watches it for {self.scheduler.config.kubesched.slo_guard.window:g}s"
        record = self._record(APPLIED, prepared.origin, message, started, paused)
        log.info("configuration reloaded from %s: %s (%.1f ms, scheduling paused %.2f ms)", prepared.origin, message,
                 record.seconds * 1000, paused * 1000)
        self.post_event("Normal", RELOADED, f"Configuration from {prepared.origin} reloaded: {message}")
        return record

    def _put_in_force(self, gen: Generation) -> None:
        old = self.scheduler.activate(gen)
        added = set(gen.frameworks) - set(old.frameworks)
        if added:
            self.on_profiles_added(added)

    def _refuse(self, origin: str, problem: str, started: float) -> ReloadRecord:
        gen = self.scheduler.generation
        problem = problem.removeprefix(f"{origin}: ")  # errors about the file name it first: once is enough
        self.problem = f"reload from {origin} refused, still running generation {gen.number} ({gen.digest}): {problem}"
        record = self._record(REFUSED, origin, problem, started)
        log.error("configuration reload refused: %s", self.problem)
        self.post_event("Warning", RELOAD_FAILED, f"Configuration from {origin} refused, the running one is kept: {problem}")
        return record

    def _record(self, result: str, origin: str, message: str, started: float, paused: float = 0.0) -> ReloadRecord:
        gen = self.scheduler.generation
        record = ReloadRecord(self.clock.now(), result, origin, gen.number, gen.digest, message,
                              time.perf_counter() - started, paused)
        self.history.append(record)
        if result in (APPLIED, UNCHANGED, REFUSED):
            self.results.inc((result,))
        return record

    # --- the guard's verdicts --------------------------------------------------------------------

    def _breached(self, objective: str, detail: str) -> None:
        """The generation under watch broke an objective: the known-good one takes over again."""
        bad = self.scheduler.generation
        good = self.good
        started = time.perf_counter()
        self._put_in_force(good)
        self.probation = None
        self._retire_unused()
        self.rollbacks.inc((objective,))
        message = (f"generation {bad.number} ({bad.digest}) from {bad.origin} broke the SLO objective {objective}: {detail}; "
                   f"rolled back to generation {good.number} ({good.digest})")
        self.problem = f"the running configuration is not the file's: {message}"
        self._record(ROLLED_BACK, bad.origin, message, started)
        log.error("configuration rolled back: %s", message)
        self.post_event("Warning", ROLLED_BACK_REASON, message)

    def _passed(self, gen: Generation) -> None:
        self.good, self.probation = gen, None
        self._retire_unused()
        self._record(CONFIRMED, gen.origin, f"generation {gen.number} ({gen.digest}) kept its SLO objectives: known-good",
                     time.perf_counter())
        log.info("configuration generation %d (%s) passed the SLO guard's window: known-good", gen.number, gen.digest)

    def _retire_unused(self) -> None:
        """Closes what neither the generation in force nor the known-good one holds any more."""
        keep = [self.scheduler.generation, self.good]
        for gen in self._held:
            if all(gen is not k for k in keep):
                retire(gen, keep)
        self._held = keep

    # --- what it reports ---------------------------------------------------------------------------

    @property
    def differs(self) -> bool:
        """Whether the running configuration is not what the file (or the last change) says."""
        return self.problem is not None

    def configz(self) -> dict[str, Any]:
        """/configz: the configuration in force, as kube components serve theirs, and kubesched's
        own state of it."""
        gen = self.scheduler.generation
        return {
            "componentconfig": config_to_v1(gen.config),
            "kubesched": {
                **kubesched_to_v1alpha1(gen.config),
                "status": {
                    "generation": gen.number,
                    "digest": gen.digest,
                    "origin": gen.origin,
                    "knownGood": {"generation": self.good.number, "digest": self.good.digest},
                    "underGuard": self.probation is not None,
                    "fileDiffers": self.differs,
                    "problem": self.problem or "",
                    "history": [r.as_dict() for r in self.history],
                },
            },
        }

    def _register_metrics(self) -> None:
        metrics = self.scheduler.metrics
        metrics.counters.extend([self.results, self.rollbacks])
        metrics.add_gauge(
            "kubesched_config_info",
            "The configuration in force: its digest (effective settings and user plugin sources) and generation.",
            ["digest", "generation"],
            lambda: {(self.scheduler.generation.digest, str(self.scheduler.generation.number)): 1.0},
        )
        metrics.add_gauge(
            "kubesched_config_last_reload_successful",
            "1 if the configuration in force is the one last asked for (the file's), 0 after a refused reload or a rollback.",
            [],
            lambda: {(): 0.0 if self.differs else 1.0},
        )
        metrics.add_gauge(
            "kubesched_config_last_reload_success_timestamp_seconds",
            "When a configuration was last put in force (or started with), in seconds since the epoch.",
            [],
            lambda: {(): self._last_success},
        )
        metrics.add_gauge(
            "kubesched_config_under_guard",
            "1 while the SLO guard watches a reloaded configuration, else 0.",
            [],
            lambda: {(): 1.0 if self.probation is not None else 0.0},
        )
