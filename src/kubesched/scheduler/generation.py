"""A configuration generation: the frameworks built from one configuration, which the scheduler
swaps between two scheduling cycles (a reload, or a rollback) while its cache and queue live on.

A generation is built beside the one running, from the same collaborators (framework.services):
the same cache, queue hooks, shared objects and cluster writes, so that a plugin made of shared
state (a usage provider, say) finds it warm. A plugin instance whose class and args did not
change is carried over whole. What a generation no longer uses is closed when it is retired.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kubesched.framework.runtime import Framework

if TYPE_CHECKING:
    from kubesched.config.extensions import ShadowProfile
    from kubesched.config.types import SchedulerConfig
    from kubesched.framework.registry import Registry
    from kubesched.framework.services import Services

log = logging.getLogger(__name__)


@runtime_checkable
class ClosablePlugin(Protocol):
    """A plugin that holds something beyond its generation (a usage provider, a timer): told
    when the last generation using the instance is retired."""

    def close(self) -> None: ...


@dataclass(slots=True)
class Shadow:
    """A shadow profile's framework and what it shadows (config.extensions.ShadowProfile)."""

    framework: Framework
    settings: ShadowProfile


@dataclass(slots=True, eq=False)
class Generation:
    number: int
    config: SchedulerConfig
    # The live profiles' frameworks by schedulerName, and the shadows by the live profile they shadow.
    frameworks: dict[str, Framework]
    shadows: dict[str, list[Shadow]] = field(default_factory=dict)
    digest: str = ""  # config.dump.configuration_digest of config (and the user plugins' sources)
    origin: str = ""  # where it came from: a file, a ConfigMap of a simulation, "rollback of ..."

    def plugins(self) -> set[int]:
        """The ids of every plugin instance the generation holds."""
        every = [*self.frameworks.values(), *(s.framework for shadows in self.shadows.values() for s in shadows)]
        return {id(p) for fwk in every for p in fwk.instances.values()}

    def adopt(self) -> None:
        """Each framework becomes its plugins' handle again (see Framework.adopt)."""
        for fwk in self.frameworks.values():
            fwk.adopt()
        for shadows in self.shadows.values():
            for shadow in shadows:
                shadow.framework.adopt()


def build_generation(
    number: int,
    config: SchedulerConfig,
    registry: Registry,
    services: Services,
    previous: Generation | None = None,
    *,
    digest: str = "",
    origin: str = "",
) -> Generation:
    """The frameworks of `config`, built beside `previous` (whose unchanged plugin instances and
    sampling positions carry over). Raises what a plugin's constructor raises. Nothing of
    `previous` changes: a carried-over plugin serves the new frameworks once the generation is
    activated (Generation.adopt)."""
    shadow_of = {s.scheduler_name: s for s in config.kubesched.shadow_profiles}
    frameworks: dict[str, Framework] = {}
    shadows: dict[str, list[Shadow]] = {}
    old = _frameworks_by_name(previous)
    built: list[Framework] = []
    try:
        for profile in config.profiles:
            before = old.get(profile.scheduler_name)
            fwk = Framework(
                profile,
                registry,
                services,
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                reuse=before.instances if before is not None else None,
            )
            built.append(fwk)
            if before is not None:
                fwk.next_start_row = before.next_start_row
            settings = shadow_of.get(profile.scheduler_name)
            if settings is None:
                frameworks[profile.scheduler_name] = fwk
            else:
                shadows.setdefault(settings.shadow_of, []).append(Shadow(fwk, settings))
    except Exception:
        for fwk in built:
            fwk.close_new()
        raise
    return Generation(number, config, frameworks, shadows, digest, origin)


def _frameworks_by_name(gen: Generation | None) -> dict[str, Framework]:
    if gen is None:
        return {}
    out = dict(gen.frameworks)
    for shadows in gen.shadows.values():
        for shadow in shadows:
            out[shadow.framework.name] = shadow.framework
    return out


def retire(gone: Generation, keep: Iterable[Generation]) -> list[str]:
    """Closes the plugin instances of `gone` that no generation in `keep` holds; returns their
    names. A plugin whose close fails is logged, never raised: the scheduler goes on."""
    kept: set[int] = set()
    for gen in keep:
        kept |= gen.plugins()
    closed: list[str] = []
    seen: set[int] = set()
    for fwk in [*gone.frameworks.values(), *(s.framework for shadows in gone.shadows.values() for s in shadows)]:
        for name, plugin in fwk.instances.items():
            if id(plugin) in kept or id(plugin) in seen:
                continue
            seen.add(id(plugin))
            if isinstance(plugin, ClosablePlugin):
                try:
                    plugin.close()
                except Exception as exc:  # a user's plugin: report, carry on
                    log.error("closing plugin %s of configuration generation %d failed: %s", name, gone.number, exc)
                closed.append(name)
    return closed


def plugin_modules(config: SchedulerConfig) -> list[str]:
    """The modules of the user plugins (`module:Class`) a configuration names."""
    out: set[str] = set()
    for profile in config.profiles:
        for name in profile.plugin_classes:
            if ":" in name:
                out.add(name.partition(":")[0])
    return sorted(out)
