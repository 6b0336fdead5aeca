"""The simulator's limits: each is refused up front, before the work it bounds, with a message naming
the limit and the input that went over it."""

from __future__ import annotations

import asyncio
import time

import pytest

from builders import make_node, make_pod
from kubesched.backends.sim import limits
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.limits import LimitError
from kubesched.backends.sim.manifests import load_objects
from kubesched.backends.sim.usagemodel import UsageModel
from kubesched.config.parse import default_config
from kubesched.infra.clock import VirtualClock
from kubesched.tools.bench import scheduling_basic

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}}
OVER = limits.MAX_REPLICAS + 1


def workload(kind: str, **spec: object) -> dict:
    api = {"Job": "batch/v1", "ReplicationController": "v1"}.get(kind, "apps/v1")
    body: dict = {"template": TEMPLATE, **spec}
    if kind == "ReplicationController":
        body["template"] = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Always"}}
    elif kind != "Job":
        body["selector"] = {"matchLabels": {"app": "web"}}
        body["template"] = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Always"}}
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "web", "namespace": "default"}, "spec": body}


def refused_quickly(objects: list[dict]) -> str:
    started = time.perf_counter()
    with pytest.raises(ManifestError) as info:
        load_objects(objects)
    assert time.perf_counter() - started < 5  # refused before a single pod is made
    return str(info.value)


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"])
def test_replicas_over_the_limit_are_refused_before_expansion(kind: str) -> None:
    message = refused_quickly([workload(kind, replicas=5_000_000)])
    assert message.endswith(f"{kind} default/web: spec.replicas: 5000000 pods is over the simulator's limit of "
                            "1000000 pods in one run")


def test_job_pods_over_the_limit_are_refused() -> None:
    message = refused_quickly([workload("Job", parallelism=OVER)])
    assert message.endswith(f"Job default/web: spec.parallelism: {OVER} pods is over the simulator's limit of 1000000 "
                            "pods in one run")
    message = refused_quickly([workload("Job", parallelism=2 * OVER, completions=OVER)])
    assert f"spec.completions: {OVER} pods is over" in message
    # A huge parallelism with a few completions makes a few pods: accepted.
    cluster = load_objects([workload("Job", parallelism=2 * OVER, completions=3)])
    assert len(cluster.pods) == 3


def test_replicas_at_the_limit_pass_the_check() -> None:
    limits.check_replicas(limits.MAX_REPLICAS)
    with pytest.raises(LimitError) as info:
        limits.check_replicas(OVER, "spec.replicas")
    assert (info.value.field, info.value.detail) == ("spec.replicas", f"{OVER} pods is over the simulator's limit of "
                                                                      "1000000 pods in one run")


def test_count_annotation_limits() -> None:
    limits.check_count("Node", limits.MAX_COUNT_NODES)
    limits.check_count("Pod", limits.MAX_COUNT_PODS)
    with pytest.raises(LimitError, match=r"^metadata.annotations\[sim.kubesched.io/count\]: 50001 nodes is over the "
                                         "simulator's limit of 50000 nodes in one run$"):
        limits.check_count("Node", 50_001)
    with pytest.raises(LimitError, match="1000001 pods is over the simulator's limit of 1000000 pods in one run"):
        limits.check_count("Pod", 1_000_001)


def test_run_totals() -> None:
    limits.check_totals(limits.MAX_NODES, limits.MAX_PODS)
    with pytest.raises(LimitError, match=r"^nodes.yaml: document 3: 50001 nodes in one run is over the simulator's "
                                         "limit of 50000 nodes$"):
        limits.check_totals(50_001, 0, "nodes.yaml: document 3")
    with pytest.raises(LimitError, match=r"^1000001 pods in one run is over the simulator's limit of 1000000 pods$"):
        limits.check_totals(1, 1_000_001)


def test_virtual_time_limits() -> None:
    limits.check_time(limits.MAX_VIRTUAL_SECONDS, "x")
    with pytest.raises(LimitError, match=r"^metadata.annotations\[sim.kubesched.io/arrival\]: 3.1536e\+09s \(100 years\) "
                                         r"is over the simulator's limit of 3.1536e\+08s \(10 years\) of virtual time$"):
        limits.check_time(100 * 365 * 86400.0, "metadata.annotations[sim.kubesched.io/arrival]")
    with pytest.raises(LimitError, match="inf"):
        limits.check_time(float("inf"), "duration")
    with pytest.raises(LimitError, match=r"the last of 1000001 pods arrives at 1e\+09s \(31.7 years\), over"):
        limits.check_arrivals(0.0, 1000.0, 1_000_001, "metadata.annotations[sim.kubesched.io/arrival-interval]")
    limits.check_arrivals(0.0, 300.0, 1_000_000, "ok")


def test_bench_sizes_are_refused_before_anything_is_built() -> None:
    started = time.perf_counter()
    with pytest.raises(LimitError, match=r"^--nodes: 10000000 is over the simulator's limit of 50000 nodes in one run$"):
        scheduling_basic(10_000_000, 1)
    with pytest.raises(LimitError, match=r"^--pods: 1000000000 is over the simulator's limit of 1000000 pods in one run$"):
        scheduling_basic(1, 1_000_000_000)
    assert time.perf_counter() - started < 1


# --- whole runs ---------------------------------------------------------------------------------------------


def run(objects: list[dict]) -> None:
    asyncio.run(asyncio.wait_for(Simulation(load_objects(objects), default_config()).run(), timeout=30))


def settings(**data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubesched-simulation"}, "data": data}


def late(arrival: str, **annotations: str) -> dict:
    p = make_pod("late").req(cpu="100m", memory="100Mi").manifest()
    p["metadata"]["annotations"] = {"sim.kubesched.io/arrival": arrival, **annotations}
    return p


def test_a_tiny_scrape_interval_is_refused() -> None:
    with pytest.raises(LimitError, match=r"^kubesched-simulation: data\[scrapeInterval\]: 0.001s is under the "
                                         "simulator's minimum scrape interval of 1s$"):
        run(
            [
                settings(scrapeInterval="1ms"),
                make_node("n").without("ephemeral-storage").manifest(),
                make_pod("p").req(cpu="100m", memory="100Mi").manifest(),
            ]
        )


def test_too_many_scrapes_are_refused_with_their_cause() -> None:
    started = time.perf_counter()
    with pytest.raises(LimitError) as info:
        run([settings(scrapeInterval="5s"), make_node("n").without("ephemeral-storage").manifest(), late("8760h")])
    assert str(info.value) == (
        "the run spans up to 3.15369e+07s (1 year) of virtual time (pod default/late arrives at 3.1536e+07s (1 year)): "
        "at scrapeInterval 5s that is 6307381 scrapes, over the simulator's limit of 5000000 scrapes in one run; raise "
        "scrapeInterval (kubesched-simulation ConfigMap) or shorten the scenario"
    )
    assert time.perf_counter() - started < 5


def test_varying_usage_on_many_nodes_over_a_long_span_is_refused() -> None:
    many = make_node("n").without("ephemeral-storage").manifest()
    many["metadata"]["annotations"] = {"sim.kubesched.io/count": "500",
                                       "sim.kubesched.io/background-cpu": "diurnal:30%,period=24h"}
    with pytest.raises(LimitError, match=r"^the run samples usage on 500 nodes at up to 172861 scrapes \(usage varies "
                                         r"with time \(diurnal or bursty models\); span 2.5929e\+06s \(30 days\)"):
        run([many, late("720h")])
    # The same span with steady usage repeats samples: it runs.
    many["metadata"]["annotations"]["sim.kubesched.io/background-cpu"] = "steady:30%"
    many["metadata"]["annotations"]["sim.kubesched.io/count"] = "5"
    run([many, late("720h")])


def test_the_usage_model_stops_at_its_limits_while_running() -> None:
    nodes = [make_node("a").exactly(cpu="1").obj()]
    clock = VirtualClock()
    model = UsageModel(clock, nodes)
    model.max_scrapes = 100
    model.start()
    clock.run_due()
    with pytest.raises(LimitError, match=r"the run reached 101 scrapes at virtual time 1500s: over the simulator's limit "
                                         "of 100 scrapes in one run"):
        model.catch_up(1e9)
    model.max_cells = 3
    model.sample(20.0)
    model.sample(21.0)
    with pytest.raises(LimitError, match=r"the run sampled usage on 1 nodes at 4 scrapes .* limit of 3 node-samples"):
        model.sample(22.0)


def test_an_arrival_plus_its_duration_past_the_limit_is_refused() -> None:
    with pytest.raises(LimitError) as info:
        run([make_node("n").without("ephemeral-storage").manifest(), late("78840h", **{"sim.kubesched.io/duration": "17520h"})])
    assert str(info.value) == (
        "pod default/late arrives at 2.83824e+08s (9 years) and runs 6.3072e+07s (2 years): it ends at 3.46896e+08s "
        "(11 years), over the simulator's limit of 3.1536e+08s (10 years) of virtual time"
    )
