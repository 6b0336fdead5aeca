"""The reusable Kubernetes API layer: connection config, an asyncio API client, reflectors, leader election.

No scheduling logic lives here; `kubesched.backends.kube` builds on it.
"""

from kubesched.client.api import ApiClient, ApiConnectionError, ApiError, Status, StreamStalled
from kubesched.client.config import (
    ConnectionConfig,
    ExecCredential,
    ExecProvider,
    KubeConfigError,
    load_connection,
    load_incluster,
    load_kubeconfig,
)
from kubesched.client.lease import LeaderElectionRecord, LeaderElector
from kubesched.client.ratelimit import TokenBucket, backoff
from kubesched.client.watch import Reflector, WatchHandler, object_key

__all__ = [
    "ApiClient",
    "ApiConnectionError",
    "ApiError",
    "ConnectionConfig",
    "ExecCredential",
    "ExecProvider",
    "KubeConfigError",
    "LeaderElectionRecord",
    "LeaderElector",
    "Reflector",
    "Status",
    "StreamStalled",
    "TokenBucket",
    "WatchHandler",
    "backoff",
    "load_connection",
    "load_incluster",
    "load_kubeconfig",
    "object_key",
]
