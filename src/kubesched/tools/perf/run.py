"""One scheduler_perf workload, start to end, on a target (the simulator, or a real apiserver with
kubesched or kube-scheduler as the scheduler); and the list of what can run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kubesched.config.types import SchedulerConfig
from kubesched.infra import features
from kubesched.scheduler.configload import load_config
from kubesched.tools.devcluster.binaries import Binaries, find_binaries
from kubesched.tools.devcluster.schedulers import KUBE_SCHEDULER, KUBESCHED
from kubesched.tools.perf.executor import Executor, WorkloadResult, refusal
from kubesched.tools.perf.gates import apiserver_refusal, kubesched_gates, parse_for_kubesched
from kubesched.tools.perf.kuberun import SCHEDULERS, needs_claim_controller, run_dir, run_workload, target_label
from kubesched.tools.perf.objects import unmodelled_kind
from kubesched.tools.perf.simtarget import SimTarget
from kubesched.tools.perf.workloads import TestCase, Workload, WorkloadError


@dataclass(frozen=True)
class RunFailed:
    """One scheduler's run of a workload that did not finish, and why."""

    target: str
    error: str


@dataclass(frozen=True)
class Plan:
    """A workload ready to run, or the reason it cannot."""

    case: TestCase
    workload: Workload
    gates: str  # --feature-gates for kubesched
    refused: str | None
    kube_refused: str | None = None  # why the pinned release's control plane cannot run it (both schedulers)

    @property
    def name(self) -> str:
        return f"{self.case.name}/{self.workload.name}"


def plan(case: TestCase, workload: Workload) -> Plan:
    ops = case.ops(workload)
    gates, why = kubesched_gates(case.gates_for(workload))
    why = refusal(case, workload, ops, lambda _g: why or unmodelled_kind(ops))
    return Plan(case, workload, gates, why, apiserver_refusal(case.gates_for(workload)))


def scheduler_config(case: TestCase, override: Path | None = None) -> SchedulerConfig:
    """The test case's own scheduler configuration (schedulerConfigPath), else kube's defaults."""
    return load_config(override or case.scheduler_config)


async def run_on_simulator(p: Plan, *, config: Path | None = None, wait_seconds: float = 600.0,
                           progress: Callable[[str], None] | None = None) -> WorkloadResult:
    """Runs the workload on the simulator; WorkloadError if it cannot run there."""
    if p.refused:
        raise WorkloadError(f"{p.name}: {p.refused}")
    with features.gates(**asdict(parse_for_kubesched(p.gates))):
        target = SimTarget(scheduler_config(p.case, config))
        await target.start()
        try:
            return await Executor(p.case, p.workload, target, wait_seconds=wait_seconds, progress=progress).run(p.case.ops(p.workload))
        finally:
            await target.stop()


async def run_on_kube(p: Plan, scheduler: str = KUBESCHED, *, binaries: Binaries | None = None, k8s_bin: Path | None = None,
                      workdir: Path | None = None, config: Path | None = None, wait_seconds: float = 600.0,
                      progress: Callable[[str], None] | None = None) -> WorkloadResult:
    """Runs the workload on a fresh real control plane (etcd + kube-apiserver, found in `k8s_bin`, else
    as `make k8s-bin` leaves them) with `scheduler` ("kubesched" or "kube-scheduler") as a process;
    its target label is e.g. "kubesched (apiserver)". Logs (and the configuration) go to `workdir`,
    kept; without one, to a temporary directory removed afterwards unless the run failed.
    WorkloadError if the workload cannot run there; BinariesMissing (one line naming `make k8s-bin`)
    without the binaries."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {scheduler!r} (one of {', '.join(SCHEDULERS)})")
    # kube-scheduler runs what kubesched lacks a feature for, not an op this client cannot run.
    why = p.kube_refused or (p.refused if scheduler == KUBESCHED
                             else refusal(p.case, p.workload, p.case.ops(p.workload), lambda _g: None))
    if why:
        raise WorkloadError(f"{p.name}: {why}")
    found = binaries or find_binaries(k8s_bin)
    if needs_claim_controller(p.case.gates_for(p.workload)):
        found.need_kube_controller_manager()
    if scheduler == KUBE_SCHEDULER:
        found.need_kube_scheduler()
    else:
        with features.gates(**asdict(parse_for_kubesched(p.gates))):
            scheduler_config(p.case, config)  # refused here with its message, not in the process's log
    with run_dir(workdir) as d:
        return await run_workload(p.case, p.workload, scheduler, found, d, kubesched_gates=p.gates, config=config,
                                  wait_seconds=wait_seconds, progress=progress)


async def compare(p: Plan, rounds: int = 1, *, binaries: Binaries | None = None, k8s_bin: Path | None = None,
                  workdir: Path | None = None, config: Path | None = None, wait_seconds: float = 600.0,
                  progress: Callable[[str], None] | None = None) -> list[WorkloadResult | RunFailed]:
    """The workload through kubesched and through kube-scheduler, `rounds` times each, each run on a
    fresh control plane; the order alternates (round 1: kubesched first, round 2: kube-scheduler
    first, ...) so neither always runs on a machine the other has just warmed or tired. The results
    in the order run; a run that fails is a RunFailed and the others still run, so one scheduler's
    failure still leaves the other's figures. Logs of each run in <workdir>/round<N>-<scheduler>
    when `workdir` is given."""
    found = binaries or find_binaries(k8s_bin)
    found.need_kube_scheduler()
    say = progress or (lambda _: None)
    results: list[WorkloadResult | RunFailed] = []
    for r in range(1, rounds + 1):
        order = SCHEDULERS if r % 2 else tuple(reversed(SCHEDULERS))
        for scheduler in order:
            where = workdir / f"round{r}-{scheduler}" if workdir is not None else None
            try:
                results.append(await run_on_kube(p, scheduler, binaries=found, workdir=where, config=config,
                                                 wait_seconds=wait_seconds, progress=_prefixed(say, f"round {r}/{rounds}, {scheduler}: ")))
            except WorkloadError as exc:
                say(f"round {r}/{rounds}, {scheduler}: FAILED: {exc}")
                results.append(RunFailed(target_label(scheduler), str(exc)))
    return results


def _prefixed(say: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda line: say(prefix + line)
