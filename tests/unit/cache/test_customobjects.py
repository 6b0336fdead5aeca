"""The cache's index of custom objects, and the one path a backend delivers them by: the scheduler
keeps them, bumps the resource's generation, and raises the resource's cluster event."""

from __future__ import annotations

import pytest

from kubesched.api.customresources import CustomResource, object_key, watched_by
from kubesched.api.xk8s import ELASTICQUOTAS, PODGROUPS, ElasticQuota
from kubesched.cache.customobjects import CustomObjectIndex
from kubesched.framework.events import ActionType


def eq(ns: str, name: str = "q") -> ElasticQuota:
    out = ElasticQuota()
    out.metadata.namespace, out.metadata.name = ns, name
    return out


def test_objects_by_key_with_first_sight_and_generations() -> None:
    index = CustomObjectIndex()
    r = ELASTICQUOTAS.resource
    assert index.generation(r) == 0 and index.objects(r) == [] and index.get(r, "a", "q") is None
    first = eq("a")
    assert index.apply(r, first, now=5.0) is None
    second = eq("a")
    assert index.apply(r, second, now=9.0) is first  # an update replaces, keeps when it was first seen
    assert index.get(r, "a", "q") is second and index.first_seen(r, second) == 5.0
    index.apply(r, eq("b"), now=10.0)
    assert [o.metadata.namespace for o in index.objects(r)] == ["a", "b"] and index.generation(r) == 3
    assert index.delete(r, second) is second and index.get(r, "a", "q") is None and index.first_seen(r, second) is None
    assert index.delete(r, second) is None and index.generation(r) == 4  # deleting nothing changes nothing


def test_watching_is_everything_until_a_backend_says_what_it_watches() -> None:
    index = CustomObjectIndex()
    assert index.watching(PODGROUPS.resource)
    index.watched = frozenset({ELASTICQUOTAS.resource})
    assert index.watching(ELASTICQUOTAS.resource) and not index.watching(PODGROUPS.resource)


def test_resource_names_are_kubes() -> None:
    assert PODGROUPS.resource == "podgroups.v1alpha1.scheduling.x-k8s.io"
    assert ELASTICQUOTAS.path == "/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas"
    assert ELASTICQUOTAS.name == "elasticquotas.scheduling.x-k8s.io"
    assert object_key(eq("ns", "x")) == "ns/x"


def test_watched_by_reads_the_plugin_classes() -> None:
    other = CustomResource("example.com", "v1", "widgets", "Widget", dict)

    class A:
        watches = (PODGROUPS, other)

    class B:
        watches = (other,)

    assert watched_by([A(), B(), object()]) == [PODGROUPS, other]


def test_the_scheduler_keeps_them_and_moves_pods_on_their_events() -> None:
    from builders import make_node
    from unit.plugins.xk8skit import capacity
    from unit.simkit import profile_config, run

    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()], profile_config(capacity()))
    sched = sim.scheduler
    moved: list[tuple[str, ActionType]] = []
    sched.queue.move_on_event = lambda event, old=None, new=None, pre_check=None: moved.append((event.resource, event.action)) or 0
    q = eq("team-a")
    sched.on_custom_object(ELASTICQUOTAS.resource, None, q)
    sched.on_custom_object(ELASTICQUOTAS.resource, q, eq("team-a"))
    sched.on_custom_delete(ELASTICQUOTAS.resource, q)
    r = ELASTICQUOTAS.resource
    assert moved == [(r, ActionType.Add), (r, ActionType.Update), (r, ActionType.Delete)]
    assert sched.cache.custom.objects(r) == []


def test_only_the_profiles_plugins_resources_are_watched_and_a_reload_cannot_add_one() -> None:
    from builders import make_node
    from kubesched.config.parse import parse_config
    from kubesched.plugins.registry import in_tree_registry
    from unit.plugins.xk8skit import capacity
    from unit.simkit import profile_config, run

    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()])
    assert sim.scheduler.custom_resources() == []
    assert not sim.scheduler.cache.custom.watching(ELASTICQUOTAS.resource)
    # A configuration that enables CapacityScheduling cannot be built on this scheduler: the watch it
    # needs is not there (a reload is refused with this message).
    with pytest.raises(ValueError, match=r"CapacityScheduling reads elasticquotas\.scheduling\.x-k8s\.io, which this "
                                         r"kubesched does not watch"):
        sim.scheduler.build_generation(parse_config(profile_config(capacity())), in_tree_registry(), digest="x", origin="t")
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()], profile_config(capacity()))
    assert sim.scheduler.custom_resources() == [ELASTICQUOTAS]
