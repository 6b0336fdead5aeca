"""A registry of declared features and the sets of them a pod needs (component-helpers'
nodedeclaredfeatures Framework, FeatureMapper and FeatureSet).

The registry orders its features by name; a set of them is written as kube writes its bitmap, one
character per registered feature in that order ("1" for a member), which is also the pod's
scheduling signature for the feature (kube's SignPod). A feature stops being required once the
scheduler's version is past the feature's last relevant one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kubesched.api.objects import PodSpec
from kubesched.plugins.nodedeclaredfeatures.features import ALL_FEATURES, Feature, Version

KUBE_VERSION: Version = (1, 37, 2)  # the scheduler's own version, as kube-scheduler v1.37.2 reads its own
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version:
    """"1.38.0" (or "v1.38.0") as a version; ValueError naming the text otherwise."""
    m = _VERSION.fullmatch(text)
    if m is None:
        raise ValueError(f"could not parse {text!r} as a version: want major.minor.patch")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@dataclass(frozen=True, slots=True)
class FeatureSet:
    """Some of a registry's features: their names, in the registry's order, and kube's bitmap text."""

    names: tuple[str, ...]
    flags: str

    def __bool__(self) -> bool:
        return bool(self.names)


class FeatureRegistry:
    """The features a scheduler knows, by name."""

    def __init__(self, features: Iterable[Feature]) -> None:
        self.features = tuple(sorted(features, key=lambda f: f.name.encode()))
        self.names = tuple(f.name for f in self.features)
        self._index = {name: i for i, name in enumerate(self.names)}
        self.empty = FeatureSet((), "0" * len(self.names))  # what most pods need: nothing

    def set_of(self, names: Iterable[str]) -> FeatureSet:
        """The set of these features; ValueError for a name the registry does not know."""
        chosen = set()
        for name in names:
            if name not in self._index:
                raise ValueError(f"unknown feature {name}")
            chosen.add(self._index[name])
        return FeatureSet(tuple(self.names[i] for i in sorted(chosen)),
                          "".join("1" if i in chosen else "0" for i in range(len(self.names))))

    def required_for_scheduling(self, spec: PodSpec, version: Version | None) -> FeatureSet:
        """The features scheduling a pod with this spec needs of its node, for a scheduler at `version`."""
        if version is None:
            raise ValueError("target version cannot be nil")
        wanted = [f.name for f in self.features
                  if (f.max_version is None or version <= f.max_version) and f.needed_for_scheduling(spec)]
        return self.set_of(wanted) if wanted else self.empty


DEFAULT_REGISTRY = FeatureRegistry(ALL_FEATURES)
