"""RowMemo and NodeTable's change log: answers kept across cycles are always the answers computed
afresh, whatever happened to the table in between (random operation sequences, with hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod
from kubesched.cache import nodetable as nodetable_module
from kubesched.cache import rowmemo
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.rowmemo import RowMemo


def answer(table: NodeTable, key: int, where: np.ndarray | slice) -> np.ndarray:
    """A function of each row's own state and the key, as a plugin's would be."""
    free = table.allocatable[where, 0] - table.requested[where, 0]
    out: np.ndarray = free * (key + 1) + table.present[where] + table.non_zero_requested[where, 1] // (1 << 20)
    return out


def one_row(table: NodeTable, key: int, row: int) -> int:
    return int(answer(table, key, np.array([row]))[0])


class Cluster:
    """A NodeTable driven by operations drawn by hypothesis, with the pods it holds."""

    def __init__(self, capacity: int) -> None:
        self.table = NodeTable(capacity=capacity)
        self.pods: list[tuple[int, object]] = []
        self.serial = 0

    def apply(self, op: tuple[str, int, int]) -> None:
        kind, a, b = op
        t = self.table
        names = sorted(t.index)
        self.serial += 1
        if kind == "add_node" or not names:
            t.upsert_node(make_node(f"n{a}").capacity(cpu=str(1 + b % 8)).obj())
        elif kind == "update_node":
            t.upsert_node(make_node(names[a % len(names)]).capacity(cpu=str(1 + b % 8)).obj())
        elif kind == "remove_node":
            name = names[a % len(names)]
            row = t.index[name]
            for placed in [p for p in self.pods if p[0] == row]:
                t.remove_pod(row, placed[1])  # type: ignore[arg-type]
                self.pods.remove(placed)
            t.remove_node(name)
        elif kind == "add_pod":
            pi = make_pod(f"p{self.serial}").req(cpu=f"{100 * (1 + b % 5)}m", memory=f"{1 + b % 3}Mi").info()
            row = t.index[names[a % len(names)]]
            t.add_pod(row, pi)
            self.pods.append((row, pi))
        elif kind == "remove_pod" and self.pods:
            row, pi = self.pods.pop(a % len(self.pods))
            t.remove_pod(row, pi)  # type: ignore[arg-type]


OPS = st.tuples(st.sampled_from(["add_node", "update_node", "remove_node", "add_pod", "add_pod", "remove_pod"]),
                st.integers(0, 40), st.integers(0, 40))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.tuples(st.lists(OPS, max_size=80), st.integers(0, 2), st.sets(st.integers(0, 60)),
                             st.booleans()), min_size=1, max_size=12),
    capacity=st.sampled_from([1, 4, 64]),
)
def test_memo_answers_are_the_fresh_answers(steps, capacity):
    c = Cluster(capacity)
    memo = RowMemo(slots=2)  # three keys over two slots: entries are evicted and filled again
    for ops, key, asked, copies in steps:
        for op in ops:
            c.apply(op)
        t = c.table
        size = t.size
        rows = np.array(sorted(r for r in asked if r < size), dtype=np.intp)
        got_at = memo.at(t, key, lambda where, k=key, t=t: answer(t, k, where), rows)
        assert got_at.tolist() == answer(t, key, rows).tolist()
        got = memo.values(t, key, lambda where, k=key, t=t: answer(t, k, where), lambda r, k=key, t=t: one_row(t, k, r))
        assert got.tolist() == answer(t, key, slice(0, size)).tolist()
        if copies and t.index:
            # joint placement's what-if: answers with the copies counted, and none of them kept
            with t.with_copies(make_pod("copy").req(cpu="300m", memory="1Mi").info(), 2):
                inside = memo.values(t, key, lambda where, k=key, t=t: answer(t, k, where))
                assert inside.tolist() == answer(t, key, slice(0, size)).tolist()
            again = memo.values(t, key, lambda where, k=key, t=t: answer(t, k, where))
            assert again.tolist() == answer(t, key, slice(0, size)).tolist()


def test_a_log_that_no_longer_reaches_back_falls_back_to_row_generations(monkeypatch):
    monkeypatch.setattr(nodetable_module, "CHANGE_LOG_LIMIT", 8)
    t = NodeTable()
    for i in range(20):
        t.upsert_node(make_node(f"n{i}").obj())
    memo = RowMemo()

    def compute(where):
        return answer(t, 0, where)

    memo.values(t, 0, compute)
    seen = t.generation
    pi = make_pod("p").req(cpu="1").info()
    t.add_pod(3, pi)
    for _ in range(20):  # the log is trimmed past the change to row 3
        t.add_pod(7, make_pod("q").req(cpu="1m").info())
    assert t.changed_since(seen) is None
    assert memo.values(t, 0, compute).tolist() == answer(t, 0, slice(0, t.size)).tolist()


def test_changed_since_lists_the_rows_changed_after_a_generation():
    t = NodeTable()
    for i in range(4):
        t.upsert_node(make_node(f"n{i}").obj())
    g = t.generation
    assert t.changed_since(g) == []
    t.add_pod(2, make_pod("a").req(cpu="1").info())
    with t.with_copies(make_pod("b").req(cpu="1").info()):
        pass
    t.remove_node("n1")
    assert sorted(t.changed_since(g)) == [1, 2]  # the copies changed no row's own state
    assert t.changed_since(g - 3) is not None and 3 in t.changed_since(g - 3)


def test_an_answer_is_read_only():
    t = NodeTable()
    t.upsert_node(make_node("a").obj())
    memo = RowMemo()
    got = memo.values(t, 0, lambda where: answer(t, 0, where))
    with pytest.raises(ValueError):
        got[0] = 1


def test_rows_not_asked_for_wait_and_are_computed_together(monkeypatch):
    """`at` computes changed rows only once one is asked for, then all of them in one call."""
    t = NodeTable()
    for i in range(40):
        t.upsert_node(make_node(f"n{i}").obj())
    calls: list[int] = []

    def compute(where):
        calls.append(t.size if isinstance(where, slice) else len(where))
        return answer(t, 0, where)

    memo = RowMemo()
    window = np.arange(0, 10, dtype=np.intp)
    memo.at(t, 0, compute, window)
    assert calls == [40]
    t.add_pod(20, make_pod("a").req(cpu="1").info())
    t.add_pod(30, make_pod("b").req(cpu="1").info())
    assert memo.at(t, 0, compute, window).tolist() == answer(t, 0, window).tolist()
    assert calls == [40]  # rows 20 and 30 are not asked for yet
    far = np.arange(25, 35, dtype=np.intp)
    assert memo.at(t, 0, compute, far).tolist() == answer(t, 0, far).tolist()
    assert calls == [40, 2]
    assert memo.values(t, 0, compute).tolist() == answer(t, 0, slice(0, 40)).tolist()
    assert calls == [40, 2]  # nothing left to compute
    monkeypatch.setattr(rowmemo, "PENDING_LIMIT", 1)
    t.add_pod(1, make_pod("c").req(cpu="1").info())
    t.add_pod(2, make_pod("d").req(cpu="1").info())
    memo.at(t, 0, compute, far)
    assert calls == [40, 2, 2]  # too many waiting: computed although not asked for
