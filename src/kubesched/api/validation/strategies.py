"""Update strategies of Deployments and StatefulSets, and a StatefulSet's PVC retention policy,
validated as apps validation does after apps/v1 defaulting.

The simulator never rolls anything out, but the API server refuses a Deployment whose
strategy is `type: Bogus` or whose maxSurge is `"x"`, so the loader must refuse it too. Values
the API server echoes as its internal Go structs (`{"Type":"Bogus","RollingUpdate":null}`) are
rendered the same way, Go field names and all.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from kubesched.api.objects import IntOrString
from kubesched.api.validation.field import FieldIssue, forbidden, go_json, invalid, not_supported

NONNEGATIVE = "must be greater than or equal to 0"
_PERCENT = re.compile(r"[0-9]+%")
_ATOI = re.compile(r"[+-]?[0-9]{1,18}")
_PERCENT_ERROR = ("a valid percent string must be a numeric string followed by an ending '%' "
                  "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
DEFAULT_SURGE = "25%"


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class RollingUpdateDeployment(_Obj):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None


class DeploymentStrategy(_Obj):
    type: str = ""
    rolling_update: RollingUpdateDeployment | None = None


class RollingUpdateStatefulSet(_Obj):
    partition: Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)] | None = None
    # maxUnavailable is dropped by the API server while the MaxUnavailableStatefulSet gate is off
    # (kube 1.34's default), so it is neither read nor validated here.


class StatefulSetStrategy(_Obj):
    type: str = ""
    rolling_update: RollingUpdateStatefulSet | None = None


class RetentionPolicy(_Obj):
    when_deleted: str = ""
    when_scaled: str = ""


def percent_value(value: IntOrString | None) -> int | None:
    """The number of a valid percent string, else None (getPercentValue)."""
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return int(value[:-1])
    return None


def _int_value(value: IntOrString | None) -> int:
    """getIntOrPercentValue: a percent's number, an int, or a numeric string's value (else 0)."""
    pct = percent_value(value)
    if pct is not None:
        return pct
    if isinstance(value, int):
        return value
    # strconv.Atoi of a string that is not a percent; what does not parse counts as 0.
    return int(value) if value is not None and _ATOI.fullmatch(value) else 0


def positive_int_or_percent(value: IntOrString | None, path: str) -> list[FieldIssue]:
    if isinstance(value, str):
        return [] if _PERCENT.fullmatch(value) else [invalid(path, value, _PERCENT_ERROR)]
    return [invalid(path, value, NONNEGATIVE)] if value is not None and value < 0 else []


def not_over_100_percent(value: IntOrString | None, path: str) -> list[FieldIssue]:
    pct = percent_value(value)
    return [invalid(path, value, "must not be greater than 100%")] if pct is not None and pct > 100 else []


def validate_deployment_strategy(strategy: DeploymentStrategy | None) -> list[FieldIssue]:
    """spec.strategy after defaulting: type RollingUpdate, maxUnavailable and maxSurge 25%."""
    strategy = strategy or DeploymentStrategy()
    kind = strategy.type or "RollingUpdate"
    rolling = strategy.rolling_update
    if kind == "Recreate":
        if rolling is not None:
            return [forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind != "RollingUpdate":
        # Not defaulted: unset int-or-strings are the zero value, 0.
        shown_rolling = None if rolling is None else {"MaxUnavailable": _zero(rolling.max_unavailable),
                                                      "MaxSurge": _zero(rolling.max_surge)}
        rendered = go_json({"Type": kind, "RollingUpdate": shown_rolling})
        return [FieldIssue("spec.strategy", f'Unsupported value: {rendered}: supported values: "Recreate", "RollingUpdate"')]
    rolling = rolling or RollingUpdateDeployment()
    unavailable = DEFAULT_SURGE if rolling.max_unavailable is None else rolling.max_unavailable
    surge = DEFAULT_SURGE if rolling.max_surge is None else rolling.max_surge
    path = "spec.strategy.rollingUpdate"
    out = positive_int_or_percent(unavailable, f"{path}.maxUnavailable")
    out.extend(positive_int_or_percent(surge, f"{path}.maxSurge"))
    if _int_value(unavailable) == 0 and _int_value(surge) == 0:
        out.append(invalid(f"{path}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0"))
    out.extend(not_over_100_percent(unavailable, f"{path}.maxUnavailable"))
    return out


def _zero(value: IntOrString | None) -> IntOrString:
    return 0 if value is None else value


def validate_progress_deadline(progress_deadline: int | None, min_ready: int) -> list[FieldIssue]:
    """spec.progressDeadlineSeconds (defaulted to 600) must be past minReadySeconds."""
    value = DEFAULT_PROGRESS_DEADLINE_SECONDS if progress_deadline is None else progress_deadline
    path = "spec.progressDeadlineSeconds"
    out = [invalid(path, value, NONNEGATIVE)] if value < 0 else []
    if value <= min_ready:
        out.append(invalid(path, value, "must be greater than minReadySeconds"))
    return out


def validate_statefulset_strategy(strategy: StatefulSetStrategy | None) -> list[FieldIssue]:
    """spec.updateStrategy after defaulting: type RollingUpdate with partition 0."""
    strategy = strategy or StatefulSetStrategy()
    kind = strategy.type or "RollingUpdate"
    rolling = strategy.rolling_update
    if not strategy.type and rolling is None:
        rolling = RollingUpdateStatefulSet()
    shown_rolling = None if rolling is None else {"Partition": rolling.partition or 0, "MaxUnavailable": None}
    path = "spec.updateStrategy"
    if kind == "OnDelete":
        if rolling is not None:
            return [invalid(f"{path}.rollingUpdate", go_json(shown_rolling), "only allowed for updateStrategy 'RollingUpdate'",
                            rendered=True)]
        return []
    if kind != "RollingUpdate":
        return [invalid(path, go_json({"Type": kind, "RollingUpdate": shown_rolling}), "must be 'RollingUpdate' or 'OnDelete'",
                        rendered=True)]
    if rolling is not None and rolling.partition is not None and rolling.partition < 0:
        return [invalid(f"{path}.rollingUpdate.partition", rolling.partition, NONNEGATIVE)]
    return []


def validate_retention_policy(policy: RetentionPolicy | None) -> list[FieldIssue]:
    """spec.persistentVolumeClaimRetentionPolicy: each of its two fields Retain (the default) or Delete."""
    if policy is None:
        return []
    out = []
    for name, value in (("whenDeleted", policy.when_deleted), ("whenScaled", policy.when_scaled)):
        if (value or "Retain") not in ("Retain", "Delete"):
            out.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{name}", value, ["Retain", "Delete"]))
    return out
