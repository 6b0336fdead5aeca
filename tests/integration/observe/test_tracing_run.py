"""`kubesched run` on the real apiserver exports its cycles to a real OpenTelemetry Collector
while it runs (the background export, not only the flush at exit), and each span names the pod,
uid and node the API server holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.otelcol import Span, run_collector
from integration.harness.rest import JSON, Kube
from kubesched.tools.devcluster.procs import wait_until


def cycle(spans: list[Span], pod: str, result: str) -> Span | None:
    return next((s for s in spans if s.name == "SchedulingCycle" and s.attributes.get("kubesched.pod") == pod
                 and s.attributes.get("kubesched.result") == result), None)


def test_a_running_scheduler_exports_its_cycles(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    make_node(cpu="2", memory="4Gi")
    with run_collector(tmp_path) as collector:
        tracing = tmp_path / "tracing.yaml"
        tracing.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"
                           f"endpoint: {collector.endpoint}\nsamplingRatePerMillion: 1000000\n")
        config = kubesched_config(control_plane.admin_kubeconfig)
        with run_kubesched(tmp_path, config, args=["--tracing-config-file", str(tracing)]) as ks:
            create_pod(kube, "web", namespace, cpu="500m", scheduler_name="kubesched")
            create_pod(kube, "huge", namespace, cpu="6", scheduler_name="kubesched")
            node = wait_bound(kube, namespace, "web")

            def both_arrived() -> list[Span] | None:
                spans = collector.spans()
                done = (cycle(spans, f"{namespace}/web", "scheduled") and cycle(spans, f"{namespace}/huge", "unschedulable")
                        and any(s.name == "Bind" for s in spans))
                return spans if done else None

            arrived = wait_until(both_arrived, timeout=30, what="the cycles' spans at the collector",
                                 watch=[ks.process, collector.process])
            assert ks.running()  # sent by the running scheduler's background export
    web_pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/web")
    web = cycle(arrived, f"{namespace}/web", "scheduled")
    assert web is not None
    a = web.attributes
    assert a["kubesched.node"] == node and a["k8s.pod.uid"] == web_pod["metadata"]["uid"]
    assert a["kubesched.profile"] == "kubesched" and a["k8s.namespace.name"] == namespace and a["k8s.pod.name"] == "web"
    assert a["kubesched.attempt"] == "1" and int(a["kubesched.nodes.feasible"]) >= 1
    kids = {s.name: s for s in arrived if s.parent_id == web.span_id}
    assert {"PreFilter", "Filter", "Reserve", "Permit", "BindingCycle"} <= set(kids)
    assert all(k.trace_id == web.trace_id for k in kids.values())
    binding = kids["BindingCycle"]
    assert binding.attributes == {"kubesched.node": node, "kubesched.result": "bound"}
    assert {"PreBind", "Bind"} <= {s.name for s in arrived if s.parent_id == binding.span_id}  # the Binding subresource's POST

    huge = cycle(arrived, f"{namespace}/huge", "unschedulable")
    assert huge is not None
    a = huge.attributes
    assert a["kubesched.message"].startswith("0/") and "Insufficient cpu" in a["kubesched.message"]
    assert int(a["kubesched.rejected.NodeResourcesFit"]) >= 1 and "kubesched.node" not in a
    assert "PostFilter" in {s.name for s in arrived if s.parent_id == huge.span_id}
