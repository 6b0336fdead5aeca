"""Pod fields the scheduler never reads but the API server validates on create: container probes
and lifecycle handlers, pod and container securityContext IDs, spec.os, and the service account's
name. The typed PodSpec (api.objects) does not carry them, so they are decoded here from the raw
spec, into structs of their own: a manifest the API server would refuse for them must not simulate.

Rules and texts follow pkg/apis/core/validation (Kubernetes 1.34) after defaulting: a probe's
timeoutSeconds, periodSeconds, successThreshold and failureThreshold of 0 are defaulted (1, 10,
1, 3) before validation, and so is an httpGet's empty path ("/") and scheme ("HTTP").
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from kubesched.api.objects import Int32, Int64
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, go_json, invalid, not_supported, required
from kubesched.api.validation.meta import name_is_dns_subdomain
from kubesched.api.validation.pod import port_name_errors

PORT_RANGE_ERROR = "must be between 1 and 65535, inclusive"
ID_RANGE_ERROR = "must be between 0 and 2147483647, inclusive"
HTTP_SCHEMES = ["HTTP", "HTTPS"]
SECCOMP_TYPES = ["Localhost", "RuntimeDefault", "Unconfined"]
FS_GROUP_CHANGE_POLICIES = ["Always", "OnRootMismatch"]
SUPPLEMENTAL_GROUPS_POLICIES = ["Merge", "Strict"]
PROC_MOUNTS = ["Default", "Unmasked"]
HEADER_NAME = re.compile(r"[-A-Za-z0-9]+")
HEADER_ERROR = ("a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
                "regex used for validation is '[-A-Za-z0-9]+')")
SYSCTL_FORMAT = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
SYSCTL_NAME = re.compile(SYSCTL_FORMAT)
# The sysctls a pod sharing the host's IPC namespace may not set (the host's would change).
IPC_SYSCTLS = ("kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue.")
# What a pod with os.name windows may not set, in its securityContext and its containers'.
WINDOWS_POD_FORBIDDEN = ("seLinuxOptions", "seccompProfile", "appArmorProfile", "fsGroup", "fsGroupChangePolicy", "sysctls",
                         "runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy")
WINDOWS_CONTAINER_FORBIDDEN = ("seLinuxOptions", "seccompProfile", "appArmorProfile", "capabilities", "readOnlyRootFilesystem",
                               "privileged", "allowPrivilegeEscalation", "procMount", "runAsUser", "runAsGroup")
OS_NAMES = ["linux", "windows"]


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class ExecAction(_Obj):
    command: list[str] = msgspec.field(default_factory=list)


class HTTPHeader(_Obj):
    name: str = ""
    value: str = ""


class HTTPGetAction(_Obj):
    http_headers: list[HTTPHeader] = msgspec.field(default_factory=list)
    path: str = ""
    port: Int32 | str = 0
    host: str = ""
    scheme: str = ""


class TCPSocketAction(_Obj):
    port: Int32 | str = 0
    host: str = ""


class GRPCAction(_Obj):
    port: Int32 = 0
    service: str | None = None


class SleepAction(_Obj):
    seconds: Int64 = 0


class Probe(_Obj):
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: Int32 = 0
    timeout_seconds: Int32 = 0
    period_seconds: Int32 = 0
    success_threshold: Int32 = 0
    failure_threshold: Int32 = 0
    termination_grace_period_seconds: Int64 | None = None


class LifecycleHandler(_Obj):
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None


class Lifecycle(_Obj):
    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None


class SeccompProfile(_Obj):
    type: str = ""
    localhost_profile: str | None = None


class AppArmorProfile(_Obj):
    type: str = ""
    localhost_profile: str | None = None


class Sysctl(_Obj):
    name: str = ""
    value: str = ""


class Capabilities(_Obj):
    add: list[str] | None = None
    drop: list[str] | None = None


class SecurityContext(_Obj):
    """The fields of a container's or a pod's securityContext validated here (a container's has
    no fsGroup etc.: strict field validation refuses those before)."""
    run_as_user: Int64 | None = None
    run_as_group: Int64 | None = None
    fs_group: Int64 | None = None
    supplemental_groups: list[Int64] = msgspec.field(default_factory=list)
    fs_group_change_policy: str | None = None
    supplemental_groups_policy: str | None = None
    seccomp_profile: SeccompProfile | None = None
    proc_mount: str | None = None
    privileged: bool | None = None
    allow_privilege_escalation: bool | None = None
    capabilities: Capabilities | None = None
    # Only echoed, in the API server's rendering of the whole context (see _go_context).
    se_linux_options: dict[str, Any] | None = msgspec.field(default=None, name="seLinuxOptions")
    windows_options: dict[str, Any] | None = None
    run_as_non_root: bool | None = None
    read_only_root_filesystem: bool | None = None
    app_armor_profile: AppArmorProfile | None = None
    sysctls: list[Sysctl] = msgspec.field(default_factory=list)


class Container(_Obj):
    restart_policy: str | None = None
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: Lifecycle | None = None
    security_context: SecurityContext | None = None


class PodOS(_Obj):
    name: str = ""


class PodSpec(_Obj):
    containers: list[Container] = msgspec.field(default_factory=list)
    init_containers: list[Container] = msgspec.field(default_factory=list)
    security_context: SecurityContext | None = None
    os: PodOS | None = None
    termination_grace_period_seconds: Int64 | None = None
    host_users: bool | None = None
    host_network: bool = False
    host_ipc: bool = msgspec.field(default=False, name="hostIPC")
    service_account_name: str = ""
    # The deprecated alias: defaulting copies it to serviceAccountName when that is empty.
    service_account: str = ""


def decode_spec(raw: Any) -> PodSpec:
    """The fields of this module from a raw pod spec; msgspec.ValidationError on a wrong type."""
    if not isinstance(raw, dict):
        return PodSpec()  # the typed decode of the whole pod reports a spec that is not a mapping
    return msgspec.convert(raw, PodSpec, strict=False)


def validate_security_spec(spec: PodSpec, path: str) -> list[FieldIssue]:
    """The probes, lifecycle handlers, securityContexts and OS of a decoded spec at `path`."""
    out: list[FieldIssue] = []
    user_namespace = spec.host_users is False
    if spec.security_context is not None:
        out.extend(_security_context(spec.security_context, f"{path}.securityContext", user_namespace))
        out.extend(_sysctls(spec, f"{path}.securityContext.sysctls"))
    out.extend(_os_fields(spec, path))
    account = spec.service_account_name or spec.service_account
    if account:
        out.extend(invalid(f"{path}.serviceAccountName", account, msg) for msg in name_is_dns_subdomain(account))
    if spec.os is not None:
        if not spec.os.name:
            out.append(required(f"{path}.os.name", "cannot be empty"))
        elif spec.os.name not in OS_NAMES:
            out.append(not_supported(f"{path}.os", spec.os.name, OS_NAMES))
    # A preStop sleep may not outlast the grace period: defaulted to 30s, a negative one is made 1s.
    grace = spec.termination_grace_period_seconds
    grace = 30 if grace is None else (1 if grace < 0 else grace)
    for i, c in enumerate(spec.init_containers):
        at = f"{path}.initContainers[{i}]"
        if c.restart_policy == "Always":
            # A sidecar: probed and hooked like a regular container.
            out.extend(_container(c, at, grace, user_namespace))
            continue
        for name, value in (("lifecycle", c.lifecycle), ("livenessProbe", c.liveness_probe),
                            ("readinessProbe", c.readiness_probe), ("startupProbe", c.startup_probe)):
            if value is not None:
                out.append(forbidden(f"{at}.{name}", "may not be set for init containers without restartPolicy=Always"))
        if c.security_context is not None:
            out.extend(_security_context(c.security_context, f"{at}.securityContext", user_namespace))
    for i, c in enumerate(spec.containers):
        out.extend(_container(c, f"{path}.containers[{i}]", grace, user_namespace))
    return out


def _container(c: Container, at: str, grace: int, user_namespace: bool) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if c.lifecycle is not None:
        for name, handler in (("postStart", c.lifecycle.post_start), ("preStop", c.lifecycle.pre_stop)):
            if handler is not None:
                out.extend(_handler(handler, f"{at}.lifecycle.{name}", grace))
    for name, probe in (("livenessProbe", c.liveness_probe), ("readinessProbe", c.readiness_probe),
                        ("startupProbe", c.startup_probe)):
        if probe is None:
            continue
        where = f"{at}.{name}"
        out.extend(_probe(probe, where))
        if name != "readinessProbe" and probe.success_threshold not in (0, 1):
            # 0 is defaulted to 1 before validation; anything else may not mean "succeed twice".
            out.append(invalid(f"{where}.successThreshold", probe.success_threshold, "must be 1"))
        if name == "readinessProbe" and probe.termination_grace_period_seconds is not None:
            out.append(invalid(f"{where}.terminationGracePeriodSeconds", probe.termination_grace_period_seconds,
                               "must not be set for readinessProbes"))
    if c.security_context is not None:
        out.extend(_security_context(c.security_context, f"{at}.securityContext", user_namespace))
    return out


def _probe(probe: Probe, at: str) -> list[FieldIssue]:
    out = _handler(probe, at)
    for name, value in (("initialDelaySeconds", probe.initial_delay_seconds), ("timeoutSeconds", probe.timeout_seconds),
                        ("periodSeconds", probe.period_seconds), ("successThreshold", probe.success_threshold),
                        ("failureThreshold", probe.failure_threshold)):
        if value < 0:
            out.append(invalid(f"{at}.{name}", value, "must be greater than or equal to 0"))
    grace = probe.termination_grace_period_seconds
    if grace is not None and grace <= 0:
        out.append(invalid(f"{at}.terminationGracePeriodSeconds", grace, "must be greater than 0"))
    return out


def _handler(handler: Probe | LifecycleHandler, at: str, grace: int = 0) -> list[FieldIssue]:
    """Exactly one action; a second one is refused on its own field, in kube's order. `grace`:
    the pod's terminationGracePeriodSeconds, for a lifecycle hook's sleep."""
    out: list[FieldIssue] = []
    actions: list[tuple[str, object]] = [("exec", handler.exec), ("httpGet", handler.http_get), ("tcpSocket", handler.tcp_socket)]
    if isinstance(handler, Probe):
        actions.append(("grpc", handler.grpc))
    else:
        actions.append(("sleep", handler.sleep))
    count = 0
    for name, action in actions:
        if action is None:
            continue
        where = f"{at}.{name}"
        if count:
            out.append(forbidden(where, "may not specify more than 1 handler type"))
            continue
        count += 1
        if isinstance(action, ExecAction):
            if not action.command:
                out.append(required(f"{where}.command"))
        elif isinstance(action, HTTPGetAction):
            out.extend(_port(action.port, f"{where}.port"))
            # kube names the list, not the entry, for a bad header name.
            out.extend(invalid(f"{where}.httpHeaders", h.name, HEADER_ERROR) for h in action.http_headers
                       if not HEADER_NAME.fullmatch(h.name))
            scheme = action.scheme or "HTTP"
            if scheme not in HTTP_SCHEMES:
                out.append(not_supported(f"{where}.scheme", scheme, HTTP_SCHEMES))
        elif isinstance(action, TCPSocketAction):
            out.extend(_port(action.port, f"{where}.port"))
        elif isinstance(action, GRPCAction):
            if not 1 <= action.port <= 65535:
                out.append(invalid(f"{where}.port", action.port, PORT_RANGE_ERROR))
        elif isinstance(action, SleepAction) and not 0 <= action.seconds <= grace:
            out.append(invalid(where, action.seconds, f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"))
    if not count:
        out.append(required(at, "must specify a handler type"))
    return out


def _port(port: int | str, at: str) -> list[FieldIssue]:
    """A port by number (1-65535) or by name (an IANA service name)."""
    if isinstance(port, str):
        return [invalid(at, port, msg) for msg in port_name_errors(port)]
    if not 1 <= port <= 65535:
        return [invalid(at, port, PORT_RANGE_ERROR)]
    return []


def _security_context(sc: SecurityContext, at: str, user_namespace: bool) -> list[FieldIssue]:
    """`user_namespace`: the pod sets hostUsers: false (what procMount Unmasked needs)."""
    out: list[FieldIssue] = []
    for name, value in (("runAsUser", sc.run_as_user), ("runAsGroup", sc.run_as_group), ("fsGroup", sc.fs_group)):
        if value is not None and not 0 <= value <= 2**31 - 1:
            out.append(invalid(f"{at}.{name}", value, ID_RANGE_ERROR))
    for i, gid in enumerate(sc.supplemental_groups):
        if not 0 <= gid <= 2**31 - 1:
            out.append(invalid(f"{at}.supplementalGroups[{i}]", gid, ID_RANGE_ERROR))
    if sc.fs_group_change_policy is not None and sc.fs_group_change_policy not in FS_GROUP_CHANGE_POLICIES:
        out.append(not_supported(f"{at}.fsGroupChangePolicy", sc.fs_group_change_policy, FS_GROUP_CHANGE_POLICIES))
    if sc.supplemental_groups_policy is not None and sc.supplemental_groups_policy not in SUPPLEMENTAL_GROUPS_POLICIES:
        out.append(not_supported(f"{at}.supplementalGroupsPolicy", sc.supplemental_groups_policy, SUPPLEMENTAL_GROUPS_POLICIES))
    if sc.seccomp_profile is not None:
        out.extend(_seccomp(sc.seccomp_profile, f"{at}.seccompProfile"))
    if sc.app_armor_profile is not None:
        out.extend(_app_armor(sc.app_armor_profile, f"{at}.appArmorProfile"))
    if sc.proc_mount is not None:
        if sc.proc_mount not in PROC_MOUNTS:
            out.append(not_supported(f"{at}.procMount", sc.proc_mount, PROC_MOUNTS))
        elif sc.proc_mount == "Unmasked" and not user_namespace:
            out.append(invalid(f"{at}.procMount", sc.proc_mount, "`hostUsers` must be false to use `Unmasked`"))
    if sc.allow_privilege_escalation is False:
        if sc.privileged:
            out.append(invalid(at, _go_context(sc), "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                               rendered=True))
        if sc.capabilities is not None and "CAP_SYS_ADMIN" in (sc.capabilities.add or []):
            out.append(invalid(at, _go_context(sc), "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                               rendered=True))
    return out


def _seccomp(sp: SeccompProfile, at: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if not sp.type:
        out.append(required(f"{at}.type", "type is required when seccompProfile is set"))
    elif sp.type not in SECCOMP_TYPES:
        out.append(not_supported(f"{at}.type", sp.type, SECCOMP_TYPES))
    if sp.type == "Localhost":
        if sp.localhost_profile is None:
            out.append(required(f"{at}.localhostProfile", "must be set when seccomp type is Localhost"))
        elif sp.localhost_profile.startswith("/"):
            out.append(invalid(f"{at}.localhostProfile", sp.localhost_profile, "must be a relative path"))
        elif ".." in sp.localhost_profile.split("/"):
            out.append(invalid(f"{at}.localhostProfile", sp.localhost_profile, "must not contain '..'"))
    elif sp.localhost_profile is not None:
        out.append(invalid(f"{at}.localhostProfile", go_json(_go_seccomp(sp)), "can only be set when seccomp type is Localhost",
                           rendered=True))
    return out


# The API server prints a struct value with Go's field names, every field present (null when unset).
_SELINUX = (("User", "user"), ("Role", "role"), ("Type", "type"), ("Level", "level"))
_WINDOWS = (("GMSACredentialSpecName", "gmsaCredentialSpecName"), ("GMSACredentialSpec", "gmsaCredentialSpec"),
            ("RunAsUserName", "runAsUserName"), ("HostProcess", "hostProcess"))


def _go_struct(raw: dict[str, Any] | None, fields: tuple[tuple[str, str], ...], zero: Any) -> dict[str, Any] | None:
    """`zero` per field: "" for Go strings, None for pointers."""
    if raw is None:
        return None
    return {go: raw.get(key, zero(go)) for go, key in fields}


def _go_seccomp(sp: SeccompProfile) -> dict[str, Any]:
    return {"Type": sp.type, "LocalhostProfile": sp.localhost_profile}


def _go_context(sc: SecurityContext) -> str:
    caps = None if sc.capabilities is None else {"Add": sc.capabilities.add, "Drop": sc.capabilities.drop}
    return go_json({
        "Capabilities": caps, "Privileged": sc.privileged,
        "SELinuxOptions": _go_struct(sc.se_linux_options, _SELINUX, lambda _: ""),
        "WindowsOptions": _go_struct(sc.windows_options, _WINDOWS, lambda _: None),
        "RunAsUser": sc.run_as_user, "RunAsGroup": sc.run_as_group, "RunAsNonRoot": sc.run_as_non_root,
        "ReadOnlyRootFilesystem": sc.read_only_root_filesystem, "AllowPrivilegeEscalation": sc.allow_privilege_escalation,
        "ProcMount": sc.proc_mount, "SeccompProfile": None if sc.seccomp_profile is None else _go_seccomp(sc.seccomp_profile),
        "AppArmorProfile": None if sc.app_armor_profile is None else {"Type": sc.app_armor_profile.type,
                                                                      "LocalhostProfile": sc.app_armor_profile.localhost_profile},
    })


def _app_armor(ap: AppArmorProfile, at: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if not ap.type:
        out.append(required(f"{at}.type", "type is required when appArmorProfile is set"))
    elif ap.type not in SECCOMP_TYPES:  # the same three types
        out.append(not_supported(f"{at}.type", ap.type, SECCOMP_TYPES))
    profile = ap.localhost_profile
    if ap.type == "Localhost":
        if profile is None:
            out.append(required(f"{at}.localhostProfile", "must be set when AppArmor type is Localhost"))
        elif profile != profile.strip():
            out.append(invalid(f"{at}.localhostProfile", profile, "must not be padded with whitespace"))
        elif not profile:
            out.append(required(f"{at}.localhostProfile", "must be set when AppArmor type is Localhost"))
    elif profile is not None:
        out.append(invalid(f"{at}.localhostProfile", profile, "can only be set when AppArmor type is Localhost"))
    return out


def _sysctls(spec: PodSpec, at: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    seen: set[str] = set()
    for i, sysctl in enumerate(spec.security_context.sysctls if spec.security_context else []):
        where = f"{at}[{i}].name"
        name = sysctl.name
        if not name:
            out.append(required(where))
        elif len(name) > 253 or not SYSCTL_NAME.match(name):
            out.append(invalid(where, name, f"must have at most 253 characters and match regex {SYSCTL_FORMAT}"))
        elif name in seen:
            out.append(duplicate(where, name))
        elif spec.host_network and name.startswith("net."):
            out.append(invalid(where, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.host_ipc and name.startswith(IPC_SYSCTLS):
            out.append(invalid(where, name, "may not be specified when 'hostIPC' is true"))
        seen.add(name)
    return out


def _os_fields(spec: PodSpec, path: str) -> list[FieldIssue]:
    """A pod that names its OS may not set the other OS's securityContext fields."""
    if spec.os is None or spec.os.name not in OS_NAMES:
        return []
    contexts = [(f"{path}.securityContext", spec.security_context, WINDOWS_POD_FORBIDDEN)]
    for group, containers in (("initContainers", spec.init_containers), ("containers", spec.containers)):
        contexts.extend((f"{path}.{group}[{i}].securityContext", c.security_context, WINDOWS_CONTAINER_FORBIDDEN)
                        for i, c in enumerate(containers))
    out: list[FieldIssue] = []
    for at, sc, windows_forbidden in contexts:
        if sc is None:
            continue
        if spec.os.name == "linux":
            if sc.windows_options is not None:
                out.append(forbidden(f"{at}.windowsOptions", "windows options cannot be set for a linux pod"))
            continue
        raw = msgspec.to_builtins(sc)
        out.extend(forbidden(f"{at}.{name}", "cannot be set for a windows pod") for name in windows_forbidden
                   if raw.get(name) not in (None, []))
    return out
