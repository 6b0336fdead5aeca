"""The parts of a pod that plugins sign for OpportunisticBatching (framework.batching), named and
canonicalized as kube's signers (kube-scheduler/framework/signers.go): equal values here are equal
signatures there. Values are hashable and ordered where kube sorts them."""

from __future__ import annotations

from collections.abc import Hashable

import msgspec

from kubesched.api.objects import NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.podinfo import PodInfo, normalize_image
from kubesched.framework.types import SignFragment

RESOURCES = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
VOLUMES = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
TOLERATIONS = "v1.Pod.Spec.Tolerations"
HOST_PORTS = "v1.Pod.Spec.HostPorts()"
NODE_AFFINITY = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR = "v1.Pod.Spec.Affinity.NodeSelector"
NODE_NAME = "v1.Pod.Spec.NodeName"
IMAGE_NAMES = "v1.Pod.Spec.CanonicalImageNames()"
LABELS = "v1.Pod.Labels"

_encode = msgspec.json.Encoder(order="sorted").encode


def resources(pi: PodInfo) -> SignFragment:
    """The pod's effective requests (containers, init containers, overhead), as the scheduler counts them."""
    return RESOURCES, tuple(sorted(pi.requests.items()))


def volumes(pi: PodInfo) -> SignFragment:
    """Each volume's source, without its name, sorted (kube leaves out ConfigMap and Secret volumes,
    which kubesched does not keep: they never matter to scheduling)."""
    return VOLUMES, tuple(sorted(_encode(msgspec.structs.replace(v, name="")) for v in pi.pod.spec.volumes))


def tolerations(pi: PodInfo) -> SignFragment:
    ordered = sorted(pi.pod.spec.tolerations, key=lambda t: (t.key, t.value))
    return TOLERATIONS, tuple((t.key, t.operator, t.value, t.effect, t.toleration_seconds) for t in ordered)


def host_ports(pi: PodInfo) -> SignFragment:
    """The host ports of every container and init container, once each, sorted."""
    spec = pi.pod.spec
    ports = {p.host_port for c in (*spec.containers, *spec.init_containers) for p in c.ports if p.host_port}
    return HOST_PORTS, tuple(sorted(ports))


def _requirements(reqs: list[NodeSelectorRequirement]) -> tuple[bytes, ...]:
    return tuple(sorted(_encode(msgspec.structs.replace(r, values=sorted(r.values))) for r in reqs))


def _term(term: NodeSelectorTerm) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    return _requirements(term.match_expressions), _requirements(term.match_fields)


def node_affinity(pi: PodInfo) -> list[SignFragment]:
    """The node affinity's required terms and preferred terms, each sorted, and the nodeSelector."""
    affinity = pi.pod.spec.affinity
    na = affinity.node_affinity if affinity is not None else None
    value: Hashable = None
    if na is not None:
        required = na.required_during_scheduling_ignored_during_execution
        value = (
            tuple(sorted(_term(t) for t in required.node_selector_terms)) if required is not None else (),
            tuple(sorted((p.weight, _term(p.preference)) for p in na.preferred_during_scheduling_ignored_during_execution)),
        )
    return [(NODE_AFFINITY, value), (NODE_SELECTOR, tuple(sorted(pi.pod.spec.node_selector.items())))]


def node_name(pi: PodInfo) -> SignFragment:
    return NODE_NAME, pi.pod.spec.node_name


def image_names(pi: PodInfo) -> SignFragment:
    spec = pi.pod.spec
    return IMAGE_NAMES, tuple(sorted({normalize_image(c.image) for c in (*spec.containers, *spec.init_containers)}))


def labels(pi: PodInfo) -> SignFragment:
    return LABELS, tuple(sorted(pi.labels.items()))
