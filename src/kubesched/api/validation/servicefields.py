"""Service spec fields the simulator never reads but the API server validates on create: node
ports, load-balancer fields, client-IP affinity timeouts, IP families, traffic distribution,
app protocols and the addresses. Messages and paths are kube 1.34's (including its
`spec.LoadBalancerSourceRanges`, capitalised as the API server prints it)."""

from __future__ import annotations

import ipaddress
from typing import Any

import msgspec

from kubesched.api.objects import Int32
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, invalid, not_supported
from kubesched.api.validation.meta import label_key

IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
IP_FAMILIES = ["IPv4", "IPv6"]
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameZone", "PreferSameNode"]
IP_ERROR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
CIDR_ERROR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
LB_ONLY = "may only be used when `type` is 'LoadBalancer'"
MAX_AFFINITY_SECONDS = 86400


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class _Port(_Obj):
    node_port: Int32 = 0
    app_protocol: str | None = None


class _ClientIP(_Obj):
    timeout_seconds: Int32 | None = None


class _AffinityConfig(_Obj):
    client_ip: _ClientIP | None = msgspec.field(default=None, name="clientIP")


class ServiceExtras(_Obj):
    ports: list[_Port] = msgspec.field(default_factory=list)
    cluster_ip: str = msgspec.field(default="", name="clusterIP")
    external_i_ps: list[str] = msgspec.field(default_factory=list, name="externalIPs")
    allocate_load_balancer_node_ports: bool | None = None
    load_balancer_class: str | None = None
    load_balancer_source_ranges: list[str] = msgspec.field(default_factory=list)
    session_affinity: str = ""
    session_affinity_config: _AffinityConfig | None = None
    ip_family_policy: str | None = None
    ip_families: list[str] = msgspec.field(default_factory=list)
    health_check_node_port: Int32 = 0
    external_traffic_policy: str = ""
    traffic_distribution: str | None = None


def decode_extras(raw: Any) -> ServiceExtras:
    """The fields of this module from a raw Service spec; msgspec.ValidationError on a wrong type."""
    return msgspec.convert(raw, ServiceExtras, strict=False) if isinstance(raw, dict) else ServiceExtras()


def _is_ip(value: str) -> bool:
    # Go's parser takes no zone ("fe80::1%eth0"); Python's does.
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return "%" not in value


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value and "%" not in value


def validate_service_extras(spec: ServiceExtras, kind: str) -> list[FieldIssue]:
    """`kind`: the Service's type after defaulting (ClusterIP when unset)."""
    out: list[FieldIssue] = []
    lb = kind == "LoadBalancer"
    for i, port in enumerate(spec.ports):
        if kind == "ClusterIP" and port.node_port:
            out.append(forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
        if port.app_protocol is not None:
            out.extend(invalid(f"spec.ports[{i}].appProtocol", port.app_protocol, msg) for msg in label_key(port.app_protocol))
    if spec.cluster_ip and spec.cluster_ip != "None" and not _is_ip(spec.cluster_ip):
        # The API server copies clusterIP into clusterIPs and reports it there.
        out.append(invalid("spec.clusterIPs[0]", spec.cluster_ip, IP_ERROR))
    out.extend(invalid(f"spec.externalIPs[{i}]", ip, IP_ERROR) for i, ip in enumerate(spec.external_i_ps) if not _is_ip(ip))
    if spec.allocate_load_balancer_node_ports is not None and not lb:
        out.append(forbidden("spec.allocateLoadBalancerNodePorts", LB_ONLY))
    if spec.load_balancer_class is not None:
        if not lb:
            out.append(forbidden("spec.loadBalancerClass", LB_ONLY))
        else:
            out.extend(invalid("spec.loadBalancerClass", spec.load_balancer_class, msg) for msg in label_key(spec.load_balancer_class))
    if spec.load_balancer_source_ranges:
        if not lb:
            out.append(forbidden("spec.LoadBalancerSourceRanges", LB_ONLY))
        else:
            out.extend(invalid(f"spec.LoadBalancerSourceRanges[{i}]", cidr, CIDR_ERROR)
                       for i, cidr in enumerate(spec.load_balancer_source_ranges) if not _is_cidr(cidr.strip()))
    config = spec.session_affinity_config
    if spec.session_affinity == "ClientIP" and config is not None and config.client_ip is not None:
        timeout = config.client_ip.timeout_seconds
        if timeout is not None and not 0 < timeout <= MAX_AFFINITY_SECONDS:
            out.append(invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", timeout,
                               f"must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"))
    out.extend(_ip_families(spec, kind))
    if spec.health_check_node_port and not (lb and spec.external_traffic_policy == "Local"):
        out.append(invalid("spec.healthCheckNodePort", spec.health_check_node_port,
                           "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    if spec.traffic_distribution is not None and spec.traffic_distribution not in TRAFFIC_DISTRIBUTIONS:
        out.append(not_supported("spec.trafficDistribution", spec.traffic_distribution, TRAFFIC_DISTRIBUTIONS))
    return out


def _ip_families(spec: ServiceExtras, kind: str) -> list[FieldIssue]:
    """The policy and families; then, when those are valid, what the simulated cluster offers: like
    a default kube-apiserver, one IPv4 service range (no IPv6, no dual-stack). A headless Service
    allocates no address: any family goes. An ExternalName Service may not set them."""
    out: list[FieldIssue] = []
    policy = spec.ip_family_policy
    if kind == "ExternalName":
        if spec.ip_families:
            out.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if policy is not None:
            out.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        return out
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        out.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    seen: set[str] = set()
    for i, family in enumerate(spec.ip_families):
        if family not in IP_FAMILIES:
            out.append(not_supported(f"spec.ipFamilies[{i}]", family, IP_FAMILIES))
        elif family in seen:
            out.append(duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    if not out and len(spec.ip_families) > 1 and policy in (None, "SingleStack"):
        out.append(invalid("spec.ipFamilyPolicy", "SingleStack",
                           "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
    if out or spec.cluster_ip == "None":
        return out
    if policy == "RequireDualStack":
        out.append(invalid("spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"))
    out.extend(invalid(f"spec.ipFamilies[{i}]", family, "not configured on this cluster")
               for i, family in enumerate(spec.ip_families) if family == "IPv6")
    return out
