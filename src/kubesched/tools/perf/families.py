"""What upstream's Go test files add to a scheduler_perf family beyond its performance-config.yaml
(scheduler_perf's WithNodeUpdateFn and WithPreRunFn options), by the directory the family is in.

nodedeclaredfeatures: after each createNodes op, every node of the cluster declares the features
Feature1..FeatureN (N: the workload's numNodeDeclaredFeatures), sorted as names sort, through a
status update, when the workload turns the NodeDeclaredFeatures gate on. Upstream's pre-run hook
also swaps the component-helpers list of features for N stand-ins that every pod with pod-level
resources would need, but the scheduler never sees them: its NodeDeclaredFeatures plugin reads
the default registry, built from the original list when the package was loaded. So the measured
scheduler knows the real features only, its PreFilter finds that the workload's pods need none of
them, and the nodes' declared names are ones it does not know; kubesched runs the family so too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

from kubesched.tools.perf.objects import Obj
from kubesched.tools.perf.workloads import TestCase, Workload, WorkloadError

NODE_DECLARED_FEATURES = "nodedeclaredfeatures"

# The nodes created so far -> the objects to write back (status included), after a createNodes op.
NodeUpdate = Callable[[Sequence[Obj]], list[Obj]]


def node_update(case: TestCase, workload: Workload) -> NodeUpdate | None:
    """The family's update of every node after each createNodes op, or None."""
    if case.file.parent.name != NODE_DECLARED_FEATURES or not workload.feature_gates.get("NodeDeclaredFeatures"):
        return None
    count = workload.params.get("numNodeDeclaredFeatures", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise WorkloadError(f"{case.name}/{workload.name}: numNodeDeclaredFeatures must be a non-negative integer, got {count!r}")
    names = sorted(f"Feature{i}" for i in range(1, count + 1))

    def declare(nodes: Sequence[Obj]) -> list[Obj]:
        out = []
        for node in nodes:
            updated = copy.deepcopy(node)
            updated.setdefault("status", {})["declaredFeatures"] = list(names)
            out.append(updated)
        return out

    return declare
