"""Profiles, ElasticQuotas and events for tests of scheduler-plugins' Coscheduling and
CapacityScheduling (and TenantOvercommit) on simulated clusters run by the real scheduler
(unit.simkit); pods and PodGroups come from the builders (make_pod(...).xk8s_group(name))."""

from __future__ import annotations

from typing import Any

API = "scheduling.x-k8s.io/v1alpha1"


def quota(namespace: str, low: dict[str, str] | None, high: dict[str, str] | None, *, name: str = "quota",
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if low is not None:
        spec["min"] = low
    if high is not None:
        spec["max"] = high
    return {"apiVersion": API, "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}}, "spec": spec}


def coscheduling(args: dict[str, Any] | None = None, name: str = "default-scheduler") -> dict[str, Any]:
    """The profile scheduler-plugins documents for Coscheduling."""
    profile: dict[str, Any] = {
        "schedulerName": name,
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return profile


def capacity(name: str = "default-scheduler", *, overcommit: bool = False) -> dict[str, Any]:
    """The profile scheduler-plugins documents for CapacityScheduling (and TenantOvercommit's filter)."""
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                               "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]}}
    if overcommit:
        plugins["multiPoint"]["enabled"].append({"name": "TenantOvercommit"})
        plugins["filter"] = {"disabled": [{"name": "NodeResourcesFit"}]}
    return {"schedulerName": name, "plugins": plugins}


def overcommit(name: str = "default-scheduler") -> dict[str, Any]:
    """TenantOvercommit in place of NodeResourcesFit's fit check, nothing else changed."""
    return {"schedulerName": name, "plugins": {"multiPoint": {"enabled": [{"name": "TenantOvercommit"}]},
                                               "filter": {"disabled": [{"name": "NodeResourcesFit"}]}}}


def notes(sim: Any, pod_key: str, reason: str = "FailedScheduling") -> list[str]:
    """The simulated cluster's events about a pod, in order."""
    return [e.message for e in sim.cluster.events if e.pod == pod_key and e.reason == reason]
