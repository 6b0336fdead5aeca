"""The parts of `bench --scheduler-perf --kube` that need no control plane: the apiserver's and the
schedulers' settings, the metrics and /proc readings, where the binaries are looked for."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import yaml

from kubesched.tools.devcluster.binaries import BinariesMissing, cache_dir, find_binaries
from kubesched.tools.devcluster.controllers import RESOURCECLAIM_CONTROLLER, controller_manager_argv
from kubesched.tools.devcluster.schedulers import kube_scheduler_argv, kubesched_argv, parse_histogram, read_usage
from kubesched.tools.perf.executor import attempt_count, attempt_percentiles
from kubesched.tools.perf.kuberun import apiserver_settings, gate_flag, needs_claim_controller, scheduler_config
from kubesched.tools.perf.source import KUBE_VERSION
from kubesched.tools.perf.workloads import TestCase as Case

REPO = Path(__file__).resolve().parents[4]

KUBE_METRICS = """\
# HELP scheduler_scheduling_attempt_duration_seconds [STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.002"} 4
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.004"} 10
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 10
scheduler_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.025
scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 10
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.001"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.002"} 1
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="0.004"} 2
scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="unschedulable",le="+Inf"} 2
scheduler_scheduling_attempt_duration_seconds_bucket_total{le="0.001"} 99
scheduler_pod_scheduling_sli_duration_seconds_bucket{le="0.001"} 7
"""


def test_histogram_summed_over_labels_in_bound_order() -> None:
    buckets = parse_histogram(KUBE_METRICS, "scheduler_scheduling_attempt_duration_seconds")
    assert buckets == [(0.001, 1.0), (0.002, 5.0), (0.004, 12.0), (math.inf, 12.0)]
    assert parse_histogram(KUBE_METRICS, "no_such_histogram") == []
    # A label value holding a comma or an escaped quote does not hide `le`.
    odd = 'h_bucket{profile="a,\\"b",le="0.5"} 3\nh_bucket{profile="a,\\"b",le="+Inf"} 4\n'
    assert parse_histogram(odd, "h") == [(0.5, 3.0), (math.inf, 4.0)]
    before = [(0.001, 0.0), (0.002, 0.0), (0.004, 0.0), (math.inf, 0.0)]
    assert attempt_percentiles(before, buckets)["p50"] == pytest.approx(2.0 + 2.0 * (6 - 5) / 7, abs=1e-3)
    assert attempt_count(before, buckets) == 12
    assert attempt_count([(0.001, 1.0), (math.inf, 5.0)], buckets) == 7 and attempt_count(before, []) == 0


def test_usage_of_a_live_process_and_of_none() -> None:
    sum(i * i for i in range(200_000))  # some CPU of our own
    u = read_usage(os.getpid())
    assert u.cpu_seconds > 0 and u.rss_peak_bytes > 10 * 2**20
    with pytest.raises(OSError):
        read_usage(2**22 + 17)  # above pid_max's largest value


def test_apiserver_settings_as_scheduler_perfs() -> None:
    s = apiserver_settings({"SchedulerAsyncAPICalls": False, "GenericWorkload": True})
    assert s.disable_admission_plugins == "ServiceAccount,TaintNodesByCondition,Priority"
    assert s.feature_gates == "GenericWorkload=true,SchedulerAsyncAPICalls=false"
    assert s.runtime_config == "scheduling.k8s.io/v1beta1=true"
    assert s.request_timeout == "10m0s" and s.authorization_mode == "AlwaysAllow"
    plain = apiserver_settings({})
    assert plain.feature_gates == "" and plain.runtime_config == ""
    assert "resource.k8s.io/v1=true" in apiserver_settings({"DynamicResourceAllocation": True}).runtime_config
    assert gate_flag({"B": True, "A": False}) == "A=false,B=true"


def test_the_resourceclaim_controller_runs_for_dra_workloads_as_upstreams_setup_runs_it(tmp_path: Path) -> None:
    assert needs_claim_controller({"DynamicResourceAllocation": True})
    assert not needs_claim_controller({}) and not needs_claim_controller({"DynamicResourceAllocation": False})
    argv = controller_manager_argv(Path("/bin/kcm"), tmp_path / "admin.kubeconfig", [RESOURCECLAIM_CONTROLLER], 10259,
                                   cert_dir=tmp_path / "certs", qps=5000.0, burst=5000,
                                   feature_gates={"DynamicResourceAllocation": True, "A": False})
    assert argv[0] == "/bin/kcm"
    assert "--controllers=resourceclaim-controller" in argv and "--leader-elect=false" in argv
    assert "--bind-address=127.0.0.1" in argv and "--secure-port=10259" in argv
    assert "--kube-api-qps=5000" in argv and "--kube-api-burst=5000" in argv  # scheduler_perf's client, not the default 20
    assert "--feature-gates=A=false,DynamicResourceAllocation=true" in argv
    assert f"--kubeconfig={tmp_path / 'admin.kubeconfig'}" in argv


def test_a_dra_workload_needs_kube_controller_manager(tmp_path: Path) -> None:
    from kubesched.tools.devcluster.binaries import Binaries

    found = Binaries(tmp_path / "etcd", tmp_path / "kube-apiserver", tmp_path / "kube-scheduler", str(tmp_path))
    with pytest.raises(BinariesMissing, match=r"no kube-controller-manager next to etcd and kube-apiserver .*: run `make k8s-bin`"):
        found.need_kube_controller_manager()


def _case(tmp_path: Path, config: Path | None) -> Case:
    return Case("C", tmp_path / "performance-config.yaml", (), (), {}, (), config, None, "SchedulingThroughput")


def test_scheduler_configuration_keeps_the_cases_and_sets_the_client(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "admin.kubeconfig"
    default = scheduler_config(_case(tmp_path, None), kubeconfig)
    assert default == {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000.0, "burst": 5000},
        "leaderElection": {"leaderElect": False},
    }
    own = tmp_path / "scheduler-config.yaml"
    own.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"contentType": "application/json", "qps": 10},
        "leaderElection": {"leaderElect": True},
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
    }))
    doc = scheduler_config(_case(tmp_path, own), kubeconfig)
    assert doc["clientConnection"] == {"contentType": "application/json", "qps": 5000.0, "burst": 5000, "kubeconfig": str(kubeconfig)}
    assert doc["leaderElection"] == {"leaderElect": False}
    assert doc["profiles"][0]["plugins"]["score"]["disabled"] == [{"name": "*"}]


def test_scheduler_command_lines(tmp_path: Path) -> None:
    ks = kubesched_argv(tmp_path / "c.yaml", 1234, feature_gates="GenericWorkload=true", always_allow_paths="/metrics")
    assert ks[1:4] == ["-m", "kubesched.cli", "run"]
    assert ks[ks.index("--bind-address"):ks.index("--bind-address") + 2] == ["--bind-address", "127.0.0.1"]
    assert ks[ks.index("--feature-gates") + 1] == "GenericWorkload=true"
    kube = kube_scheduler_argv(tmp_path / "kube-scheduler", tmp_path / "c.yaml", 1234, cert_dir=tmp_path, kubeconfig=tmp_path / "k",
                               feature_gates="A=true", verbosity=1, always_allow_paths="/healthz,/metrics")
    assert {"--bind-address=127.0.0.1", "--secure-port=1234", "--feature-gates=A=true", "--v=1",
            "--authorization-always-allow-paths=/healthz,/metrics"} <= set(kube)


def test_binaries_looked_up_in_the_given_directory_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("KUBESCHED_K8S_CACHE", str(tmp_path / "cache"))
    with pytest.raises(BinariesMissing, match=r"make k8s-bin") as missing:
        find_binaries()
    assert "\n" not in str(missing.value)
    given = tmp_path / "bin"
    given.mkdir()
    with pytest.raises(BinariesMissing, match=r"--k8s-bin .*bin does not hold etcd and kube-apiserver.*make k8s-bin"):
        find_binaries(given)
    for name in ("etcd", "kube-apiserver"):
        (given / name).write_text("#!/bin/sh\n")
        (given / name).chmod(0o755)
    found = find_binaries(given)
    assert (found.etcd, found.kube_scheduler) == (given / "etcd", None)
    with pytest.raises(BinariesMissing, match="no kube-scheduler"):
        found.need_kube_scheduler()
    assert cache_dir() == tmp_path / "cache" / f"k8s-{KUBE_VERSION}"


def test_the_pinned_release_is_the_one_tools_k8s_builds() -> None:
    go_mod = (REPO / "tools" / "k8s" / "kube" / "go.mod").read_text().split()
    assert go_mod[go_mod.index("k8s.io/kubernetes") + 1] == KUBE_VERSION


def test_one_schedulers_failed_run_leaves_the_others_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare/on_kube with the runs themselves faked (no control plane here): kubesched's run
    fails, kube-scheduler's still runs and is reported; the failure is kubesched's row."""
    from kubesched.tools.perf import command
    from kubesched.tools.perf import run as perf_run
    from kubesched.tools.perf.executor import WorkloadResult
    from kubesched.tools.perf.workloads import Workload, WorkloadError

    class FakeBinaries:
        def need_kube_scheduler(self) -> None:
            return None

    async def fake_run(p: object, scheduler: str, **_: object) -> WorkloadResult:
        if scheduler == "kubesched":
            raise WorkloadError("timed out after 600 s waiting for 100 pods")
        return WorkloadResult("Gang", "100Nodes", "kube-scheduler (apiserver)", 0.0)

    monkeypatch.setattr(perf_run, "find_binaries", lambda _bin=None: FakeBinaries())
    monkeypatch.setattr(perf_run, "run_on_kube", fake_run)
    case = Case("Gang", Path("x.yaml"), (), (), {}, (), None, None, "SchedulingThroughput")
    plan = perf_run.Plan(case, Workload("100Nodes", {}, ("performance",), 0.0, {}), "", None)
    rows = command.on_kube([plan], vs=True, rounds=1)
    assert [(r.target, r.failed, r.result is not None) for r in rows] == [
        ("kubesched (apiserver)", "timed out after 600 s waiting for 100 pods", False),
        ("kube-scheduler (apiserver)", None, True),
    ]


def test_a_workload_the_pinned_apiserver_refuses_is_not_run_by_either_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan the control plane cannot run (a gate it has locked, turned off) gives a "not run" row
    for each scheduler with the reason, without starting anything; run_on_kube refuses it too."""
    import asyncio

    from kubesched.tools.perf import command
    from kubesched.tools.perf import run as perf_run
    from kubesched.tools.perf.workloads import Workload, WorkloadError

    def no_binaries(_bin: object = None) -> object:
        raise AssertionError("nothing is started for a workload the apiserver refuses")

    monkeypatch.setattr(perf_run, "find_binaries", no_binaries)
    case = Case("SchedulingBasic", Path("x.yaml"), (), (), {}, (), None, None, "SchedulingThroughput")
    why = "feature gate NodeDeclaredFeatures=false: kube-apiserver v1.37.2 has it locked to true and refuses to start"
    plan = perf_run.Plan(case, Workload("5000Nodes", {}, ("performance",), 790.0, {}), "", None, why)
    rows = command.on_kube([plan], vs=True, rounds=2)
    assert [(r.target, r.refused) for r in rows] == [("kubesched (apiserver)", why), ("kube-scheduler (apiserver)", why)]
    for scheduler in perf_run.SCHEDULERS:
        with pytest.raises(WorkloadError, match="locked to true"):
            asyncio.run(perf_run.run_on_kube(plan, scheduler))
