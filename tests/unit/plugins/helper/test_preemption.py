"""What the preemption plugins share: kube's MoreImportantPod order, pickOneNodeForPreemption, and
one node's trial removals told to the PreFilter extensions."""

from __future__ import annotations

from builders import make_node, make_pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.plugins.helper.preemption import (
    Candidate,
    DryRun,
    NodeTrial,
    importance_key,
    pick_one_node,
    taking,
)


def _pi(name: str, priority: int, start: str | None = None) -> PodInfo:
    p = make_pod(name).req(cpu="1").priority(priority).obj()
    p.status.start_time = start
    return make_pod_info(p)


def test_pick_one_node_criteria_in_order() -> None:
    a, b = _pi("a", 5), _pi("b", 5)
    # 1. fewer PDB violations wins over everything else
    fewer_pdb = Candidate(0, "x", [_pi("x", 100)], pdb_violations=0)
    more_pdb = Candidate(1, "y", [_pi("y", 1)], pdb_violations=1)
    assert pick_one_node([more_pdb, fewer_pdb]) is fewer_pdb
    # 2. lowest highest-priority victim
    lo = Candidate(0, "lo", [_pi("l1", 4), _pi("l2", 4), _pi("l3", 4)])
    hi = Candidate(1, "hi", [_pi("h", 5)])
    assert pick_one_node([hi, lo]) is lo
    # 3. smallest sum of (shifted) priorities
    small = Candidate(0, "s", [_pi("s1", 5), _pi("s2", 1)])
    big = Candidate(1, "b", [_pi("b1", 5), _pi("b2", 2)])
    assert pick_one_node([big, small]) is small
    # 4. fewest victims: the shifted sums tie only when the extra victims have the lowest int32
    #    priority, which shifts to 0
    one = Candidate(0, "one", [_pi("o1", 7)])
    two = Candidate(1, "two", [_pi("t1", 7), _pi("t2", -(2**31))])
    assert sum(v.priority + 2**31 for v in one.victims) == sum(v.priority + 2**31 for v in two.victims)
    assert pick_one_node([two, one]) is one
    # 5. latest earliest start among the highest-priority victims (lower ones do not count)
    early = Candidate(0, "e", [_pi("e1", 5, "2024-01-01T00:00:00Z"), _pi("e2", 1, "2025-01-01T00:00:00Z")])
    late = Candidate(1, "l", [_pi("l1", 5, "2024-03-01T00:00:00Z"), _pi("l2", 1, "2020-01-01T00:00:00Z")])
    assert pick_one_node([early, late]) is late
    # a victim that has not started counts as starting now: latest of all
    unstarted = Candidate(2, "u", [_pi("u1", 5), _pi("u2", 1, "2020-01-01T00:00:00Z")])
    assert pick_one_node([early, late, unstarted]) is unstarted
    # 6. then the first
    first, second = Candidate(0, "f", [a]), Candidate(1, "g", [b])
    assert pick_one_node([first, second]) is first
    assert pick_one_node([]) is None


def test_importance_order() -> None:
    pods = [
        _pi("p1-late", 1, "2024-06-01T00:00:00Z"),
        _pi("p5", 5),
        _pi("p1-early", 1, "2024-01-01T00:00:00Z"),
        _pi("p1-unstarted", 1),
    ]
    assert [p.key.split("/")[1] for p in sorted(pods, key=importance_key)] == [
        "p5",
        "p1-early",
        "p1-late",
        "p1-unstarted",
    ]


class _Extensions:
    """The PreFilter extensions a trial tells: they refuse to see `refused` put back."""

    def __init__(self, refused: str) -> None:
        self.refused = refused
        self.told: list[str] = []

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        self.told.append(f"-{removed.pod.metadata.name}")
        return None

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        self.told.append(f"+{added.pod.metadata.name}")
        return Status.error(f"cannot add {self.refused}") if added.pod.metadata.name == self.refused else None


def test_a_node_trial_tells_the_extensions_and_stops_at_their_first_error() -> None:
    table = NodeTable()
    row = table.upsert_node(make_node("n").obj())
    a, b = _pi("a", 1), _pi("b", 1)
    for p in (a, b):
        table.add_pod(row, p)
    extensions = _Extensions(refused="b")
    run = DryRun()
    with taking(table) as taken:
        trial = NodeTrial(extensions, CycleState(), _pi("preemptor", 9), row, taken, run)  # type: ignore[arg-type]
        assert trial.take(a) and trial.take(b)
        assert set(table.pods[row]) == set()
        assert trial.put_back(a)
        assert not trial.put_back(b)
    assert extensions.told == ["-a", "-b", "+a", "+b"]
    assert run.errors == ["cannot add b"]
    assert set(table.pods[row]) == {a.uid, b.uid}  # all back once the trial is over
