"""kubesched's own settings: a second document in the configuration file, beside the
KubeSchedulerConfiguration, for what kube-scheduler has no field for.

```yaml
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [...]
---
apiVersion: kubesched.io/v1alpha1
kind: KubeschedConfiguration
reload: {pollInterval: 2s}             # how often `kubesched run` looks at its file
sloGuard: {window: 5m, ...}            # what a reload must not make worse, or it is rolled back
shadowProfiles:                        # profiles that decide beside a live one, binding nothing
- schedulerName: candidate             # a profile of the KubeSchedulerConfiguration above
  shadowOf: default-scheduler
```

The first document stays a file kube-scheduler itself reads; the second is optional and checked
as strictly (unknown fields refused, every value in range), with messages naming its fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kubesched.api.durations import Seconds

EXT_API_VERSION = "kubesched.io/v1alpha1"
EXT_KIND = "KubeschedConfiguration"

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

# Looking at a file more often than twice a second only costs; a ConfigMap's mount is updated
# by the kubelet about once a minute anyway.
MIN_POLL_SECONDS = 0.5


class ReloadSettings(BaseModel):
    model_config = _CONFIG

    # How often the file is checked for a change (SIGHUP checks at once); 0 turns watching off.
    poll_interval: Seconds = Field(2.0, alias="pollInterval")

    @model_validator(mode="after")
    def _check(self) -> ReloadSettings:
        if 0 < self.poll_interval < MIN_POLL_SECONDS:
            raise ValueError(f"pollInterval: must be 0 (off) or at least {MIN_POLL_SECONDS}s")
        return self


class GuardObjectives(BaseModel):
    """What a reload may make worse, each against the same measure over the same span before it."""

    model_config = _CONFIG

    # Share of scheduling attempts that ended Unschedulable (0..1): may rise by this much.
    max_unschedulable_ratio_increase: float = Field(0.25, alias="maxUnschedulableRatioIncrease", ge=0, le=1)
    # Share of attempts that ended in a scheduler error.
    max_error_ratio_increase: float = Field(0.05, alias="maxErrorRatioIncrease", ge=0, le=1)
    # Share of binding cycles that failed.
    max_bind_failure_ratio_increase: float = Field(0.05, alias="maxBindFailureRatioIncrease", ge=0, le=1)
    # Pending pods (not gated): may grow by this percentage of their number at the reload, and
    # at least by minPendingPodsIncrease, before the objective counts as broken.
    max_pending_pods_increase_percent: float = Field(100.0, alias="maxPendingPodsIncreasePercent", ge=0, le=10000)
    min_pending_pods_increase: int = Field(20, alias="minPendingPodsIncrease", ge=0, le=1_000_000)
    # The 90th percentile of how long pending pods have waited since their first attempt.
    max_pending_age_increase: Seconds = Field(120.0, alias="maxPendingAgeIncrease")


class SLOGuardSettings(BaseModel):
    model_config = _CONFIG

    enabled: bool = True
    # How long after a reload the guard watches; the new configuration is known-good after it.
    window: Seconds = 300.0
    # How often it evaluates (and samples the signals) meanwhile.
    interval: Seconds = 10.0
    # No verdict on a ratio from fewer attempts than this since the reload.
    min_attempts: int = Field(20, alias="minAttempts", ge=1, le=1_000_000)
    objectives: GuardObjectives = Field(default_factory=GuardObjectives)

    @model_validator(mode="after")
    def _check(self) -> SLOGuardSettings:
        if self.interval <= 0:
            raise ValueError("interval: must be greater than 0")
        if self.window < self.interval:
            raise ValueError("window: must be at least one interval long")
        if self.window / self.interval > 10_000:
            raise ValueError("interval: at most 10000 evaluations a window (make it longer, or the window shorter)")
        return self


class ShadowProfile(BaseModel):
    """A profile of the KubeSchedulerConfiguration that schedules no pod of its own: for a sample
    of the pods `shadowOf` schedules, it decides on the same snapshot and its decision is compared."""

    model_config = _CONFIG

    scheduler_name: str = Field(alias="schedulerName", min_length=1)
    shadow_of: str = Field(alias="shadowOf", min_length=1)
    # Share of the live profile's scheduling cycles the shadow also decides, in percent.
    sampling_percentage: float = Field(10.0, alias="samplingPercentage", gt=0, le=100)
    # The most the shadow may add to scheduling time, in percent of the live cycles' own time;
    # past it, sampled cycles are skipped (and counted) until the share is back under.
    max_overhead_percentage: float = Field(10.0, alias="maxOverheadPercentage", gt=0, le=1000)


class KubeschedSettings(BaseModel):
    model_config = _CONFIG

    reload: ReloadSettings = Field(default_factory=ReloadSettings)
    slo_guard: SLOGuardSettings = Field(default_factory=SLOGuardSettings, alias="sloGuard")
    shadow_profiles: list[ShadowProfile] = Field(default_factory=list, alias="shadowProfiles", max_length=100)

    def shadow(self, scheduler_name: str) -> ShadowProfile | None:
        return next((s for s in self.shadow_profiles if s.scheduler_name == scheduler_name), None)

    def as_v1alpha1(self) -> dict[str, Any]:
        """The document as a user would write it, every default filled in."""
        return {"apiVersion": EXT_API_VERSION, "kind": EXT_KIND, **self.model_dump(mode="json", by_alias=True)}
