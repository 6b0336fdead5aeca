"""The spans real scheduling cycles make, per outcome: a scheduled pod, an unschedulable one, a
scheduler error, a failed binding; and that tracing off or sampled out builds nothing at all.

The simulator runs the real scheduler; the tracer's network send is replaced by a list (a
unit-test stand-in: tests/integration/observe sends to a real OpenTelemetry Collector), so the
spans checked here went through the tracer's buffer, batches and close() as they would on export.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from builders import make_node, make_pod
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import parse_config
from kubesched.framework.interface import NodeFilterPlugin, Plugin, PreBindPlugin
from kubesched.framework.status import Status
from kubesched.observe.tracing import CycleTrace, Tracer, TracingConfig
from unit.simkit import profile_config


class BreaksOnLabel(Plugin, NodeFilterPlugin, PreBindPlugin):
    """A user's plugin with bugs: its Filter errs for pods labelled filter=error, its PreBind
    for pods labelled prebind=error."""

    name = "BreaksOnLabel"

    def filter_node(self, state, pi, node):  # type: ignore[no-untyped-def]
        return Status.error("the plugin's data source is down") if pi.labels.get("filter") == "error" else None

    async def pre_bind(self, state, pi, node):  # type: ignore[no-untyped-def]
        return Status.error("volume not attached") if pi.labels.get("prebind") == "error" else None


CONFIG = profile_config({
    "schedulerName": "default-scheduler",
    "plugins": {
        "filter": {"enabled": [{"name": "unit.observe.test_tracing_cycles:BreaksOnLabel"}]},
        "preBind": {"enabled": [{"name": "unit.observe.test_tracing_cycles:BreaksOnLabel"}]},
    },
})


class CollectingTracer(Tracer):
    """The real tracer, its OTLP send replaced by a list of the batches it would have sent."""

    def __init__(self, rate: int, **kwargs: Any) -> None:
        super().__init__(TracingConfig("127.0.0.1:9", rate), **kwargs)
        self.sent: list[dict[str, Any]] = []

    async def _send(self, spans: list[dict[str, Any]]) -> None:
        self.sent.extend(spans)
        self.exported += len(spans)


def simulate(objects: list[dict[str, Any]], tracer: Tracer) -> Any:
    sim = Simulation(load_objects(objects), parse_config(CONFIG), tracer=tracer)
    return asyncio.run(sim.run()), sim


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in span["attributes"]:
        value = a["value"]
        out[a["key"]] = int(value["intValue"]) if "intValue" in value else next(iter(value.values()))
    return out


def cycle_of(spans: list[dict[str, Any]], pod_key: str) -> dict[str, Any]:
    return next(s for s in spans if s["name"] == "SchedulingCycle" and attrs(s)["kubesched.pod"] == pod_key)


def children(spans: list[dict[str, Any]], parent: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in spans if s.get("parentSpanId") == parent["spanId"]}


def test_each_outcome_makes_its_cycle_span() -> None:
    tracer = CollectingTracer(1_000_000)
    objects = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2")
        .capacity(cpu="1")
        .without("ephemeral-storage")
        .taints([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
        .manifest(),
        make_node("n3").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("web").req(cpu="500m", memory="100Mi").manifest(),
        make_pod("huge").req(cpu="8", memory="100Mi").manifest(),
        make_pod("buggy").req(cpu="100m", memory="100Mi").label(filter="error").manifest(),
        make_pod("unattached").req(cpu="100m", memory="100Mi").label(prebind="error").manifest(),
    ]
    result, sim = simulate(objects, tracer)
    assert result.placements["default/web"] == "n1"
    spans = tracer.sent
    assert spans and not tracer.buffer and tracer.dropped == 0  # all sent, by close() at the latest

    web = cycle_of(spans, "default/web")
    a = attrs(web)
    assert a["kubesched.result"] == "scheduled" and a["kubesched.node"] == "n1" and a["kubesched.profile"] == "default-scheduler"
    assert a["k8s.namespace.name"] == "default" and a["k8s.pod.name"] == "web" and a["kubesched.attempt"] == 1
    assert a["k8s.pod.uid"] == sim.scheduler.recorder.latest["default/web"].uid
    assert a["kubesched.nodes.total"] == 3 and a["kubesched.nodes.feasible"] == 2 and a["kubesched.rejected.TaintToleration"] == 1
    assert web["status"]["code"] == 1 and "kubesched.message" not in a
    kids = children(spans, web)
    assert {"PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "BindingCycle"} <= set(kids)
    assert "PostFilter" not in kids  # a pod that fits runs no PostFilter
    assert attrs(kids["BindingCycle"]) == {"kubesched.node": "n1", "kubesched.result": "bound"}
    binding = children(spans, kids["BindingCycle"])  # the binding cycle's own extension points
    assert {"PreBind", "Bind"} <= set(binding) and attrs(binding["Bind"])["kubesched.status"] == "Success"
    assert int(kids["BindingCycle"]["startTimeUnixNano"]) <= int(binding["PreBind"]["startTimeUnixNano"])
    assert int(binding["Bind"]["endTimeUnixNano"]) <= int(kids["BindingCycle"]["endTimeUnixNano"])
    for kid in kids.values():
        assert kid["traceId"] == web["traceId"] and int(kid["startTimeUnixNano"]) >= int(web["startTimeUnixNano"])
    for name in ("PreFilter", "Filter", "Score", "Reserve", "Permit"):  # inside the cycle
        assert int(kids[name]["endTimeUnixNano"]) <= int(web["endTimeUnixNano"])

    huge = cycle_of(spans, "default/huge")
    a = attrs(huge)
    assert a["kubesched.result"] == "unschedulable" and "kubesched.node" not in a
    assert a["kubesched.message"].startswith("0/3 nodes are available:")
    assert a["kubesched.rejected.TaintToleration"] == 1 and a["kubesched.rejected.NodeResourcesFit"] == 2
    kids = children(spans, huge)
    assert "PostFilter" in kids and "BindingCycle" not in kids and "Score" not in kids
    assert attrs(kids["PostFilter"])["kubesched.status"] == "Unschedulable"

    buggy = cycle_of(spans, "default/buggy")
    a = attrs(buggy)
    assert a["kubesched.result"] == "error" and "data source is down" in a["kubesched.message"]
    assert buggy["status"]["code"] == 2 and "data source is down" in buggy["status"]["message"]
    kids = children(spans, buggy)
    assert attrs(kids["Filter"])["kubesched.status"] == "Error" and kids["Filter"]["status"]["code"] == 2

    unattached = cycle_of(spans, "default/unattached")
    assert attrs(unattached)["kubesched.result"] == "scheduled"  # the cycle chose a node; its binding failed
    binding = children(spans, unattached)["BindingCycle"]
    assert binding["status"]["code"] == 2 and "volume not attached" in attrs(binding)["kubesched.result"]
    prebind = children(spans, binding)["PreBind"]
    assert prebind["status"]["code"] == 2 and "Bind" not in children(spans, binding)
    assert result.placements["default/unattached"] is None  # retried, failing each time: every attempt is a trace
    attempts = sorted(attrs(s)["kubesched.attempt"] for s in spans
                      if s["name"] == "SchedulingCycle" and attrs(s)["kubesched.pod"] == "default/unattached")
    assert attempts == list(range(1, len(attempts) + 1)) and len(attempts) >= 2
    assert len({s["traceId"] for s in spans if s["name"] == "SchedulingCycle"}) == len(
        [s for s in spans if s["name"] == "SchedulingCycle"])  # one trace per cycle


class Untouchable(Tracer):
    """Tracing off: the scheduler may read `enabled`, and must call nothing else."""

    def start(self) -> CycleTrace | None:
        raise AssertionError("start() called with tracing off")

    def finish(self, *args: Any) -> None:
        raise AssertionError("finish() called with tracing off")

    def binding(self, *args: Any) -> None:
        raise AssertionError("binding() called with tracing off")


def test_off_calls_nothing_and_sampled_out_builds_nothing() -> None:
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_pod("a").req(cpu="100m", memory="100Mi").manifest(),
        make_pod("b").req(cpu="9", memory="100Mi").manifest(),
        make_pod("c").req(cpu="100m", memory="100Mi").manifest(),
    ]
    for off in (Untouchable(None), Untouchable(TracingConfig("127.0.0.1:9", 0))):
        result, sim = simulate(objects, off)
        assert result.pods_scheduled == 2 and not off.buffer and sim.scheduler.observer._traces == {}
        assert all(f.trace is None for f in sim.scheduler.frameworks.values())

    class NeverSampled(CollectingTracer):
        def finish(self, *args: Any) -> None:
            raise AssertionError("a sampled-out cycle reached finish()")

    rng = random.Random(7)
    never = NeverSampled(1, rng=rng)  # 1 per million: with this seed, none of the few draws samples
    result, sim = simulate(objects, never)
    assert result.pods_scheduled == 2 and never.sent == [] and sim.scheduler.observer._traces == {}


def test_the_sampling_rate_is_per_cycle() -> None:
    tracer = CollectingTracer(500_000, rng=random.Random(3))
    objects = [make_node(f"n{i}").without("ephemeral-storage").manifest() for i in range(4)] + [
        make_pod(f"p{i}").req(cpu="10m", memory="100Mi").manifest() for i in range(400)
    ]
    result, _ = simulate(objects, tracer)
    assert result.pods_scheduled == 400
    cycles = [s for s in tracer.sent if s["name"] == "SchedulingCycle"]
    assert 150 < len(cycles) < 250
    bindings = [s for s in tracer.sent if s["name"] == "BindingCycle"]
    assert len(bindings) == len(cycles)  # a sampled cycle's binding is traced too, and only theirs
    assert {b["parentSpanId"] for b in bindings} == {c["spanId"] for c in cycles}


def test_a_full_buffer_drops_whole_cycles_and_says_so(monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    import kubesched.observe.tracing as tracing

    monkeypatch.setattr(tracing, "BUFFER_SPANS", 40)
    monkeypatch.setattr(tracing, "BATCH_SPANS", 1000)  # nothing is sent before close(): the buffer fills
    tracer = CollectingTracer(1_000_000)
    objects = [make_node(f"n{i}").without("ephemeral-storage").manifest() for i in range(3)] + [
        make_pod(f"p{i}").req(cpu="10m", memory="100Mi").manifest() for i in range(30)
    ]
    with caplog.at_level("WARNING", logger="kubesched.observe.tracing"):
        result, _ = simulate(objects, tracer)
    assert result.pods_scheduled == 30 and tracer.dropped > 0 and len(tracer.sent) <= 40
    cycles = {s["spanId"] for s in tracer.sent if s["name"] == "SchedulingCycle"}
    bindings = {s["spanId"] for s in tracer.sent if s["name"] == "BindingCycle"}
    assert cycles and all(s["parentSpanId"] in cycles | bindings for s in tracer.sent if s["spanId"] not in cycles)
    assert all(s["parentSpanId"] in cycles for s in tracer.sent if s["name"] == "BindingCycle")  # no orphans
    assert f"{tracer.dropped} spans dropped" in caplog.text
