"""Pod fields the scheduler does not read but the API server validates on create: pull and
termination-message policies, environment variable names, volumes and their mounts, DNS policy,
hostname and subdomain. A manifest the API server would refuse for them must not simulate.
"""

from __future__ import annotations

from kubesched.api.objects import Container, PodSpec
from kubesched.api.validation.field import FieldIssue, duplicate, invalid, not_found, not_supported, required
from kubesched.api.validation.meta import dns1123_label
from kubesched.api.validation.storage import validate_volume_sources

PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
ENV_NAME_ERROR = "a valid environment variable name must consist only of printable ASCII characters other than '='"


def validate_pod_fields(spec: PodSpec, path: str) -> list[FieldIssue]:
    """The pod-level fields; containers' through validate_container_fields."""
    out: list[FieldIssue] = []
    seen: set[str] = set()
    for i, volume in enumerate(spec.volumes):
        at = f"{path}.volumes[{i}].name"
        if not volume.name:
            out.append(required(at))
        else:
            out.extend(invalid(at, volume.name, msg) for msg in dns1123_label(volume.name))
            if volume.name in seen:
                out.append(duplicate(at, volume.name))
        seen.add(volume.name)
    out.extend(validate_volume_sources(spec, path))
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        out.append(not_supported(f"{path}.dnsPolicy", spec.dns_policy, DNS_POLICIES))
    if spec.dns_policy == "None" and spec.dns_config is None:
        out.append(required(f"{path}.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"))
    for name, value in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        if value:
            out.extend(invalid(f"{path}.{name}", value, msg) for msg in dns1123_label(value))
    return out


def validate_container_fields(c: Container, at: str, volumes: set[str]) -> list[FieldIssue]:
    """One container's (at `at`), `volumes` the names of the pod's volumes."""
    out: list[FieldIssue] = []
    if c.image_pull_policy and c.image_pull_policy not in PULL_POLICIES:
        out.append(not_supported(f"{at}.imagePullPolicy", c.image_pull_policy, PULL_POLICIES))
    if c.termination_message_policy and c.termination_message_policy not in TERMINATION_MESSAGE_POLICIES:
        out.append(not_supported(f"{at}.terminationMessagePolicy", c.termination_message_policy, TERMINATION_MESSAGE_POLICIES))
    for j, env in enumerate(c.env):
        where = f"{at}.env[{j}].name"
        if not env.name:
            out.append(required(where))
        elif "=" in env.name or not all(" " <= ch <= "~" for ch in env.name):
            out.append(invalid(where, env.name, ENV_NAME_ERROR))
    paths: set[str] = set()
    for j, mount in enumerate(c.volume_mounts):
        where = f"{at}.volumeMounts[{j}]"
        if not mount.name:
            out.append(required(f"{where}.name"))
        elif mount.name not in volumes:
            out.append(not_found(f"{where}.name", mount.name))
        if not mount.mount_path:
            out.append(required(f"{where}.mountPath"))
        elif mount.mount_path in paths:
            out.append(invalid(f"{where}.mountPath", mount.mount_path, "must be unique"))
        paths.add(mount.mount_path)
    return out
