"""What `kubesched simulate` reads of a finished simulation for its outputs: whether node usage was
measured (and why not), the explanations it keeps, and the report's inputs (observe.report takes
plain data: it may not reach into the simulator or the scheduler, which sit above it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported when used: `kubesched --help` need not load the report or the explainer
    from kubesched.observe import report

# Explanations kept per configuration (`simulate --json`, the report's decision explorer): those of
# the pods named with --explain, every pending pod's, then the scheduled pods' in the order of the
# input, up to this many besides the named ones (about 2 kB each).
SAVED_EXPLANATIONS = 2000
USAGE_DOC = "docs/simulator.md, Usage models"


def usage_declared(cluster: Any) -> bool:
    """Whether any pod or node of the input declares its real usage (sim.kubesched.io/usage-* or
    background-*); without one, the usage model has every pod use exactly its requests."""
    pods = any(sp.usage_cpu is not None or sp.usage_memory is not None for sp in cluster.pods)
    return pods or any(spec != (None, None) for spec in cluster.background.values())


def usage_gap(sim: Any, result: Any) -> str | None:
    """Why the run has no node usage to show (None when the usage model measured some): said
    instead of utilization figures that would read 0."""
    usage = getattr(sim, "usage", None)
    if usage is None or not usage.node_names:
        return "no usage measured: the cluster has no nodes"
    if usage.summary().samples == 0:
        return (f"no usage measured: the run ended at virtual time {result.virtual_seconds:g}s, before the usage model's "
                f"first scrape after the start (it scrapes every {usage.interval:g}s); usage over time needs pods that arrive "
                f"later or finish (sim.kubesched.io/arrival, duration), see {USAGE_DOC}")
    return None


def kept_explanations(sim: Any, result: Any, named: Sequence[str]) -> dict[str, Any]:
    """The explanations a simulation keeps: every pod named (namespace/name) wherever it fell in
    the run, then the pending pods', then the scheduled ones', up to SAVED_EXPLANATIONS of those."""
    from kubesched.scheduler.explain import explain_many

    pending = list(result.unschedulable)
    placed = [key for key, node in result.placements.items() if node]
    first = list(dict.fromkeys(named))
    rest = [key for key in pending + placed if key not in first]
    kept = explain_many(sim.scheduler, first + rest, SAVED_EXPLANATIONS + len(first))
    return {key: sim.as_the_cluster_shows(data) for key, data in kept.items()}


def usage_samples(cluster: Any, sim: Any) -> report.UsageSamples | None:
    """The usage model's scrapes after the start of the run (the first, at the start, covers time
    before it), or None if it took none."""
    from kubesched.observe import report

    usage = getattr(sim, "usage", None)
    if usage is None or not usage.node_names:
        return None
    after = usage.times > usage.started_at
    if not after.any():
        return None
    return report.UsageSamples(times=usage.times[after], started_at=float(usage.started_at), nodes=list(usage.node_names),
                               cpu=usage.cpu[after], memory=usage.memory[after], declared=usage_declared(cluster))


def node_requests(sim: Any) -> report.NodeRequests:
    """What the pods on each node request at the end of the run, against its allocatable: the
    scheduler cache's own figures, the ones its Filter plugins compared."""
    from kubesched.api.podinfo import CPU, MEMORY
    from kubesched.observe import report

    table = sim.scheduler.cache.table
    rows = np.flatnonzero(table.present[: table.size])
    shares = []
    for resource in (CPU, MEMORY):
        column = table.resource_index[resource]
        allocatable = table.allocatable[rows, column].astype(float)
        requested = table.requested[rows, column].astype(float)
        shares.append(np.divide(requested, allocatable, out=np.zeros_like(requested), where=allocatable > 0))
    return report.NodeRequests(nodes=table.names_of(rows.tolist()), cpu=shares[0], memory=shares[1])


def pending_waits(sim: Any, result: Any) -> list[float]:
    """How long each of our pods waited, created to bound (or to the end of the run), in virtual seconds."""
    cluster = sim.cluster
    end = result.virtual_seconds
    waits = []
    for sp in sim.input.pods:
        uid = sp.pod.metadata.uid
        if sp.pod.key in result.placements and uid in cluster.created_at:
            waits.append(cluster.bound_at.get(uid, end) - cluster.created_at[uid])
    return waits


def device_classes(sim: Any) -> list[Any]:
    """Per DeviceClass, its devices' use at the end of the run (empty when the cluster has none)."""
    from kubesched.devices.classuse import class_use
    from kubesched.devices.sliceinputs import DeviceColumns

    dra = sim.scheduler.dra
    slices = dra.slices.all()
    if not slices:
        return []
    columns = DeviceColumns(dra.slices.columns_of(slices))
    return class_use(dra.classes, slices, dra.claims.gather_allocated_state(), dra.selector_cache, columns)


def report_run(cluster: Any, sim: Any, result: Any, explanations: dict[str, Any]) -> report.Run:
    """One configuration's run as the report takes it."""
    from kubesched.observe import report

    return report.Run(
        label=result.profile,
        figures=result.as_dict(),
        pending_waits=pending_waits(sim, result),
        explanations=explanations,
        explained_cap=SAVED_EXPLANATIONS,
        usage=usage_samples(cluster, sim),
        usage_gap=usage_gap(sim, result),
        requests=node_requests(sim),
        devices=device_classes(sim),
    )
