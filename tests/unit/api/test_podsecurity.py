"""api.validation.podsecurity: probes, lifecycle handlers, securityContext IDs and spec.os, through
validate_manifest (pods and workload templates), with kube's field paths and messages."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubesched.api.validation import validate_manifest

C0 = "spec.containers[0]"
ID_RANGE = "must be between 0 and 2147483647, inclusive"
PORT_RANGE = "must be between 1 and 65535, inclusive"
POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def issues(change: Callable[[dict[str, Any]], None], base: dict[str, Any] = POD) -> list[str]:
    obj = copy.deepcopy(base)
    change(obj["spec"])
    return [str(i) for i in validate_manifest(obj)]


def container(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec["containers"][0].update(fields)


def test_valid_probes_hooks_and_contexts_pass() -> None:
    assert issues(lambda s: s.update(
        os={"name": "linux"},
        securityContext={"runAsUser": 0, "fsGroup": 2**31 - 1, "supplementalGroups": [1]},
        containers=[{"name": "c", "image": "i",
                     "livenessProbe": {"tcpSocket": {"port": "http"}, "successThreshold": 1, "terminationGracePeriodSeconds": 1},
                     "readinessProbe": {"httpGet": {"port": 80}, "successThreshold": 3, "periodSeconds": 0},
                     "startupProbe": {"grpc": {"port": 9090}},
                     "lifecycle": {"preStop": {"sleep": {"seconds": 0}}, "postStart": {"exec": {"command": ["x"]}}},
                     "securityContext": {"runAsUser": 5, "runAsGroup": 6}}],
        initContainers=[{"name": "s", "image": "i", "restartPolicy": "Always", "readinessProbe": {"exec": {"command": ["x"]}}}],
    )) == []
    assert issues(lambda s: s.update(hostUsers=False, containers=[{"name": "c", "image": "i", "securityContext": {
        "procMount": "Unmasked", "allowPrivilegeEscalation": False,
        "seccompProfile": {"type": "Localhost", "localhostProfile": "a/b"}}}])) == []


@pytest.mark.parametrize(("change", "expected"), [
    (container(livenessProbe={"tcpSocket": {"port": 80}, "periodSeconds": -1}),
     f"{C0}.livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"),
    (container(readinessProbe={"tcpSocket": {"port": 80}, "timeoutSeconds": -5}),
     f"{C0}.readinessProbe.timeoutSeconds: Invalid value: -5: must be greater than or equal to 0"),
    (container(livenessProbe={"exec": {"command": ["x"]}, "successThreshold": 2}),
     f"{C0}.livenessProbe.successThreshold: Invalid value: 2: must be 1"),
    (container(startupProbe={"exec": {"command": ["x"]}, "successThreshold": 3}),
     f"{C0}.startupProbe.successThreshold: Invalid value: 3: must be 1"),
    (container(readinessProbe={"exec": {"command": ["x"]}, "terminationGracePeriodSeconds": 5}),
     f"{C0}.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"),
    (container(livenessProbe={"exec": {"command": ["x"]}, "terminationGracePeriodSeconds": 0}),
     f"{C0}.livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"),
    (container(livenessProbe={"periodSeconds": 5}), f"{C0}.livenessProbe: Required value: must specify a handler type"),
    (container(livenessProbe={"exec": {"command": ["x"]}, "grpc": {"port": 1}}),
     f"{C0}.livenessProbe.grpc: Forbidden: may not specify more than 1 handler type"),
    (container(livenessProbe={"exec": {"command": []}}), f"{C0}.livenessProbe.exec.command: Required value"),
    (container(livenessProbe={"tcpSocket": {"port": 0}}), f"{C0}.livenessProbe.tcpSocket.port: Invalid value: 0: {PORT_RANGE}"),
    (container(livenessProbe={"grpc": {"port": 70000}}), f"{C0}.livenessProbe.grpc.port: Invalid value: 70000: {PORT_RANGE}"),
    (container(livenessProbe={"httpGet": {"port": "8080"}}),
     f'{C0}.livenessProbe.httpGet.port: Invalid value: "8080": must contain at least one letter (a-z)'),
    (container(livenessProbe={"httpGet": {"port": 80, "scheme": "ftp"}}),
     f'{C0}.livenessProbe.httpGet.scheme: Unsupported value: "ftp": supported values: "HTTP", "HTTPS"'),
    (container(lifecycle={"preStop": {}}), f"{C0}.lifecycle.preStop: Required value: must specify a handler type"),
    (container(lifecycle={"postStart": {"exec": {"command": ["x"]}, "sleep": {"seconds": 1}}}),
     f"{C0}.lifecycle.postStart.sleep: Forbidden: may not specify more than 1 handler type"),
    (container(lifecycle={"preStop": {"sleep": {"seconds": 31}}}),
     f"{C0}.lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"),
    (lambda s: (s.update(terminationGracePeriodSeconds=5), s["containers"][0].update(lifecycle={"preStop": {"sleep": {"seconds": -1}}})),
     f"{C0}.lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (5)"),
    (container(securityContext={"runAsUser": -1}), f"{C0}.securityContext.runAsUser: Invalid value: -1: {ID_RANGE}"),
    (container(securityContext={"runAsGroup": 2**31}), f"{C0}.securityContext.runAsGroup: Invalid value: 2147483648: {ID_RANGE}"),
    (lambda s: s.update(securityContext={"fsGroup": -2}), f"spec.securityContext.fsGroup: Invalid value: -2: {ID_RANGE}"),
    (lambda s: s.update(securityContext={"supplementalGroups": [1, -1]}),
     f"spec.securityContext.supplementalGroups[1]: Invalid value: -1: {ID_RANGE}"),
    (lambda s: s.update(securityContext={"fsGroupChangePolicy": "Sometimes"}),
     'spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"'),
    (lambda s: s.update(securityContext={"supplementalGroupsPolicy": ""}),
     'spec.securityContext.supplementalGroupsPolicy: Unsupported value: "": supported values: "Merge", "Strict"'),
    (lambda s: s.update(securityContext={"seccompProfile": {}}),
     "spec.securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set"),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Localhost"}}),
     "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "/abs"}}),
     'spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/abs": must be a relative path'),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Localhost", "localhostProfile": "a/../b"}}),
     "spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"a/../b\": must not contain '..'"),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Unconfined", "localhostProfile": "a"}}),
     'spec.securityContext.seccompProfile.localhostProfile: Invalid value: {"Type":"Unconfined","LocalhostProfile":"a"}: '
     "can only be set when seccomp type is Localhost"),
    (container(securityContext={"seccompProfile": {"type": "Bogus"}}),
     f'{C0}.securityContext.seccompProfile.type: Unsupported value: "Bogus": '
     'supported values: "Localhost", "RuntimeDefault", "Unconfined"'),
    (container(securityContext={"procMount": "Unmasked"}),
     f'{C0}.securityContext.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'),
    (container(securityContext={"procMount": "Masked"}),
     f'{C0}.securityContext.procMount: Unsupported value: "Masked": supported values: "Default", "Unmasked"'),
    (container(securityContext={"privileged": True, "allowPrivilegeEscalation": False}),
     f'{C0}.securityContext: Invalid value: {{"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,'
     '"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,'
     '"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null}: cannot set `allowPrivilegeEscalation` to false and '
     "`privileged` to true"),
    (container(securityContext={"allowPrivilegeEscalation": False, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}),
     f'{C0}.securityContext: Invalid value: {{"Capabilities":{{"Add":["CAP_SYS_ADMIN"],"Drop":null}},"Privileged":null,'
     '"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,'
     '"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,"SeccompProfile":null,'
     '"AppArmorProfile":null}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'),
    (container(readinessProbe={"httpGet": {"port": 80, "httpHeaders": [{"name": "bad header", "value": "v"}]}}),
     f'{C0}.readinessProbe.httpGet.httpHeaders: Invalid value: "bad header": a valid HTTP header must consist of alphanumeric '
     "characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"),
    (lambda s: s.update(securityContext={"sysctls": [{"name": "Bad Name", "value": "1"}]}),
     'spec.securityContext.sysctls[0].name: Invalid value: "Bad Name": must have at most 253 characters and match regex '
     "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"),
    (lambda s: s.update(securityContext={"sysctls": [{"name": ""}]}), "spec.securityContext.sysctls[0].name: Required value"),
    (lambda s: s.update(securityContext={"sysctls": [{"name": "a.b"}, {"name": "a.b"}]}),
     'spec.securityContext.sysctls[1].name: Duplicate value: "a.b"'),
    (lambda s: s.update(hostNetwork=True, securityContext={"sysctls": [{"name": "net.core.somaxconn"}]}),
     "spec.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true"),
    (lambda s: s.update(hostIPC=True, securityContext={"sysctls": [{"name": "kernel.shmmax"}]}),
     "spec.securityContext.sysctls[0].name: Invalid value: \"kernel.shmmax\": may not be specified when 'hostIPC' is true"),
    (lambda s: s.update(securityContext={"appArmorProfile": {}}),
     "spec.securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set"),
    (container(securityContext={"appArmorProfile": {"type": "Localhost"}}),
     f"{C0}.securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"),
    (container(securityContext={"appArmorProfile": {"type": "Localhost", "localhostProfile": " p"}}),
     f'{C0}.securityContext.appArmorProfile.localhostProfile: Invalid value: " p": must not be padded with whitespace'),
    (container(securityContext={"appArmorProfile": {"type": "Unconfined", "localhostProfile": "x"}}),
     f'{C0}.securityContext.appArmorProfile.localhostProfile: Invalid value: "x": can only be set when AppArmor type is Localhost'),
    (lambda s: s.update(os={"name": "windows"}, securityContext={"runAsUser": 1}),
     "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod"),
    (lambda s: (s.update(os={"name": "windows"}), s["containers"][0].update(securityContext={"capabilities": {}})),
     f"{C0}.securityContext.capabilities: Forbidden: cannot be set for a windows pod"),
    (lambda s: s.update(os={"name": "linux"}, securityContext={"windowsOptions": {"runAsUserName": "x"}}),
     "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod"),
    (lambda s: s.update(os={"name": "Linux"}), 'spec.os: Unsupported value: "Linux": supported values: "linux", "windows"'),
    (lambda s: s.update(os={}), "spec.os.name: Required value: cannot be empty"),
    (lambda s: s.update(initContainers=[{"name": "i", "image": "i", "startupProbe": {"exec": {"command": ["x"]}}}]),
     "spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always"),
])
def test_refused_with_kubes_path_and_message(change: Callable[[dict[str, Any]], None], expected: str) -> None:
    assert expected in issues(change)


def test_wrong_type_is_a_decode_error_on_the_field() -> None:
    found = issues(container(livenessProbe={"tcpSocket": {"port": True}}))
    assert len(found) == 1 and found[0].startswith(f"{C0}.livenessProbe.tcpSocket.port: expected")
    found = issues(lambda s: s.update(securityContext={"runAsUser": 2**63}))
    assert len(found) == 1 and found[0].startswith("spec.securityContext.runAsUser:")


def test_workload_templates_are_checked() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}},
                           "template": {"metadata": {"labels": {"a": "b"}},
                                        "spec": {"containers": [{"name": "c", "image": "i",
                                                                 "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": -1}}]}}}}
    assert [str(i) for i in validate_manifest(deployment)] == [
        "spec.template.spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"]


SUBDOMAIN_ERROR = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
                   "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                   "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize("account", ["<GCSFUSE_KSA>", "Bad_Name", "a" * 254])
def test_service_account_name_is_a_dns_subdomain(account: str) -> None:
    """As v1.37.2 says it (checked against it by tests/integration/api), on a pod and on a template;
    the deprecated serviceAccount is defaulted into serviceAccountName first."""
    found = issues(lambda s: s.update(serviceAccountName=account))
    shown = f'"{account}"' if len(account) < 100 else f'"{account[:100]}"...(154 more)'
    expected = "must be no more than 253 characters" if len(account) > 253 else SUBDOMAIN_ERROR
    assert found == [f"spec.serviceAccountName: Invalid value: {shown}: {expected}"]
    assert issues(lambda s: s.update(serviceAccount=account)) == found
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "serviceAccountName": account,
                                          "containers": [{"name": "c", "image": "i"}]}}}}
    assert [str(i) for i in validate_manifest(job)] == [f"spec.template.{found[0]}"]


def test_valid_service_accounts_pass() -> None:
    assert issues(lambda s: s.update(serviceAccountName="gcs-fuse.ksa")) == []
    # serviceAccountName wins over a different deprecated serviceAccount, which defaulting then overwrites.
    assert issues(lambda s: s.update(serviceAccountName="ok", serviceAccount="Not_Checked")) == []


SERVICE: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                           "spec": {"ports": [{"port": 80}]}}


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s: s.update(externalTrafficPolicy="Local"),
     'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services'),
    (lambda s: s.update(type="NodePort", externalTrafficPolicy="Sometimes"),
     'spec.externalTrafficPolicy: Unsupported value: "Sometimes": supported values: "Cluster", "Local"'),
    (lambda s: s.update(type="ExternalName", externalName="example.com", internalTrafficPolicy="Bogus"),
     'spec.internalTrafficPolicy: Unsupported value: "Bogus": supported values: "Cluster", "Local"'),
    (lambda s: s.update(internalTrafficPolicy=""),
     'spec.internalTrafficPolicy: Unsupported value: "": supported values: "Cluster", "Local"'),
    (lambda s: s["ports"][0].update(targetPort=70000),
     "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (lambda s: s["ports"][0].update(targetPort="80"),
     'spec.ports[0].targetPort: Invalid value: "80": must contain at least one letter (a-z)'),
])
def test_service_traffic_policies_and_target_ports(change: Callable[[dict[str, Any]], None], expected: str) -> None:
    assert expected in issues(change, SERVICE)


@pytest.mark.parametrize("fields", [
    {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "internalTrafficPolicy": "Cluster"},
    {"externalIPs": ["192.0.2.1"], "externalTrafficPolicy": "Cluster"},
    {"type": "ExternalName", "externalName": "example.com"},
    {"type": "NodePort"},
])
def test_service_policies_accepted(fields: dict[str, Any]) -> None:
    assert issues(lambda s: (s.update(fields), s["ports"][0].update(targetPort=0)), SERVICE) == []


QUALIFIED = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
             "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
IP_ERROR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
LB_ONLY = "may only be used when `type` is 'LoadBalancer'"


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s: s["ports"][0].update(nodePort=30080), "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"),
    (lambda s: s.update(allocateLoadBalancerNodePorts=False), f"spec.allocateLoadBalancerNodePorts: Forbidden: {LB_ONLY}"),
    (lambda s: s.update(loadBalancerClass="example.com/lb"), f"spec.loadBalancerClass: Forbidden: {LB_ONLY}"),
    (lambda s: s.update(type="LoadBalancer", loadBalancerClass="bad class"),
     f'spec.loadBalancerClass: Invalid value: "bad class": {QUALIFIED}'),
    (lambda s: s.update(loadBalancerSourceRanges=["10.0.0.0/8"]), f"spec.LoadBalancerSourceRanges: Forbidden: {LB_ONLY}"),
    (lambda s: s.update(type="LoadBalancer", loadBalancerSourceRanges=["nope"]),
     'spec.LoadBalancerSourceRanges[0]: Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'),
    (lambda s: s.update(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}}),
     "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"),
    (lambda s: s.update(ipFamilyPolicy="Sometimes"),
     'spec.ipFamilyPolicy: Unsupported value: "Sometimes": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"'),
    (lambda s: s.update(ipFamilies=["IPv5"]), 'spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"'),
    (lambda s: s.update(type="LoadBalancer", healthCheckNodePort=30001),
     "spec.healthCheckNodePort: Invalid value: 30001: "
     "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"),
    (lambda s: s.update(trafficDistribution="Bogus"),
     'spec.trafficDistribution: Unsupported value: "Bogus": supported values: "PreferClose", "PreferSameZone", "PreferSameNode"'),
    (lambda s: s["ports"][0].update(appProtocol="bad proto!"), f'spec.ports[0].appProtocol: Invalid value: "bad proto!": {QUALIFIED}'),
    (lambda s: s.update(externalIPs=["fe80::1%eth0"]),
     f'spec.externalIPs[0]: Invalid value: "fe80::1%eth0": {IP_ERROR}'),
    (lambda s: s.update(clusterIP="bogus"), f'spec.clusterIPs[0]: Invalid value: "bogus": {IP_ERROR}'),
])
def test_service_extras_refused(change: Callable[[dict[str, Any]], None], expected: str) -> None:
    assert expected in issues(change, SERVICE)


def test_service_extras_accepted() -> None:
    assert issues(lambda s: s.update(
        type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30001, loadBalancerClass="example.com/lb",
        loadBalancerSourceRanges=[" 10.0.0.0/8 "], allocateLoadBalancerNodePorts=True, sessionAffinity="ClientIP",
        sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86400}}, ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4"],
        externalIPs=["2001:db8::1"], clusterIP="None", trafficDistribution="PreferSameNode"), SERVICE) == []


@pytest.mark.parametrize(("fields", "expected"), [
    ({"ipFamilies": ["IPv4", "IPv4"]}, 'spec.ipFamilies[1]: Duplicate value: "IPv4"'),
    ({"ipFamilies": ["IPv4", "IPv6"]},
     "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": "
     "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"),
    ({"ipFamilies": ["IPv6"]}, 'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'),
    ({"type": "ExternalName", "externalName": "example.com", "ipFamilies": ["IPv4"]},
     "spec.ipFamilies: Forbidden: may not be set for ExternalName services"),
    ({"ipFamilyPolicy": "RequireDualStack"},
     'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services'),
])
def test_service_ip_families_on_a_single_stack_ipv4_cluster(fields: dict[str, Any], expected: str) -> None:
    assert issues(lambda s: s.update(fields), SERVICE) == [expected]
    if "not configured" in expected:
        # A headless Service allocates no address: any family is fine.
        assert issues(lambda s: s.update(fields, clusterIP="None"), SERVICE) == []
