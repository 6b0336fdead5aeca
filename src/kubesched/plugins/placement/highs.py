"""The MILP solver behind joint placement: HiGHS, through its own binding (highspy).

Single-threaded, fixed random seed, no output. The model's sparse matrix is handed over as numpy
arrays in one call. A wall-clock limit (the time
budget left) and/or a branch-and-bound node limit (a budget that does not depend on the machine's
speed) stop the search; HiGHS then returns its best solution so far, if it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Imported with the module (about 0.1 s), not on the first group's clock.
import highspy
import numpy as np

from kubesched.plugins.placement.model import FloatArray, IntArray, Model


@dataclass(frozen=True)
class SolverResult:
    """counts[p]: members of pair p's class on pair p's node; None when the solver has no solution to give."""

    counts: IntArray | None
    optimal: bool  # proven optimal
    infeasible: bool  # proven: no assignment places min_count members on the model's candidates
    limit_reached: bool  # stopped by the time or work limit


# The smallest wall-clock limit handed to HiGHS: below this it cannot even run presolve.
MIN_TIME_LIMIT = 0.001
# Kept back from the time left for reading the solution out (HiGHS stops a little after its limit).
RESERVE = 0.003


def _new_highs() -> Any:
    # The raw binding, not the highspy.Highs wrapper: the wrapper installs Python logging callbacks
    # and prints HiGHS's banner on stdout the first time one is made, whatever output_flag says.
    factory = getattr(highspy, "_Highs", None) or getattr(highspy, "Highs")  # noqa: B009
    h = factory()
    h.setOptionValue("output_flag", False)
    return h


def solve(model: Model, time_limit: float | None, work_limit: int | None, hint: FloatArray | None, seed: int) -> SolverResult:
    """Maximize model.obj over the model, starting from `hint` if given (values of every variable)."""
    n = model.variables
    p = int(model.pair_class.size)
    h = _new_highs()
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", int(seed))
    # Stop only at a proven optimum. The objective is integral unless the balance term is on.
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 1e-6 if model.continuous.any() else 0.5)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit) - min(RESERVE, 0.1 * float(time_limit)), MIN_TIME_LIMIT))
    if work_limit is not None:
        h.setOptionValue("mip_max_nodes", int(work_limit))
    # Column-wise (CSC) matrix from the COO triplets.
    order = np.lexsort((model.rows, model.cols))
    start = np.searchsorted(model.cols[order], np.arange(n + 1)).astype(np.int32)
    index = model.rows[order].astype(np.int32)
    value = model.vals[order].astype(np.float64)
    h.passModel(
        n,
        model.constraints,
        int(index.size),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMaximize),
        0.0,
        model.obj.astype(np.float64),
        np.zeros(n, dtype=np.float64),
        model.ub.astype(np.float64),
        model.row_lb,
        model.row_ub,
        start,
        index,
        value,
        (~model.continuous).astype(np.int32),  # 1: integer
    )
    if hint is not None:
        h.setSolution(n, np.arange(n, dtype=np.int32), hint.astype(np.float64))
    h.run()
    status = h.getModelStatus()
    ms = highspy.HighsModelStatus
    has_solution = h.getInfo().primal_solution_status == int(highspy.SolutionStatus.kSolutionStatusFeasible)
    optimal = status == ms.kOptimal
    infeasible = status == ms.kInfeasible
    limit = status in (ms.kTimeLimit, ms.kSolutionLimit, ms.kIterationLimit, ms.kInterrupt)
    counts = None
    if has_solution and (optimal or limit):
        counts = np.rint(np.asarray(h.getSolution().col_value, dtype=np.float64)[:p]).astype(np.int64)
    return SolverResult(counts, optimal, infeasible, limit)
