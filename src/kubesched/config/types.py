"""A KubeSchedulerConfiguration as the scheduler reads it (kube's apis/config types): the
top-level settings, leader election, the client connection and the profiles (framework.profile),
with kubesched's own settings (config.extensions) beside them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.config.extensions import KubeschedSettings
from kubesched.framework.profile import Profile

API_VERSION = "kubescheduler.config.k8s.io/v1"


KIND = "KubeSchedulerConfiguration"


DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    # Not kube-scheduler's "kube-scheduler": sharing its Lease would make the two schedulers
    # take turns instead of running side by side.
    resource_name: str = "kubesched"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    content_type: str = "application/vnd.kubernetes.protobuf"
    accept_content_types: str = ""


@dataclass
class SchedulerConfig:
    profiles: list[Profile]
    parallelism: int = 16
    # 0 means adaptive (kube's default); a profile's own value overrides it.
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    # Always empty: extenders are checked as kube checks them, then refused (not supported yet).
    extenders: list[dict[str, Any]] = field(default_factory=list)
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False
    # The optional second document (config.extensions): reload, the SLO guard, shadow profiles.
    kubesched: KubeschedSettings = field(default_factory=KubeschedSettings)

    def profile(self, scheduler_name: str) -> Profile | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)

    @property
    def live_profiles(self) -> list[Profile]:
        """The profiles that schedule pods: every one but the shadows."""
        shadows = {s.scheduler_name for s in self.kubesched.shadow_profiles}
        return [p for p in self.profiles if p.scheduler_name not in shadows]
