"""Preemption with PodDisruptionBudgets, as kube v1.37.2's DefaultPreemption weighs them: the
candidate node with the fewest violations first, and on a node the budget-protected victims tried
back first (SelectVictimsOnNode, filterPodsWithPDBViolation)."""

from __future__ import annotations

from builders import make_node, make_pdb, make_pod
from unit.simkit import run


def _node(name: str, cpu: str = "2") -> dict:
    return make_node(name).capacity(cpu=cpu, memory="8Gi", pods=10).without("ephemeral-storage").manifest()


def _pod(name: str, node: str | None, *, cpu: str = "1", priority: int = 10, app: str = "") -> dict:
    b = make_pod(name).req(cpu=cpu, memory="100Mi").priority(priority)
    if app:
        b = b.label(app=app)
    if node:
        b = b.node(node)
    return b.manifest()


def _two_nodes(*extra: dict) -> list[dict]:
    """node-a's pods (app=db) are the cheaper victims (priority 10 against node-b's 20): without a
    budget, preemption takes node-a."""
    return [
        _node("node-a"), _node("node-b"),
        _pod("db-1", "node-a", priority=10, app="db"), _pod("db-2", "node-a", priority=10, app="db"),
        _pod("web-1", "node-b", priority=20, app="web"), _pod("web-2", "node-b", priority=20, app="web"),
        *extra,
        _pod("urgent", None, cpu="1", priority=1000),
    ]


def test_without_a_budget_the_cheaper_victims_go() -> None:
    result, _ = run(_two_nodes())
    assert result.placements["default/urgent"] == "node-a"
    assert len(result.preempted) == 1 and result.preempted[0].startswith("default/db-")


def test_a_budget_that_allows_no_disruption_sends_preemption_to_the_other_node() -> None:
    """Fewest budget violations is kube's first criterion, before the victims' priorities."""
    result, sim = run(_two_nodes(make_pdb("db", min_available=2, match_labels={"app": "db"})))
    assert result.placements["default/urgent"] == "node-b"
    assert len(result.preempted) == 1 and result.preempted[0].startswith("default/web-")
    assert sim.scheduler.metrics.preemption_pdb_violations.values == {}


def test_a_budget_with_room_lets_the_cheaper_victim_go() -> None:
    """minAvailable 1 of 2 healthy pods: one disruption allowed, no violation."""
    result, _ = run(_two_nodes(make_pdb("db", min_available=1, match_labels={"app": "db"})))
    assert result.placements["default/urgent"] == "node-a"


def test_when_every_node_violates_the_fewest_violations_win() -> None:
    both = [make_pdb("db", min_available=2, match_labels={"app": "db"}),
            make_pdb("web", max_unavailable=0, match_labels={"app": "web"})]
    objects = _two_nodes(*both)
    objects[-1] = _pod("urgent", None, cpu="2", priority=1000)  # needs both pods of a node gone
    result, sim = run(objects)
    assert result.placements["default/urgent"] == "node-a"  # tie on violations (2 each): cheaper victims
    assert sim.scheduler.metrics.preemption_pdb_violations.values == {("pod",): 2.0}


def test_on_one_node_the_protected_pod_is_spared_and_lower_importance_ones_go() -> None:
    """One node: a protected pod (app=etcd, its budget allows no disruption) and two unprotected
    ones of higher priority. Taking off any two makes room; kube tries the protected one back
    first, so it stays and the two others are evicted."""
    objects = [
        _node("node-a", cpu="3"),
        _pod("etcd-0", "node-a", priority=10, app="etcd"),
        _pod("cache-1", "node-a", priority=20, app="cache"),
        _pod("cache-2", "node-a", priority=20, app="cache"),
        make_pdb("etcd", min_available=1, match_labels={"app": "etcd"}),
        _pod("urgent", None, cpu="2", priority=1000),
    ]
    result, sim = run(objects)
    assert sorted(result.preempted) == ["default/cache-1", "default/cache-2"]
    assert result.placements["default/urgent"] == "node-a"
    assert {p.metadata.name for p in sim.cluster.pods.values()} == {"etcd-0", "urgent"}


def test_the_explanation_names_the_victims_a_budget_protects() -> None:
    """A pending pod's preemption preview says which of its victims would violate a budget (here
    every candidate does: the budget covers the pods of both nodes)."""
    from io import StringIO

    from rich.console import Console

    from kubesched.api.objects import LabelSelector, ObjectMeta
    from kubesched.api.policy import PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus
    from kubesched.observe.explainview import render
    from unit.scheduler.test_generation import scheduler
    from unit.simkit import config_text, priority_classes

    objects = [_node("node-a"), _pod("db-1", "node-a", app="db"), _pod("db-2", "node-a", app="db"),
               _pod("urgent", None, cpu="1", priority=1000)]
    sched, _ = scheduler(config_text({"schedulerName": "default-scheduler"}), priority_classes(objects) + objects)
    sched.on_pdb(PodDisruptionBudget(
        metadata=ObjectMeta(name="db", namespace="default"),
        spec=PodDisruptionBudgetSpec(min_available=2, selector=LabelSelector(match_labels={"app": "db"})),
        status=PodDisruptionBudgetStatus(disruptions_allowed=0, current_healthy=2, desired_healthy=2, expected_pods=2)))
    explained = sched.explain("default", "urgent")
    assert explained is not None
    plan = explained["preemption"]
    assert plan["possible"] and plan["node"] == "node-a"
    assert len(plan["victims"]) == 1 and plan["violating_budgets"] == plan["victims"]
    out = StringIO()
    render(Console(file=out, width=300), explained)
    assert f"evicting {plan['victims'][0]} would violate a PodDisruptionBudget" in out.getvalue()


def _gang_over_protected_pods(*extra: dict) -> list[dict]:
    """One 4-cpu node with three 1-cpu pods: `db` (priority 1, the least important) and two `web`
    (priority 5); a gang of one 2-cpu member of priority 1000 needs one of them gone."""
    from builders import make_pod_group, make_priority_class
    from unit.scheduler.test_groupcycle import member

    return [
        make_priority_class("high", 1000),
        make_node("n1").capacity(cpu="4", memory="8Gi", pods=10).without("ephemeral-storage").manifest(),
        _pod("db", "n1", priority=1, app="db"), _pod("web-1", "n1", priority=5, app="web"),
        _pod("web-2", "n1", priority=5, app="web"),
        *extra,
        make_pod_group("gang", 1, priorityClassName="high"),
        member("gang-0", "gang", cpu="2", priority_class="high", annotations={"sim.kubesched.io/arrival": "1s"}),
    ]


def test_group_preemption_takes_the_least_important_unit_without_a_budget() -> None:
    from unit.scheduler.test_groupcycle import run_groups

    result, _ = run_groups(_gang_over_protected_pods())
    assert result.preempted == ["default/db"]


def test_group_preemption_spares_a_unit_a_budget_protects() -> None:
    """kube's selectVictimsOnDomain tries the budget-violating units back first."""
    from unit.scheduler.test_groupcycle import run_groups

    result, sim = run_groups(_gang_over_protected_pods(make_pdb("db", min_available=1, match_labels={"app": "db"})))
    assert result.placements["default/gang-0"] == "n1"
    assert result.preempted == ["default/web-2"]
    assert sim.scheduler.metrics.preemption_pdb_violations.values == {}
