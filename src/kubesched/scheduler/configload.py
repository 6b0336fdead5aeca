"""Loading a configuration file as `simulate` and `run` do: parsed (kubesched.config.parse), then the
scheduler built once, so that a configuration accepted here cannot fail later.

`build_check` builds the scheduler the way `simulate` and `run` do (every profile's framework,
every plugin constructed with its args, the shared queue) on a virtual clock with no cluster, so
an error a plugin's constructor raises becomes a ConfigError naming the plugin and its args.
It lives above both the config module and the scheduler (which reads the config), so that
parsing a configuration never imports the scheduler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.config.errors import ConfigError
from kubesched.config.parse import default_config, parse_config_text, read_config
from kubesched.config.types import SchedulerConfig
from kubesched.framework.registry import Registry
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.core import Scheduler
from kubesched.usage.service import UsageTransport

__all__ = ["build_check", "load_config", "load_config_text"]


def load_config(path: str | Path | None, registry: Registry | None = None) -> SchedulerConfig:
    """Read a configuration file; None gives the default configuration."""
    cfg = read_config(path, registry)
    if path is not None:
        # What simulate and run do next: build the scheduler. A plugin that cannot start fails here.
        try:
            build_check(cfg, registry)
        except ConfigError as exc:
            raise exc.in_file(str(path)) from None
    return cfg


def load_config_text(text: str, source: str, registry: Registry | None = None) -> SchedulerConfig:
    """A configuration file's text, as load_config loads the file (what `run` watches for changes)."""
    cfg = parse_config_text(text, source, registry)
    try:
        build_check(cfg, registry)
    except ConfigError as exc:
        raise exc.in_file(source) from None
    return cfg


class _NoCluster:
    """A backend for a scheduler that is built and dropped: nothing is ever bound or deleted."""

    async def bind(self, pi: Any, node: str) -> None:
        return None

    async def delete_pod(self, pi: Any, reason: str) -> None:
        return None

    def record_event(self, pi: Any, type_: str, reason: str, message: str) -> None:
        return None

    def set_unschedulable(self, pi: Any, message: str, reason: str = "Unschedulable") -> None:
        return None

    def set_nominated_node(self, pi: Any, node: str | None) -> None:
        return None

    def set_annotations(self, pi: Any, annotations: dict[str, str]) -> None:
        return None

    async def create_resource_claim(self, claim: Any) -> Any:
        return claim

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        return None

    async def set_extended_resource_claim_status(self, pi: Any, status: Any) -> None:
        return None

    def set_pod_group_condition(self, pg: Any, condition: Any) -> None:
        return None

    async def update_persistent_volume(self, pv: Any) -> Any:
        return pv

    async def update_persistent_volume_claim(self, pvc: Any) -> Any:
        return pvc

    async def get_resource_claim(self, namespace: str, name: str) -> Any:
        raise LookupError(f"ResourceClaim {namespace}/{name}: no cluster")

    async def update_resource_claim(self, claim: Any) -> Any:
        return claim

    async def update_resource_claim_status(self, claim: Any) -> Any:
        return claim

    async def unreserve_resource_claim(self, claim: Any, pod_uid: str) -> None:
        return None

    def connect(self, scheduler: Any) -> None:
        return None


class _NoPrometheus:
    """A transport that is never asked: the virtual clock never runs the first refresh."""

    def __init__(self, address: str) -> None:
        self.address = address

    async def query(self, promql: str) -> list[Any]:
        return []

    async def close(self) -> None:
        return None


def _scheduler(cfg: SchedulerConfig, registry: Registry | None) -> Scheduler:
    return Scheduler(cfg, _NoCluster(), VirtualClock(), registry=registry, shared=[UsageTransport(lambda a: _NoPrometheus(a.address))])


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return text or type(exc).__name__


def build_check(cfg: SchedulerConfig, registry: Registry | None = None) -> None:
    """Raises ConfigError if the scheduler cannot be built from `cfg` as simulate and run build it."""
    try:
        _scheduler(cfg, registry)
        return
    except ConfigError:
        raise
    except Exception as exc:  # any plugin's constructor, any library below it
        failure: BaseException = exc
    # Find the plugin: construct each one alone, with a handle of a scheduler known to build.
    probe = _scheduler(default_config(), None)
    handle = next(iter(probe.frameworks.values()))
    for i, profile in enumerate(cfg.profiles):
        for name, cls in profile.plugin_classes.items():
            try:
                cls(profile.plugin_args.get(name), handle)
            except Exception as exc:
                where = profile.args_paths.get(name) or f"profiles[{i}].plugins"
                raise ConfigError(f"{where}: plugin {name!r} cannot be built from this configuration: {_reason(exc)}") from None
    raise ConfigError(f"configuration: the scheduler cannot be built from it: {_reason(failure)}")
