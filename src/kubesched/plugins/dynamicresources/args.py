"""DynamicResourcesArgs (kubescheduler.config.k8s.io/v1), as kube-scheduler v1.37.2 defaults and
validates them: two metav1.Durations, written as Go durations.

- filterTimeout (DRASchedulerFilterTimeout, beta and on): how long Filter may search one node's
  devices; default 10s; 0 turns the limit off; negative is refused.
- bindingTimeout (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus, on): how long
  PreBind waits for devices' binding conditions; default 10m0s; under one second is refused.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.api.durations import GoDurationError, format_go_duration_ns, parse_go_duration_ns

FILTER_TIMEOUT_DEFAULT = "10s"
BINDING_TIMEOUT_DEFAULT = "10m0s"
_SECOND_NS = 1_000_000_000


def _duration_ns(field: str, value: object) -> int:
    """A metav1.Duration as JSON holds it: a string time.ParseDuration reads."""
    if not isinstance(value, str):
        raise ValueError(f"{field}: must be a duration string such as \"10s\", got {value!r}")
    try:
        return parse_go_duration_ns(value)
    except GoDurationError as exc:
        raise ValueError(f"{field}: {exc}") from None


def _checked(field: str, value: object, default: str, least_ns: int, refusal: str) -> str:
    """The duration as Go prints it (the default when absent); refused below `least_ns` with
    kube's field error."""
    if value is None:
        return default
    ns = _duration_ns(field, value)
    shown = format_go_duration_ns(ns)
    if ns < least_ns:
        raise ValueError(f'{field}: Invalid value: "{shown}": {refusal}')
    return shown


class DynamicResourcesArgs(BaseModel):
    """kube's DynamicResourcesArgs. Stored as Go's printing of the duration (what `config dump`
    and /configz show, as kube's do); `filter_timeout_seconds` and `binding_timeout_seconds` are
    what the plugin reads."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    filter_timeout: str = Field(default=FILTER_TIMEOUT_DEFAULT, alias="filterTimeout")
    binding_timeout: str = Field(default=BINDING_TIMEOUT_DEFAULT, alias="bindingTimeout")

    @field_validator("filter_timeout", mode="before")
    @classmethod
    def _check_filter_timeout(cls, value: object) -> str:
        return _checked("filterTimeout", value, FILTER_TIMEOUT_DEFAULT, 0, "must be zero or positive")

    @field_validator("binding_timeout", mode="before")
    @classmethod
    def _check_binding_timeout(cls, value: object) -> str:
        return _checked("bindingTimeout", value, BINDING_TIMEOUT_DEFAULT, _SECOND_NS, "must be at least 1 second")

    @property
    def filter_timeout_seconds(self) -> float:
        return parse_go_duration_ns(self.filter_timeout) / _SECOND_NS

    @property
    def binding_timeout_seconds(self) -> float:
        return parse_go_duration_ns(self.binding_timeout) / _SECOND_NS
