"""`kubesched run` on the real apiserver through a churn of thousands of pods: its memory stays flat.

WAVES waves of WAVE pods each (a twentieth never fits: they wait, unschedulable, with their
FailedScheduling events and status patches) are created on NODES nodes, bound, then deleted.
kubesched's resident memory (VmRSS of its process) is read after the warm-up waves and at the
end, once it has seen every deletion; the end may exceed the warm-up level by at most
RSS_MARGIN_FRACTION of it plus RSS_MARGIN_BYTES.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.objects import pod_manifest
from integration.harness.rest import JSON, Kube
from kubesched.tools.devcluster.procs import wait_until

SCHEDULER = "kubesched"
NODES = 50
WAVES = 6
WAVE = 500
WARM_UP_WAVES = 2
RSS_MARGIN_FRACTION = 0.05
RSS_MARGIN_BYTES = 4 * 1024 * 1024


def vm_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def pending(ks: Kubesched) -> float:
    return sum(ks.metric("scheduler_pending_pods", queue=q) for q in ("active", "backoff", "unschedulable", "gated"))


def run_wave(kube: Kube, ks: Kubesched, namespace: str, wave: int) -> None:
    stuck = {f"w{wave}-p{i}" for i in range(0, WAVE, 20)}

    def create(i: int) -> None:
        name = f"w{wave}-p{i}"
        extra = {"nodeSelector": {"disk": "none"}} if name in stuck else None
        body = pod_manifest(name, namespace, cpu="10m", memory="16Mi", scheduler_name=SCHEDULER,
                            labels={"wave": str(wave), "serial": str(i)}, extra_spec=extra)
        kube.create(f"/api/v1/namespaces/{namespace}/pods", body)

    for i in range(WAVE):
        create(i)

    def placed() -> bool:
        pods = kube.list(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": f"wave={wave}"})
        bound = sum(1 for p in pods if p["spec"].get("nodeName"))
        return len(pods) == WAVE and bound == WAVE - len(stuck)

    wait_until(placed, timeout=120, what=f"wave {wave} bound", watch=[ks.process])
    # Every stuck pod has been tried and said why (its PodScheduled=False condition).
    wait_until(lambda: ks.metric("scheduler_pending_pods", queue="unschedulable") >= len(stuck), timeout=60,
               what=f"wave {wave}'s unschedulable pods in the pool", watch=[ks.process])
    # One by one (no kubelet: a zero grace period removes them at once); a collection delete of
    # hundreds of pods can outlast the client's read timeout on a busy machine.
    for i in range(WAVE):
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/w{wave}-p{i}", grace_period_seconds=0, missing_ok=True)
    wait_until(lambda: not kube.list(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": f"wave={wave}"}),
               timeout=60, what=f"wave {wave} deleted")
    wait_until(lambda: pending(ks) == 0, timeout=60, what=f"kubesched to see wave {wave} deleted", watch=[ks.process])


def test_rss_stays_flat_through_a_churn_of_thousands_of_pods(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    for _ in range(NODES):
        make_node(cpu="16", memory="64Gi", pods=110)
    started = time.monotonic()
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)) as ks:
        pid = ks.process.pid
        assert pid is not None
        rss: list[int] = []
        for wave in range(WAVES):
            run_wave(kube, ks, namespace, wave)
            time.sleep(0.5)  # events and status patches of the wave are posted by now
            rss.append(vm_rss(pid))
        scheduled = ks.metric("scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER)
        assert ks.running(), ks.log()
    mib = 1024 * 1024
    warm, end = rss[WARM_UP_WAVES - 1], rss[-1]
    figures = ", ".join(f"{b / mib:.1f}" for b in rss)
    print(f"\nkube soak: {WAVES * WAVE} pods ({scheduled:.0f} bound) in {time.monotonic() - started:.0f} s; "
          f"kubesched VmRSS MiB after each wave: {figures}; warm-up {warm / mib:.1f}, end {end / mib:.1f}")
    assert scheduled >= WAVES * WAVE * 0.95 - 1
    assert end <= warm * (1 + RSS_MARGIN_FRACTION) + RSS_MARGIN_BYTES, figures
