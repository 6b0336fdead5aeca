"""A loaded configuration written back as `kubescheduler.config.k8s.io/v1`, every default filled
in: what /configz serves (as kube components serve theirs) and what configuration digests hash.

Each profile's plugins are given per extension point as the scheduler runs them (multiPoint
already expanded, defaults merged, disabled plugins gone), so what it shows is what runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import msgspec
from pydantic import BaseModel

from kubesched.api.durations import format_go_duration
from kubesched.config.extensions import EXT_KIND
from kubesched.config.types import API_VERSION, KIND, SchedulerConfig


def config_to_v1(cfg: SchedulerConfig) -> dict[str, Any]:
    le, cc = cfg.leader_election, cfg.client_connection
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_go_duration(le.lease_duration),
            "renewDeadline": format_go_duration(le.renew_deadline),
            "retryPeriod": format_go_duration(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "enableProfiling": cfg.enable_profiling,
        "enableContentionProfiling": cfg.enable_contention_profiling,
        "percentageOfNodesToScore": cfg.percentage_of_nodes_to_score or 0,
        "podInitialBackoffSeconds": int(cfg.pod_initial_backoff_seconds),
        "podMaxBackoffSeconds": int(cfg.pod_max_backoff_seconds),
        "delayCacheUntilActive": cfg.delay_cache_until_active,
        "profiles": [],
    }
    for profile in cfg.profiles:
        plugins: dict[str, Any] = {}
        for point, refs in profile.plugins.items():
            if refs:
                plugins[point] = {
                    "enabled": [{"name": r.name, **({"weight": r.weight} if point == "score" else {})} for r in refs]
                }
        entry: dict[str, Any] = {"schedulerName": profile.scheduler_name, "plugins": plugins}
        if profile.percentage_of_nodes_to_score is not None:
            entry["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
        entry["pluginConfig"] = [{"name": name, "args": plain(args)} for name, args in sorted(profile.plugin_args.items())]
        out["profiles"].append(entry)
    return out


def kubesched_to_v1alpha1(cfg: SchedulerConfig) -> dict[str, Any]:
    """The KubeschedConfiguration document in force (defaults filled in)."""
    doc = cfg.kubesched.as_v1alpha1()
    assert doc["kind"] == EXT_KIND
    return doc


def configuration_digest(config: SchedulerConfig, sources: Mapping[str, str] | None = None) -> str:
    """A short hash of what a configuration means (every default filled in, formatting and
    comments left out) and of the source of the user plugins it loads: equal digests schedule
    alike, so a reload that changes neither is no change."""
    body: dict[str, Any] = {
        "config": config_to_v1(config),
        "kubesched": kubesched_to_v1alpha1(config),
        "sources": dict(sorted((sources or {}).items())),
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plain(value: Any) -> Any:
    """Plugin args as JSON data: pydantic models by their aliases, the API objects some args hold
    (NodeAffinity's addedAffinity, say) as the API writes them."""
    if isinstance(value, BaseModel):
        return {(info.alias or name): plain(getattr(value, name)) for name, info in type(value).model_fields.items()}
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
