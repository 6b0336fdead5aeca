"""make_pod: a Pod built fluently, as a typed object, a manifest for the simulator, or a PodInfo.

    make_pod("web-1").ns("shop").req(cpu="100m", memory="500Mi").priority(10).label(app="web").obj()

A fresh builder is one container "c" running the pause image with no requests, in namespace
"default", on no node. `.obj()` is the pod as the API server holds it after admission (a unique
uid, `spec.priority` set); `.manifest()` is the dict a user writes for the simulator (no uid, and
a priority named as the class `priority-<n>`, which the simulator's Priority admission resolves:
`unit.simkit.run` creates those classes). Both come from one spec, so they describe one pod.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, Self

from builders.meta import ObjectBuilder
from kubesched.api.objects import Pod, convert
from kubesched.api.podinfo import PodInfo, make_pod_info

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
ARRIVAL = "sim.kubesched.io/arrival"
DURATION = "sim.kubesched.io/duration"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
XK8S_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

_uids = itertools.count()


def quantities(named: dict[str, Any] | None, keywords: dict[str, Any]) -> dict[str, Any]:
    """Resource quantities from a mapping (any resource name) and keywords (`ephemeral_storage`
    stands for `ephemeral-storage`)."""
    out = dict(named or {})
    out.update({k.replace("_", "-"): v for k, v in keywords.items()})
    return out


def priority_class_name(value: int) -> str:
    """The class a manifest names for priority `value` (see the module docstring)."""
    return f"priority-{value}"


class PodBuilder(ObjectBuilder):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._namespace = "default"
        self._requests: dict[str, Any] = {}
        self._limits: dict[str, Any] = {}
        self._container_name = "c"
        self._image = PAUSE_IMAGE
        self._ports: list[dict[str, Any]] = []
        self._containers: list[dict[str, Any]] | None = None
        self._priority: int | None = None
        self._node_name = ""
        self._status: dict[str, Any] = {}
        self._claim_refs: list[str] = []  # the first container's resources.claims

    # --- metadata (labels, annotations, owners and the uid: ObjectBuilder's) ---------------------

    def ns(self, namespace: str) -> Self:
        self._namespace = namespace
        return self

    def arrival(self, at: str) -> Self:
        """When the simulator creates the pod (virtual time, e.g. "5s")."""
        return self.annotation({ARRIVAL: at})

    def duration(self, runs: str) -> Self:
        """How long the pod runs in the simulator once bound (e.g. "30s")."""
        return self.annotation({DURATION: runs})

    # --- the container ---------------------------------------------------------------------------

    def req(self, requests: dict[str, Any] | None = None, /, **more: Any) -> Self:
        """Requests of the one container (`ephemeral_storage=` for ephemeral-storage; other
        resource names in the mapping)."""
        self._requests.update(quantities(requests, more))
        return self

    def limits(self, limits: dict[str, Any] | None = None, /, **more: Any) -> Self:
        self._limits.update(quantities(limits, more))
        return self

    def image(self, image: str) -> Self:
        self._image = image
        return self

    def container(self, name: str, image: str | None = None) -> Self:
        """The one container's name (and image)."""
        self._container_name = name
        if image is not None:
            self._image = image
        return self

    def host_port(self, port: int, *, protocol: str | None = None, host_ip: str | None = None) -> Self:
        entry: dict[str, Any] = {"containerPort": port, "hostPort": port}
        if protocol is not None:
            entry["protocol"] = protocol
        if host_ip is not None:
            entry["hostIP"] = host_ip
        self._ports.append(entry)
        return self

    def containers(self, *containers: dict[str, Any]) -> Self:
        """These containers, written out, in place of the one the other methods describe."""
        self._containers = [dict(c) for c in containers]
        return self

    # --- the spec --------------------------------------------------------------------------------

    def pod_resources(self, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> Self:
        """spec.resources: the pod-level requests and limits (PodLevelResources)."""
        resources: dict[str, Any] = {}
        if requests is not None:
            resources["requests"] = dict(requests)
        if limits is not None:
            resources["limits"] = dict(limits)
        return self.spec(resources=resources)

    def priority(self, value: int) -> Self:
        self._priority = value
        return self

    def priority_class(self, name: str) -> Self:
        return self.spec(priorityClassName=name)

    def node(self, name: str) -> Self:
        """spec.nodeName: the pod is bound (or asks for) this node."""
        self._node_name = name
        return self

    def scheduler(self, name: str) -> Self:
        return self.spec(schedulerName=name)

    def node_selector(self, selector: dict[str, str] | None = None, /, **more: str) -> Self:
        merged = {**self._spec.get("nodeSelector", {}), **(selector or {}), **more}
        return self.spec(nodeSelector=merged)

    def toleration(self, key: str = "", value: str = "", effect: str = "", *, operator: str = "",
                   seconds: int | None = None) -> Self:
        """A toleration; the fields left empty are left out (an empty operator means Equal)."""
        entry: dict[str, Any] = {"key": key, "operator": operator, "value": value, "effect": effect}
        entry = {k: v for k, v in entry.items() if v}
        if seconds is not None:
            entry["tolerationSeconds"] = seconds
        return self.spec(tolerations=[*self._spec.get("tolerations", []), entry])

    def node_affinity(self, *terms: dict[str, Any], preferred: list[dict[str, Any]] | None = None) -> Self:
        """Required node selector terms, and preferred scheduling terms ({"weight", "preference"})."""
        node: dict[str, Any] = {}
        if terms:
            node["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": list(terms)}
        if preferred:
            node["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
        return self.spec(affinity={**self._spec.get("affinity", {}), "nodeAffinity": node})

    def spread(self, key: str, *, max_skew: int = 1, when: str = "DoNotSchedule",
               match: dict[str, str] | None = None, **more: Any) -> Self:
        """A topology spread constraint over `key` for the pods whose labels include `match`."""
        entry: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
        if match is not None:
            entry["labelSelector"] = {"matchLabels": match}
        entry.update(more)
        return self.spec(topologySpreadConstraints=[*self._spec.get("topologySpreadConstraints", []), entry])

    def gate(self, *names: str) -> Self:
        gates = [*self._spec.get("schedulingGates", []), *({"name": n} for n in names)]
        return self.spec(schedulingGates=gates)

    def claims(self, *claim_names: str) -> Self:
        """Volumes v0, v1, ... reading these PersistentVolumeClaims."""
        volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claim_names)]
        return self.spec(volumes=[*self._spec.get("volumes", []), *volumes])

    def resource_claim(self, name: str, *, claim: str | None = None, template: str | None = None) -> Self:
        """An entry of spec.resourceClaims (for a ResourceClaim or a ResourceClaimTemplate), used by
        the first container."""
        entry: dict[str, Any] = {"name": name}
        if claim is not None:
            entry["resourceClaimName"] = claim
        if template is not None:
            entry["resourceClaimTemplateName"] = template
        self._claim_refs.append(name)
        return self.spec(resourceClaims=[*self._spec.get("resourceClaims", []), entry])

    def group(self, pod_group: str) -> Self:
        """spec.schedulingGroup: a member of this (scheduling.k8s.io) PodGroup."""
        return self.spec(schedulingGroup={"podGroupName": pod_group})

    def xk8s_group(self, pod_group: str) -> Self:
        """A member of this scheduler-plugins (Coscheduling) PodGroup: its label."""
        return self.label({XK8S_GROUP_LABEL: pod_group})

    def status(self, **fields: Any) -> Self:
        self._status.update(fields)
        return self

    # --- results ---------------------------------------------------------------------------------

    def _body(self) -> dict[str, Any]:
        if self._containers is not None:
            containers = copy.deepcopy(self._containers)
        else:
            container: dict[str, Any] = {"name": self._container_name, "image": self._image}
            resources: dict[str, Any] = {}
            if self._requests:
                resources["requests"] = dict(self._requests)
            if self._limits:
                resources["limits"] = dict(self._limits)
            if self._claim_refs:
                resources["claims"] = [{"name": name} for name in self._claim_refs]
            if resources:
                container["resources"] = resources
            if self._ports:
                container["ports"] = copy.deepcopy(self._ports)
            containers = [container]
        body: dict[str, Any] = {"containers": containers}
        if self._node_name:
            body["nodeName"] = self._node_name
        return body

    def _metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self._name, "namespace": self._namespace, "labels": dict(self._labels),
                                "annotations": dict(self._annotations)}
        if self._owners:
            meta["ownerReferences"] = copy.deepcopy(self._owners)
        return meta

    def manifest(self) -> dict[str, Any]:
        """The manifest a user writes (apiVersion and kind included)."""
        meta = self._metadata()
        if self._uid is not None:
            meta["uid"] = self._uid
        body = self._body()
        if self._priority is not None:
            body["priorityClassName"] = priority_class_name(self._priority)
        body.update(copy.deepcopy(self._spec))
        out: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
        if self._status:
            out["status"] = copy.deepcopy(self._status)
        return out

    def obj(self) -> Pod:
        """The pod as admitted: a uid (unique unless given) and spec.priority."""
        meta = self._metadata()
        meta["uid"] = self._uid if self._uid is not None else f"uid-{self._name}-{next(_uids)}"
        body = self._body()
        if self._priority is not None:
            body["priority"] = self._priority
        body.update(copy.deepcopy(self._spec))
        data: dict[str, Any] = {"metadata": meta, "spec": body}
        if self._status:
            data["status"] = copy.deepcopy(self._status)
        result: Pod = convert(data, Pod, f"pod {self._name}")
        return result

    def info(self) -> PodInfo:
        return make_pod_info(self.obj())


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)
