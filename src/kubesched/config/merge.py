"""How kube-scheduler turns a profile's plugin configuration into one plugin list per extension point.

Two steps, as in kube-scheduler:
1. `merge_plugin_set` (v1 defaulting): the default MultiPoint set is merged with the user's
   multiPoint set. Defaults that the user disabled (or all of them, with "*") drop out; a default
   the user enables again is replaced in place by the user's entry (keeping the default's
   position, taking the user's weight); the user's other plugins follow in their order.
2. `expand_profile` (framework construction): each extension point gets the plugins the user
   enabled there explicitly, plus every MultiPoint plugin whose class implements that point,
   unless the point disables it or disables "*". A MultiPoint plugin also enabled explicitly at
   the point takes the explicit entry (and its weight); such overrides run first, then the
   MultiPoint plugins, then the remaining explicit ones.
Score weights come from the explicit score entries first, then MultiPoint; unset or 0 means 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.config.errors import ConfigError
from kubesched.framework.interface import EXTENSION_POINTS, Plugin
from kubesched.framework.types import MAX_NODE_SCORE

# kube's framework.MaxTotalScore: the sum of weight * MaxNodeScore over a profile's score plugins
# must fit, or a node's total could wrap around.
MAX_TOTAL_SCORE = 2**63 - 1




@dataclass(frozen=True)
class Entry:
    """One enabled plugin as configured; `path` is where the user wrote it ("" for a default)."""

    name: str
    weight: int | None = None
    path: str = ""


@dataclass
class PluginSet:
    enabled: list[Entry] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def merge_plugin_set(defaults: PluginSet, custom: PluginSet) -> PluginSet:
    disabled = [*custom.disabled, *defaults.disabled]
    custom_by_name = {e.name: i for i, e in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Entry] = []
    if "*" not in disabled:
        for entry in defaults.enabled:
            if entry.name in disabled:
                continue
            index = custom_by_name.get(entry.name)
            if index is not None:
                entry = custom.enabled[index]
                replaced.add(index)
            enabled.append(entry)
    # A plugin the user lists twice stays twice here; expansion reports it as a double registration.
    enabled.extend(e for i, e in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled, disabled)


def expand_profile(
    points: Mapping[str, PluginSet], multi: PluginSet, classes: Mapping[str, type[Plugin]], path: str
) -> dict[str, list[tuple[str, int]]]:
    """Extension point -> (plugin name, weight) in call order; the weight is the resolved score
    weight at "score" and 0 elsewhere. `classes` must hold every enabled name."""
    result: dict[str, list[tuple[str, int]]] = {}
    weights = _score_weights(points["score"], multi, classes)
    # A placement scorer weighs what it weighs as a Score plugin, or what it is given.
    placement_weights = {**{e.name: e.weight or 1 for e in [*multi.enabled, *points["placementScore"].enabled]}, **weights}
    for point, interfaces in EXTENSION_POINTS.items():
        spec = points[point]
        explicit: list[str] = []
        for entry in spec.enabled:
            if not issubclass(classes[entry.name], interfaces):
                raise ConfigError(f"{entry.path}: plugin {entry.name!r} does not implement the {point} extension point")
            if entry.name in explicit:
                raise ConfigError(f"{entry.path}: plugin {entry.name!r} is enabled twice at {point}")
            explicit.append(entry.name)

        overrides: set[str] = set()
        from_multi: list[str] = []
        if "*" not in spec.disabled:
            for entry in multi.enabled:
                if not issubclass(classes[entry.name], interfaces) or entry.name in spec.disabled:
                    continue
                if entry.name in explicit:
                    overrides.add(entry.name)
                elif entry.name in from_multi:
                    where = entry.path or f"{path}.multiPoint"
                    raise ConfigError(f"{where}: plugin {entry.name!r} is enabled twice in multiPoint")
                else:
                    from_multi.append(entry.name)
        order = [n for n in explicit if n in overrides] + from_multi + [n for n in explicit if n not in overrides]
        if point == "placementScore":
            result[point] = [(n, placement_weights.get(n, 1)) for n in order]
        else:
            result[point] = [(n, weights.get(n, 1) if point == "score" else 0) for n in order]
    total = 0
    for _, weight in result["score"]:
        total += weight * MAX_NODE_SCORE
        if total > MAX_TOTAL_SCORE:
            # kube-scheduler's own words when building the framework.
            raise ConfigError(f"{path}.score: total score of Score plugins could overflow")
    return result


def _score_weights(score: PluginSet, multi: PluginSet, classes: Mapping[str, type[Plugin]]) -> dict[str, int]:
    weights: dict[str, int] = {}
    for entry in [*score.enabled, *multi.enabled]:
        if entry.name in weights or not issubclass(classes[entry.name], EXTENSION_POINTS["score"]):
            continue
        weights[entry.name] = entry.weight or 1
    return weights

