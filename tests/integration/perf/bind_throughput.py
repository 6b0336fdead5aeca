"""Binding throughput through a real kube-apiserver: kubesched next to kube-scheduler.

    make bench-kube                     # or: PYTHONPATH=tests .venv/bin/python -m integration.perf.bind_throughput

One control plane, 100 nodes (4 CPU / 32Gi / 110 pods), then for each scheduler in turn a
namespace of 1,000 pending pause pods (100m / 500Mi) created before the scheduler starts, so
both see the same backlog. Both run with client QPS and burst 5000, leader election off.
A watch timestamps each pod's binding as the API server reports it; throughput is pods over
the time from the first binding to the last (scheduler_perf also counts a pod once
spec.nodeName is set). Not a test: a measurement, printed as a table and optionally as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from builders import make_namespace
from integration.harness.binaries import require_binaries
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_ready_node, pod_manifest
from integration.harness.rest import Kube


def create_pods(kube: Kube, namespace: str, count: int, scheduler: str) -> None:
    kube.create("/api/v1/namespaces", make_namespace(namespace))

    def one(i: int) -> None:
        body = pod_manifest(f"pod-{i}", namespace, cpu="100m", memory="500Mi", scheduler_name=scheduler)
        kube.create(f"/api/v1/namespaces/{namespace}/pods", body)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


def clear_pods(kube: Kube, namespace: str) -> None:
    """Frees the nodes for the next measurement (100 nodes hold 4,000 such pods: two rounds)."""
    kube.delete(f"/api/v1/namespaces/{namespace}/pods", grace_period_seconds=0)
    deadline = time.monotonic() + 60
    while kube.list(f"/api/v1/namespaces/{namespace}/pods") and time.monotonic() < deadline:
        time.sleep(0.2)


def watch_bindings(kube: Kube, namespace: str, count: int, stamps: dict[str, float], done: threading.Event) -> None:
    rv = kube.get(f"/api/v1/namespaces/{namespace}/pods", {"limit": 1})["metadata"]["resourceVersion"]
    while len(stamps) < count and not done.is_set():
        for event in kube.watch(f"/api/v1/namespaces/{namespace}/pods", {"resourceVersion": rv}, timeout=5):
            obj = event["object"]
            rv = obj["metadata"].get("resourceVersion", rv)
            if obj.get("spec", {}).get("nodeName"):
                stamps.setdefault(obj["metadata"]["name"], time.monotonic())
            if len(stamps) >= count:
                break


def measure(
    cp: ControlPlane, kube: Kube, name: str, count: int, start: Callable[[], AbstractContextManager[Any]], scheduler: str
) -> dict[str, Any]:
    namespace = f"bench-{name}"
    create_pods(kube, namespace, count, scheduler)
    stamps: dict[str, float] = {}
    done = threading.Event()
    watcher = threading.Thread(target=watch_bindings, args=(kube, namespace, count, stamps, done), daemon=True)
    watcher.start()
    launched = time.monotonic()
    with start():
        deadline = time.monotonic() + 300
        while len(stamps) < count and time.monotonic() < deadline:
            time.sleep(0.05)
    done.set()
    clear_pods(kube, namespace)
    times = sorted(stamps.values())
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    return {
        "scheduler": name,
        "pods_bound": len(times),
        "first_bind_after_start_s": round(times[0] - launched, 3) if times else None,
        "bind_span_s": round(span, 3),
        "pods_per_second": round((len(times) - 1) / span, 1) if len(times) > 1 else 0.0,
    }


def run(nodes: int, pods: int, rounds: int, workdir: Path) -> list[dict[str, Any]]:
    results = []
    with ControlPlane(require_binaries(kube_scheduler=True), workdir=workdir / "cp") as cp:
        kube = cp.kube()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: create_ready_node(kube, f"node-{i}"), range(nodes)))
        for r in range(rounds):
            results.append(measure(
                cp, kube, f"kubesched-{r}", pods,
                lambda r=r: run_kubesched(workdir / f"ks{r}", kubesched_config(cp.admin_kubeconfig), wait_ready=False),
                "kubesched",
            ))
            results.append(measure(
                cp, kube, f"kube-scheduler-{r}", pods,
                lambda: run_kube_scheduler(cp, qps=5000, burst=5000, wait_ready=False),
                "default-scheduler",
            ))
            for res in results[-2:]:
                print(json.dumps(res), flush=True)
    return results


def _rows(results: list[dict[str, Any]]) -> Iterator[str]:
    yield f"{'scheduler':<22} {'bound':>6} {'first bind (s)':>15} {'span (s)':>9} {'pods/s':>8}"
    for r in results:
        yield (f"{r['scheduler']:<22} {r['pods_bound']:>6} {r['first_bind_after_start_s']!s:>15} "
               f"{r['bind_span_s']:>9} {r['pods_per_second']:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubesched-bench-") as tmp:
        results = run(args.nodes, args.pods, args.rounds, Path(tmp))
    print("\n".join(_rows(results)))
    if args.json:
        args.json.write_text(json.dumps({"nodes": args.nodes, "pods": args.pods, "results": results}, indent=2))


if __name__ == "__main__":
    main()
