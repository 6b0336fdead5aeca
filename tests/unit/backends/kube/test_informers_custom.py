"""The kube backend watches custom resources only for the plugins that read them: a cluster without
scheduler-plugins' CRDs is never asked about them (kubesched would not become ready otherwise)."""

from __future__ import annotations

from typing import Any

from builders import make_node
from kubesched.api.xk8s import ELASTICQUOTAS, PODGROUPS
from kubesched.backends.kube.informers import CustomObjectHandler, build_informers
from unit.plugins.xk8skit import capacity, coscheduling
from unit.simkit import profile_config, run


def reflectors(config: dict[str, Any] | None) -> dict[str, Any]:
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()], config)
    client: Any = object()  # reflectors are built, not started
    return {r.name: r for r in build_informers(client, sim.scheduler).reflectors}


def test_no_custom_watch_without_a_plugin_that_reads_one() -> None:
    names = set(reflectors(None))
    assert "pods" in names and not {PODGROUPS.name, ELASTICQUOTAS.name} & names


def test_each_plugin_brings_its_watch() -> None:
    got = reflectors(profile_config(coscheduling()))
    assert PODGROUPS.name in got and ELASTICQUOTAS.name not in got
    r = got[PODGROUPS.name]
    assert r.path == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups" and r.kind is PODGROUPS.type
    assert isinstance(r.handler, CustomObjectHandler) and r.handler.resource == PODGROUPS.resource
    assert ELASTICQUOTAS.name in reflectors(profile_config(capacity()))
