"""The benchmark table (kubesched.tools.perf.markdown): one row per test case and workload, simulator and
real-apiserver figures side by side, medians over rounds, refused workloads listed with the reason."""

from __future__ import annotations

from typing import Any

from kubesched.tools.perf.markdown import KUBE_SCHEDULER, KUBESCHED_KUBE, table

SIM = "kubesched (simulator)"


def row(case: str, workload: str, target: str, pods_per_second: float, **extra: Any) -> dict[str, Any]:
    return {"case": case, "workload": workload, "target": target, "threshold": extra.pop("threshold", 0.0),
            "pods_per_second": pods_per_second, **extra}


def test_cases_sharing_a_workload_name_stay_apart() -> None:
    out = table({"rows": [row("TopologySpreading", "5000Nodes", SIM, 1500, threshold=460),
                          row("PreferredTopologySpreading", "5000Nodes", SIM, 1600, threshold=340)]})
    lines = out.splitlines()
    assert any(line.startswith("| TopologySpreading/5000Nodes | 460 | 1,500 |") for line in lines)
    assert any(line.startswith("| PreferredTopologySpreading/5000Nodes | 340 | 1,600 |") for line in lines)


def test_apiserver_rounds_are_medians_beside_the_simulator() -> None:
    sim = {"rows": [row("SchedulingBasic", "5000Nodes_10000Pods", SIM, 2560, threshold=680)]}
    kube = {"rows": [
        row("SchedulingBasic", "5000Nodes_10000Pods", KUBESCHED_KUBE, 240, cpu_seconds_per_1000_pods=1.4, rss_peak_mib=266),
        row("SchedulingBasic", "5000Nodes_10000Pods", KUBE_SCHEDULER, 160, cpu_seconds_per_1000_pods=3.2, rss_peak_mib=297),
        row("SchedulingBasic", "5000Nodes_10000Pods", KUBE_SCHEDULER, 180, cpu_seconds_per_1000_pods=3.0, rss_peak_mib=303),
        row("SchedulingBasic", "5000Nodes_10000Pods", KUBESCHED_KUBE, 280, cpu_seconds_per_1000_pods=1.2, rss_peak_mib=250),
    ]}
    line = next(x for x in table(sim, kube).splitlines() if x.startswith("| SchedulingBasic/"))
    assert line == "| SchedulingBasic/5000Nodes_10000Pods | 680 | 2,560 |  | 260 | 170 | 1.30 | 3.10 | 258 | 300 |"


def test_refused_workloads_are_listed_with_the_reason() -> None:
    out = table({"rows": [row("SchedulingWithResourceClaimTemplate", "5000pods_500nodes", SIM, 0,
                              refused="needs dynamic resource allocation")]})
    assert "- SchedulingWithResourceClaimTemplate/5000pods_500nodes: needs dynamic resource allocation" in out


def test_a_scheduler_whose_runs_all_failed_says_failed() -> None:
    sim = {"rows": [row("GangPreemptionBasic", "100Nodes", SIM, 33)]}
    failed = {"case": "GangPreemptionBasic", "workload": "100Nodes", "target": KUBESCHED_KUBE, "threshold": 0.0,
              "failed": "timed out after 600 s"}
    kube = {"rows": [failed, row("GangPreemptionBasic", "100Nodes", KUBE_SCHEDULER, 18, cpu_seconds_per_1000_pods=20.7)]}
    line = next(x for x in table(sim, kube).splitlines() if x.startswith("| GangPreemptionBasic/"))
    assert line.startswith("| GangPreemptionBasic/100Nodes |  | 33 |  | failed | 18 |  | 20.70 |")
    # One good round among failed ones gives that round's figure.
    kube["rows"].append(row("GangPreemptionBasic", "100Nodes", KUBESCHED_KUBE, 12))
    line = next(x for x in table(sim, kube).splitlines() if x.startswith("| GangPreemptionBasic/"))
    assert line.startswith("| GangPreemptionBasic/100Nodes |  | 33 |  | 12 | 18 |")


def test_a_workload_the_apiserver_cannot_run_says_so_and_why() -> None:
    why = "feature gate NodeDeclaredFeatures=false: kube-apiserver v1.37.2 has it locked to true and refuses to start"
    sim = {"rows": [row("SchedulingBasic", "50000Pods_Disabled", SIM, 4500, threshold=790)]}
    kube = {"rows": [{"case": "SchedulingBasic", "workload": "50000Pods_Disabled", "target": t, "threshold": 790.0, "refused": why}
                     for t in (KUBESCHED_KUBE, KUBE_SCHEDULER)]}
    out = table(sim, kube)
    line = next(x for x in out.splitlines() if x.startswith("| SchedulingBasic/"))
    assert line == "| SchedulingBasic/50000Pods_Disabled | 790 | 4,500 |  | not runnable | not runnable |  |  |  |  |"
    assert f"Not runnable on the real apiserver:\n\n- SchedulingBasic/50000Pods_Disabled: {why}" in out


def test_a_throughput_under_ten_keeps_a_decimal() -> None:
    sim = {"rows": [row("Starvation", "10000Nodes", SIM, 8.1)]}
    kube = {"rows": [row("Starvation", "10000Nodes", KUBESCHED_KUBE, 1.44), row("Starvation", "10000Nodes", KUBE_SCHEDULER, 0.5)]}
    line = next(x for x in table(sim, kube).splitlines() if x.startswith("| Starvation/"))
    assert line.startswith("| Starvation/10000Nodes |  | 8 |  | 1.4 | 0.5 |")
