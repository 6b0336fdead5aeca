"""A profile as the framework runs it: its plugins per extension point in call order, their
weights, classes and validated args (kube's KubeSchedulerProfile once its plugin sets are
merged and expanded). The configuration (kubesched.config) builds profiles from a file; the
runtime (framework.runtime) builds a Framework from one."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from kubesched.framework.interface import Plugin


@dataclass
class PluginRef:
    """A plugin at one extension point. `name` is as configured (a registered name or
    `module:Class`); `weight` is the resolved score weight at "score" and 0 elsewhere."""

    name: str
    weight: int = 0


@dataclass
class Profile:
    scheduler_name: str
    # Extension point -> plugins in call order, fully resolved. Every point of interface.EXTENSION_POINTS
    # is present (possibly empty).
    plugins: dict[str, list[PluginRef]]
    # Validated args for every plugin used in the profile that has an `Args` model (its
    # defaults when no pluginConfig names it). Plugins that take no args are absent.
    plugin_args: dict[str, BaseModel]
    # None: use the configuration's global value.
    percentage_of_nodes_to_score: int | None = None
    # The class behind each plugin name used in the profile, as resolved by the registry.
    plugin_classes: dict[str, type[Plugin]] = field(default_factory=dict)
    # Where each plugin's args were written (profiles[i].pluginConfig[j].args), for messages.
    args_paths: dict[str, str] = field(default_factory=dict)

    def names(self, point: str) -> list[str]:
        return [ref.name for ref in self.plugins.get(point, ())]
