"""One scheduler_perf workload on a real kube-apiserver: a fresh control plane (etcd data dir and all:
that is how runs are isolated), one scheduler process (kubesched or the real kube-scheduler) with
the test case's configuration, the workload run by this process as scheduler_perf's client, then
everything stopped, on every way out (an error, a timeout, Ctrl-C).

The apiserver is set up as scheduler_perf's mustSetupCluster sets up its own: admission without
ServiceAccount, TaintNodesByCondition and Priority; the workload's feature gates; the beta
scheduling API (Workloads, PodGroups) served when GenericWorkload is on, DRA's API groups and
kube-controller-manager's resourceclaim controller (claims from pods' templates) when
DynamicResourceAllocation is; a 10-minute request timeout; authorization AlwaysAllow (the test
server's default). Both schedulers read the same configuration file (the case's schedulerConfigPath,
else kube's defaults) with its clientConnection set to the admin kubeconfig, 5000 QPS, burst 5000,
and leader election off; kube-scheduler gets the workload's feature gates as given, kubesched the
ones perf.gates maps them to."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.yamlio import InputFileError, YamlError, load_one, read_text
from kubesched.client import ApiClient, load_kubeconfig
from kubesched.tools.devcluster.binaries import Binaries
from kubesched.tools.devcluster.controllers import RESOURCECLAIM_CONTROLLER, start_controller_manager
from kubesched.tools.devcluster.controlplane import ApiserverSettings, ControlPlane
from kubesched.tools.devcluster.procs import ManagedProcess, ProcessDied, StartupTimeout, free_port
from kubesched.tools.devcluster.schedulers import (
    KUBE_SCHEDULER,
    KUBESCHED,
    METRICS_ALLOWED,
    SchedulerProcess,
    kube_scheduler_argv,
    kubesched_argv,
)
from kubesched.tools.perf.executor import Executor, WorkloadResult
from kubesched.tools.perf.kubetarget import BURST, QPS, KubeTarget
from kubesched.tools.perf.workloads import TestCase, Workload, WorkloadError

SCHEDULERS = (KUBESCHED, KUBE_SCHEDULER)
ADMISSION_OFF = "ServiceAccount,TaintNodesByCondition,Priority"  # scheduler_perf's customFlags
REQUEST_TIMEOUT = "10m0s"  # "sufficiently long to handle deleting pods of the largest test cases"
READY_TIMEOUT = 90.0
WATCHDOG_SECONDS = 0.5
KUBE_SCHEDULER_VERBOSITY = 1  # no line per pod (kube-scheduler logs bindings at -v=2)
DRA_API = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3")


def needs_claim_controller(gates: Mapping[str, bool]) -> bool:
    """Whether upstream's mustSetupCluster runs the resourceclaim controller for these gates (claims
    from pods' templates need it)."""
    return bool(gates.get("DynamicResourceAllocation"))


def target_label(scheduler: str) -> str:
    return f"{scheduler} (apiserver)"


def gate_flag(gates: Mapping[str, bool]) -> str:
    """--feature-gates as kube components take it."""
    return ",".join(f"{name}={str(on).lower()}" for name, on in sorted(gates.items()))


def apiserver_settings(gates: Mapping[str, bool]) -> ApiserverSettings:
    runtime = []
    if gates.get("DynamicResourceAllocation"):
        runtime += [f"{gv}=true" for gv in DRA_API]
    if gates.get("GenericWorkload"):
        runtime.append("scheduling.k8s.io/v1beta1=true")
    return ApiserverSettings(feature_gates=gate_flag(gates), runtime_config=",".join(runtime), disable_admission_plugins=ADMISSION_OFF,
                             authorization_mode="AlwaysAllow", request_timeout=REQUEST_TIMEOUT)


def scheduler_config(case: TestCase, kubeconfig: Path, override: Path | None = None) -> dict[str, Any]:
    """The KubeSchedulerConfiguration both schedulers run with."""
    source = override or case.scheduler_config
    doc: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    if source is not None:
        try:
            loaded = load_one(read_text(source, 4 * 2**20, "scheduler configuration"))
        except (InputFileError, YamlError) as exc:
            raise WorkloadError(f"{source}: {exc}") from None
        if not isinstance(loaded, dict):
            raise WorkloadError(f"{source}: a KubeSchedulerConfiguration expected")
        doc = loaded
    connection = dict(doc.get("clientConnection") or {})
    connection.update({"kubeconfig": str(kubeconfig), "qps": QPS, "burst": BURST})
    return {**doc, "clientConnection": connection, "leaderElection": {"leaderElect": False}}


def start_scheduler(kind: str, cp: ControlPlane, workdir: Path, config: dict[str, Any], *, kube_gates: Mapping[str, bool],
                    kubesched_gates: str) -> SchedulerProcess:
    """Starts the scheduler (not waiting for it); its log is <workdir>/<kind>.log."""
    config_file = workdir / "scheduler-config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    admin = (cp.admin_cert.cert_file, cp.admin_cert.key_file)
    if kind == KUBESCHED:
        argv = kubesched_argv(config_file, port, log_level="info", feature_gates=kubesched_gates, always_allow_paths=METRICS_ALLOWED)
    elif kind == KUBE_SCHEDULER:
        argv = kube_scheduler_argv(cp.binaries.need_kube_scheduler(), config_file, port, cert_dir=workdir / "kube-scheduler-certs",
                                   kubeconfig=cp.admin_kubeconfig, feature_gates=gate_flag(kube_gates),
                                   verbosity=KUBE_SCHEDULER_VERBOSITY, always_allow_paths=METRICS_ALLOWED)
    else:
        raise ValueError(f"unknown scheduler {kind!r} (one of {', '.join(SCHEDULERS)})")
    return SchedulerProcess(kind, ManagedProcess(kind, argv, workdir / f"{kind}.log"), port, admin).start()


@contextmanager
def run_dir(workdir: Path | None) -> Iterator[Path]:
    """`workdir` (kept), else a temporary directory removed afterwards unless the run failed."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    tmp = Path(tempfile.mkdtemp(prefix="kubesched-perf-"))
    try:
        yield tmp
    except WorkloadError as exc:
        raise WorkloadError(f"{exc} (logs in {tmp})") from exc.__cause__
    except Exception as exc:
        exc.add_note(f"logs in {tmp}")
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


async def _watchdog(procs: list[ManagedProcess]) -> None:
    """Returns (raising) as soon as a process the run needs has died."""
    while True:
        await asyncio.sleep(WATCHDOG_SECONDS)
        for proc in procs:
            if not proc.running():
                raise WorkloadError(str(proc.died_error("the workload ran")))


async def run_workload(case: TestCase, workload: Workload, scheduler: str, binaries: Binaries, workdir: Path, *,
                       kubesched_gates: str, config: Path | None = None, wait_seconds: float = 600.0,
                       progress: Callable[[str], None] | None = None) -> WorkloadResult:
    """The workload on a fresh control plane in `workdir` with `scheduler`; everything stopped at the end."""
    say = progress or (lambda _: None)
    gates = case.gates_for(workload)
    cp = ControlPlane(binaries, workdir / "controlplane", settings=apiserver_settings(gates))
    sched: SchedulerProcess | None = None
    controllers: ManagedProcess | None = None
    try:
        say(f"starting etcd and kube-apiserver in {workdir}")
        try:
            cp.start()
            if needs_claim_controller(gates):
                say("starting kube-controller-manager's resourceclaim controller")
                controllers = start_controller_manager(binaries.need_kube_controller_manager(), cp.admin_kubeconfig,
                                                       [RESOURCECLAIM_CONTROLLER], workdir, qps=QPS, burst=BURST, feature_gates=gates)
            doc = scheduler_config(case, cp.admin_kubeconfig, config)
            say(f"starting {scheduler}")
            sched = start_scheduler(scheduler, cp, workdir, doc, kube_gates=gates, kubesched_gates=kubesched_gates)
            t0 = time.monotonic()
            sched.wait_ready(READY_TIMEOUT)
        except (ProcessDied, StartupTimeout) as exc:  # a gate it refuses, a configuration it refuses: its log says why
            raise WorkloadError(str(exc)) from None
        say(f"{scheduler} ready in {time.monotonic() - t0:.1f} s")
        others = [*cp.processes(), *([controllers] if controllers is not None else [])]
        return await _execute(case, workload, cp, sched, others, wait_seconds, say)
    finally:
        if sched is not None:
            sched.stop()
        if controllers is not None:
            controllers.stop()
        cp.stop()
        shutil.rmtree(cp.etcd_data_dir, ignore_errors=True)


async def _execute(case: TestCase, workload: Workload, cp: ControlPlane, sched: SchedulerProcess, others: list[ManagedProcess],
                   wait_seconds: float, say: Callable[[str], None]) -> WorkloadResult:
    async with ApiClient(load_kubeconfig(str(cp.admin_kubeconfig)), qps=QPS, burst=BURST, user_agent="kubesched-perf") as client:
        target = KubeTarget(client, sched, target_label(sched.kind))
        await target.start()
        try:
            executor = Executor(case, workload, target, wait_seconds=wait_seconds, progress=say)
            run = asyncio.create_task(executor.run(case.ops(workload)))
            watch = asyncio.create_task(_watchdog([sched.process, *others]))
            try:
                done, _ = await asyncio.wait({run, watch}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (run, watch):
                    task.cancel()  # nothing for the one that ended
                await asyncio.gather(run, watch, return_exceptions=True)
            if run in done:
                return run.result()
            watch.result()  # raises what the watchdog saw
            raise AssertionError("unreachable: the watchdog only returns by raising")
        finally:
            await target.stop()
