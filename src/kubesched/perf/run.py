"""One scheduler_perf workload, start to end, on a target; and the list of what can run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kubesched import features
from kubesched.config import SchedulerConfig
from kubesched.configload import load_config
from kubesched.perf.executor import Executor, WorkloadResult, refusal
from kubesched.perf.gates import kubesched_gates
from kubesched.perf.simtarget import SimTarget
from kubesched.perf.workloads import TestCase, Workload, WorkloadError


@dataclass(frozen=True)
class Plan:
    """A workload ready to run, or the reason it cannot."""

    case: TestCase
    workload: Workload
    gates: str  # --feature-gates for kubesched
    refused: str | None

    @property
    def name(self) -> str:
        return f"{self.case.name}/{self.workload.name}"


def plan(case: TestCase, workload: Workload) -> Plan:
    ops = case.ops(workload)
    gates, why = kubesched_gates(case.gates_for(workload))
    why = refusal(case, workload, ops, lambda _g: why)
    return Plan(case, workload, gates, why)


def scheduler_config(case: TestCase, override: Path | None = None) -> SchedulerConfig:
    """The test case's own scheduler configuration (schedulerConfigPath), else kube's defaults."""
    return load_config(override or case.scheduler_config)


async def run_on_simulator(p: Plan, *, config: Path | None = None, wait_seconds: float = 600.0,
                           progress: Callable[[str], None] | None = None) -> WorkloadResult:
    """Runs the workload on the simulator; WorkloadError if it cannot run there."""
    if p.refused:
        raise WorkloadError(f"{p.name}: {p.refused}")
    with features.gates(**asdict(features.parse(p.gates))):
        target = SimTarget(scheduler_config(p.case, config))
        await target.start()
        try:
            return await Executor(p.case, p.workload, target, wait_seconds=wait_seconds, progress=progress).run(p.case.ops(p.workload))
        finally:
            await target.stop()
