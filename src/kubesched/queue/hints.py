"""Which pods an event may help: the plugins' queueing hints (kube's QueueingHintMap and
isPodWorthRequeuing).

A pod rejected by some plugins is retried on an event only if one of those plugins registered
for the event and its hint says Queue. A plugin without a hint for a registered event always
says Queue; an event no rejecting plugin registered for moves nothing."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.podinfo import PodInfo
from kubesched.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint, QueueingHintFn

log = logging.getLogger(__name__)


class Strategy(enum.IntEnum):
    """Where an event sends a pod (kube's queueingStrategy); higher wins."""

    SKIP = 0  # it stays where it is
    AFTER_BACKOFF = 1  # to backoffQ while its backoff lasts, else activeQ


@dataclass(frozen=True, slots=True)
class Registration:
    plugin: str
    event: ClusterEvent
    hint: QueueingHintFn | None


Registrations = Mapping[str, Sequence[ClusterEventWithHint | ClusterEvent]]


class HintMap:
    """Every profile's registrations: profile (schedulerName) -> plugin -> registered events."""

    def __init__(self, by_profile: Mapping[str, Registrations]) -> None:
        self._by_profile: dict[str, list[Registration]] = {}
        for profile, plugins in by_profile.items():
            regs = self._by_profile.setdefault(profile, [])
            for plugin, events in plugins.items():
                for item in events:
                    if isinstance(item, ClusterEvent):
                        item = ClusterEventWithHint(item)
                    regs.append(Registration(plugin, item.event, item.hint))
        self._interest: dict[ClusterEvent, bool] = {}
        self._relevant: dict[tuple[str, frozenset[str], ClusterEvent], tuple[Registration, ...]] = {}

    def of_interest(self, event: ClusterEvent) -> bool:
        """Whether any plugin of any profile registered for the event (kube's isEventOfInterest)."""
        hit = self._interest.get(event)
        if hit is None:
            hit = event.wildcard or any(r.event.covers(event) for regs in self._by_profile.values() for r in regs)
            self._interest[event] = hit
        return hit

    def registered(self, profile: str, plugin: str, event: ClusterEvent) -> bool:
        """Whether the plugin registered for the event (a wildcard event concerns every plugin):
        a pod gated by it is moved by nothing else (kube's GatingPluginEvents)."""
        return event.wildcard or bool(self.relevant(profile, frozenset((plugin,)), event))

    def relevant(self, profile: str, rejectors: frozenset[str], event: ClusterEvent) -> tuple[Registration, ...]:
        """The registrations of the rejecting plugins that match the event, in registration order."""
        key = (profile, rejectors, event)
        hit = self._relevant.get(key)
        if hit is None:
            hit = tuple(
                r for r in self._by_profile.get(profile, ()) if r.plugin in rejectors and r.event.covers(event)
            )
            self._relevant[key] = hit
        return hit

    def strategy(
        self, pi: PodInfo, rejectors: frozenset[str], event: ClusterEvent, old: Any, new: Any
    ) -> Strategy:
        """Whether the event may make the pod schedulable (kube's isPodWorthRequeuing)."""
        if not rejectors:
            return Strategy.AFTER_BACKOFF  # it failed with an error: any event may help
        if event.wildcard:
            # A wildcard naming one pod (an activation of that pod) concerns only that pod.
            if isinstance(new, PodInfo) and new.uid != pi.uid:
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        profile = pi.scheduler_name
        if profile not in self._by_profile:
            return Strategy.AFTER_BACKOFF
        for reg in self.relevant(profile, rejectors, event):
            if self.ask(reg, pi, event, old, new) is QueueingHint.Queue:
                return Strategy.AFTER_BACKOFF
        return Strategy.SKIP

    @staticmethod
    def ask(reg: Registration, pi: PodInfo, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
        if reg.hint is None:
            return QueueingHint.Queue
        try:
            return reg.hint(pi, old, new)
        except Exception:  # a hint that fails counts as Queue, as an error does in kube
            log.exception("queueing hint of plugin %s failed for event %s and pod %s", reg.plugin, event.label, pi.key)
            return QueueingHint.Queue
