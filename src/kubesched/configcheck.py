"""The checks `load_config` runs after decoding, so that a configuration it accepts cannot fail later.

- `check_numbers`: every number in a plugin's validated args is finite and fits an int64, and no
  list or mapping in them holds more than MAX_ARGS_ITEMS entries. Each plugin validates its own
  ranges; this catches what a plugin's author did not think of (`.inf`, `.nan`, `2**80` in a dict of
  weights, 50,000 HotValue windows that every scoring cycle would walk) before numpy or a timer
  overflows on it, or a run crawls, mid-run.
- `build_check`: builds the scheduler the way `simulate` and `run` do (every profile's framework,
  every plugin constructed with its args, the shared queue) on a virtual clock with no cluster, so
  an error a plugin's constructor raises becomes a ConfigError naming the plugin and its args.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from kubesched.configmerge import ConfigError
from kubesched.configvalues import INT64

if TYPE_CHECKING:
    from kubesched.config import SchedulerConfig
    from kubesched.framework.registry import Registry

# Entries in one list or mapping of plugin args (a node-affinity term's values, HotValue's windows,
# extra resources): far above what any configuration needs, low enough that per-cycle loops stay fast.
MAX_ARGS_ITEMS = 1000


def check_numbers(value: Any, path: str, show: Any = repr) -> None:
    """Raises ConfigError at the first non-finite float, integer beyond int64 or container of more
    than MAX_ARGS_ITEMS entries under `value`, in field order; `show` renders a bad value."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        children: list[tuple[Any, str]] = []
        if isinstance(item, BaseModel):
            for name, info in type(item).model_fields.items():
                children.append((getattr(item, name), f"{where}.{info.alias or name}"))
        elif isinstance(item, (Mapping, list, tuple, set, frozenset)):
            if len(item) > MAX_ARGS_ITEMS:
                # kube's field.TooMany words.
                raise ConfigError(f"{where}: Too many: {len(item)}: must have at most {MAX_ARGS_ITEMS} items")
            if isinstance(item, Mapping):
                children = [(v, f"{where}.{k if isinstance(k, str) and k.isidentifier() else show(k)}") for k, v in item.items()]
            else:
                children = [(v, f"{where}[{i}]") for i, v in enumerate(item)]
        elif isinstance(item, bool):
            continue
        elif isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(f"{where}: Invalid value: {show(item)}: must be a finite number")
        elif isinstance(item, int) and not INT64[0] <= item <= INT64[1]:
            raise ConfigError(f"{where}: Invalid value: {show(item)}: must fit in a 64-bit integer")
        stack.extend(reversed(children))


class _NoCluster:
    """A backend for a scheduler that is built and dropped: nothing is ever bound or deleted."""

    async def bind(self, pi: Any, node: str) -> None:
        return None

    async def delete_pod(self, pi: Any, reason: str) -> None:
        return None

    def record_event(self, pi: Any, type_: str, reason: str, message: str) -> None:
        return None

    def set_unschedulable(self, pi: Any, message: str) -> None:
        return None

    def set_nominated_node(self, pi: Any, node: str | None) -> None:
        return None


class _NoPrometheus:
    """A transport that is never asked: the virtual clock never runs the first refresh."""

    def __init__(self, address: str) -> None:
        self.address = address

    async def query(self, promql: str) -> list[Any]:
        return []

    async def close(self) -> None:
        return None


def _scheduler(cfg: SchedulerConfig, registry: Registry | None) -> Any:
    # Imported here: the scheduler imports the config module, which calls this one.
    from kubesched.clock import VirtualClock
    from kubesched.scheduler import Scheduler

    return Scheduler(cfg, _NoCluster(), VirtualClock(), registry=registry, prometheus=lambda a, t: _NoPrometheus(a))


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
    from kubesched.config import default_config
    from kubesched.handle import FrameworkHandle

    probe = _scheduler(default_config(), None)
    handle: Any = FrameworkHandle(probe, next(iter(probe.frameworks.values())))
    for i, profile in enumerate(cfg.profiles):
        for name, cls in profile.plugin_classes.items():
            try:
                cls(profile.plugin_args.get(name), handle)
            except Exception as exc:
                where = profile.args_paths.get(name) or f"profiles[{i}].plugins"
                raise ConfigError(f"{where}: plugin {name!r} cannot be built from this configuration: {_reason(exc)}") from None
    raise ConfigError(f"configuration: the scheduler cannot be built from it: {_reason(failure)}")
