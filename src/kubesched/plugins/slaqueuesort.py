"""SLAQueueSort: the active queue pops pods by SLA tier first, then as PrioritySort does
(article 003, §2.4).

A pod's tier is the value of its `labelKey` label (`sla`), looked up in `tiers` (gold 100,
silver 50, bronze 10 by default) without regard to case; a pod without the label, or with a tier
not listed, gets `defaultTierValue` (0). Pods pop by higher tier value, then higher priority,
then earlier queue time, then creation order: the sort key is (-tier, -priority, timestamp, seq).

The tier only orders the queue: it does not change preemption, which still follows priority.
Give gold pods a higher PriorityClass too if they should also preempt.

kube-scheduler keeps one queue for all profiles, so every profile must name the same queueSort
plugin with the same args (configuration validation refuses anything else). To use this one, it
replaces PrioritySort in each profile:

    plugins:
      queueSort:
        enabled: [{name: SLAQueueSort}]
        disabled: [{name: "*"}]
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, QueueSortPlugin
from kubesched.plugins.helper.args import check_label_key

NAME = "SLAQueueSort"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SLAQueueSortArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    label_key: str = Field("sla", alias="labelKey")
    tiers: dict[str, int] = Field(default_factory=lambda: {"gold": 100, "silver": 50, "bronze": 10})
    default_tier_value: int = Field(0, alias="defaultTierValue")

    @field_validator("label_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        return check_label_key(value)

    @field_validator("tiers")
    @classmethod
    def _check_tiers(cls, value: dict[str, int]) -> dict[str, int]:
        seen: dict[str, str] = {}
        for tier in value:
            if not tier or len(tier) > 63 or not _LABEL_VALUE.match(tier):
                raise ValueError(
                    f"{tier!r} is not a label value (1-63 alphanumeric characters, '-', '_' or '.', "
                    "starting and ending with an alphanumeric character)"
                )
            if tier.lower() in seen:
                raise ValueError(f"{tier!r} and {seen[tier.lower()]!r} are the same tier (tiers ignore case)")
            seen[tier.lower()] = tier
        return value


class SLAQueueSort(Plugin, QueueSortPlugin):
    name: ClassVar[str] = NAME
    Args = SLAQueueSortArgs

    def __init__(self, args: SLAQueueSortArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or SLAQueueSortArgs(), handle)
        a: SLAQueueSortArgs = self.args
        self._key = a.label_key
        self._tiers = {t.lower(): v for t, v in a.tiers.items()}
        self._default = a.default_tier_value

    def tier(self, labels: dict[str, str]) -> int:
        value = labels.get(self._key)
        if value is None:
            return self._default
        return self._tiers.get(value.lower(), self._default)

    def sort_key(self, qpi: Any) -> tuple[int, int, float, int]:
        pi = qpi.pi
        return (-self.tier(pi.labels), -pi.priority, qpi.timestamp, pi.seq)
