"""Differential conformance: generated scenarios through the real kube-scheduler and through
`kubesched run`, on one real apiserver, compared on what a user sees of every pod: its node (any
node tied for kube-scheduler's best score is accepted), the first FailedScheduling condition
(reason and message, to the character), its nomination and the pods preempted for it, its
ResourceClaims' allocation and reservations (and every claim's at the end); and on what
the schedulers log of the cycle that placed it: the feasible nodes and each one's final score
(kube-scheduler's -v=10 log, kubesched's `kubesched.decisions` logger). kube-controller-manager's
disruption controller runs beside them, so the scenarios' PodDisruptionBudgets carry the status a
real cluster gives them (that status is compared with the simulator's own, step by step), and its
resourceclaim controller, which deallocates claims whose pods are gone and creates claims from
templates.

`make test` runs a small seeded sample; `make conformance` runs CONFORMANCE_SCENARIOS of them
(default 300). A disagreement writes the scenario, both runs and the differences to a file
under CONFORMANCE_OUT (default the test's tmp dir); CONFORMANCE_REPLAY=<file>[:<file>...] runs
exactly those scenarios again. The hand-written scenarios in cases/ (same format) run every time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.disruption import RESOURCECLAIM_CONTROLLER, run_disruption_controller
from integration.harness.kube_scheduler import KubeScheduler, run_kube_scheduler
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.rest import Kube

from .devices import ADMIN_ACCESS_LABEL
from .generate import JSON, scenario
from .runner import (
    Realign,
    Step,
    clear_namespace,
    compare,
    compare_final,
    create_nodes,
    delete_nodes,
    ensure_priority_classes,
    kube_placement_problems,
    kube_placements,
    kube_preemptions,
    kubesched_placements,
    log_size,
    preemption_tie,
    profiles,
    queueing_apart,
    read_log,
    run_side,
    write_reproducer,
)
from .simside import simulate_side

REPLAY = [Path(p) for p in os.environ.get("CONFORMANCE_REPLAY", "").split(":") if p]
CASES = sorted((Path(__file__).parent / "cases").glob("*.json"))  # hand-written, run every time
GENERATED = int(os.environ.get("CONFORMANCE_SCENARIOS", "6"))
SCENARIOS = len(REPLAY) or GENERATED + len(CASES)
FIRST_SEED = int(os.environ.get("CONFORMANCE_SEED", "1"))
STRICT = os.environ.get("CONFORMANCE_STRICT") == "1"  # count differences in retries as failures too
KUBE_NS, OURS_NS = "conformance-kube", "conformance-ours"
DECISIONS = "info,kubesched.decisions=debug"  # kubesched run --log-level: the scored cycles' final scores


@pytest.fixture(scope="module")
def schedulers(
    control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KubeScheduler, Kubesched]]:
    ensure_priority_classes(kube)
    for ns in (KUBE_NS, OURS_NS):
        if kube.get_or_none(f"/api/v1/namespaces/{ns}") is None:
            kube.create("/api/v1/namespaces", make_namespace(ns))
        # Claims with admin access are admitted only in namespaces labelled so.
        kube.patch(f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {ADMIN_ACCESS_LABEL: "true"}}})
    config = kubesched_config(control_plane.admin_kubeconfig)
    config["profiles"] = profiles("ours")
    with (
        run_disruption_controller(control_plane, also=[RESOURCECLAIM_CONTROLLER]),
        run_kube_scheduler(control_plane, profiles=profiles("kube"), extra_args=["--v=10"]) as ks,
        run_kubesched(tmp_path_factory.mktemp("conformance"), config, log_level=DECISIONS) as ours,
    ):
        yield ks, ours


def _run(kube: Kube, sc: JSON, ks: KubeScheduler, ks_ours: Kubesched) -> tuple[list, list, list[str]]:
    prefix = f"s{sc['seed']}-"
    create_nodes(kube, sc, prefix)
    # A node is written three times (created, taints, status): kube-scheduler watches nodes and pods
    # apart, and once scheduled the first pod on a node whose status it had not seen yet.
    time.sleep(0.3)
    try:
        since = log_size(ks.log_file)
        theirs = run_side(kube, sc, KUBE_NS, "kube", prefix)
        clear_namespace(kube, KUBE_NS)
        kube_log = read_log(ks.log_file, since)
        log_problems = kube_placement_problems(theirs, kube_placements(kube_log, KUBE_NS, prefix))
        reference = {s.pod: s for s in theirs}
        preemptions = kube_preemptions(kube_log, KUBE_NS, prefix)

        def tie(step: Step) -> str | None:
            """How `step` broke a tie kube-scheduler broke the other way, if it did."""
            want = reference[step.pod]
            if step.node is None or want.node is None or want.node == step.node:
                return None
            if preemption_tie(want, step, preemptions.get(step.pod), sc):
                return "preemption"
            scores = want.scores or {}
            best = max(scores.values(), default=None)
            return "node" if scores.get(step.node) == best and scores.get(want.node) == best else None

        def align(step: Step) -> Realign | None:
            want, kind = reference[step.pod], tie(step)
            if kind is None or want.node is None:
                return None
            if kind == "node":
                return Realign(want.node, claims=want.raw_claims)
            return Realign(want.node, {v: step.cluster[v] or "" for v in step.preempted if v not in want.preempted},
                           [v for v in want.preempted if v not in step.preempted], claims=want.raw_claims)

        since = log_size(ks_ours.process.log_path)
        ours = run_side(kube, sc, OURS_NS, "ours", prefix, align=align)
        clear_namespace(kube, OURS_NS)
        kubesched_placements(ours, read_log(ks_ours.process.log_path, since), OURS_NS, prefix)
    finally:
        delete_nodes(kube, sc, prefix)
        time.sleep(0.3)  # both schedulers see the nodes go before the next scenario's
    diffs = list(log_problems)
    lines = [line for kube_step, step in zip(theirs, ours, strict=True) for line in _untied(kube_step, step, tie(step))]
    # Pods left pending are retried on later events, at times that depend on the queue
    # (docs/compatibility.md): where they end up, and what the pods created after they parted do,
    # are counted apart.
    diffs.extend(lines if STRICT else queueing_apart(theirs, ours, lines))
    later = compare_final(theirs, ours)
    diffs.extend(later if STRICT else [f"(queueing) {line}" for line in later])
    # The simulator runs the scenario on its own: after a pod lands on another tied node, or
    # preempts on another tied candidate, the runs may part ways, so steps are compared up to there.
    simulated = simulate_side(sc)
    for kube_step, sim_step in zip(theirs, simulated, strict=True):
        tied_elsewhere = tie(sim_step)
        lines = _untied(kube_step, sim_step, tied_elsewhere)
        if not STRICT:
            lines = queueing_apart([kube_step], [sim_step], lines)
        diffs.extend(
            f"(queueing) simulate: {line.removeprefix('(queueing) ')}" if line.startswith("(queueing) ") else f"simulate: {line}"
            for line in lines
        )
        if tied_elsewhere:
            break
    return theirs, ours, diffs


def _untied(theirs: Step, mine: Step, tie: str | None) -> list[str]:
    """compare's lines for one pod, less what follows from breaking a tie the other way: the node
    (another node tied for the best score) with its claims and the binding cycle's nomination of
    it, or the nomination, victims, node and message's node name
    (another preemption candidate tied on every criterion)."""
    out = []
    for line in compare([theirs], [mine]):
        what = line.split(" ", 2)[1].rstrip(":")
        if tie == "node" and what in ("node", "claim"):  # the claims' devices are on the other node
            continue
        # The binding cycle nominates the node it binds to (NominatedNodeNameForExpectation).
        if tie == "node" and what == "nominated" and (theirs.nominated, mine.nominated) == (theirs.node, mine.node):
            continue
        if tie == "preemption":
            if what in ("node", "nominated", "preempted", "feasible", "claim"):
                continue
            named = (mine.message or "").replace(f" on node {mine.nominated},", f" on node {theirs.nominated},")
            if what == "message" and named == theirs.message:
                continue
        out.append(line)
    return out


@pytest.mark.timeout(120 + 20 * SCENARIOS)  # about 3-5 s a scenario
def test_generated_scenarios_agree_with_kube_scheduler(
    schedulers: tuple[KubeScheduler, Kubesched], kube: Kube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ks, ks_ours = schedulers
    out = Path(os.environ.get("CONFORMANCE_OUT", tmp_path))
    disagreements: dict[int, list[str]] = {}
    retried_differently: dict[int, list[str]] = {}
    chosen = [json.loads(p.read_text())["scenario"] for p in REPLAY] or [
        *(scenario(seed) for seed in range(FIRST_SEED, FIRST_SEED + GENERATED)),
        *(json.loads(p.read_text())["scenario"] for p in CASES),
    ]
    pods = placed = scored = node_scores = 0
    started = time.monotonic()
    with_devices: list[float] = []  # seconds each scenario with devices took
    for sc in chosen:
        seed = sc["seed"]
        began = time.monotonic()
        theirs, ours, diffs = _run(kube, sc, ks, ks_ours)
        if sc.get("dra"):
            with_devices.append(time.monotonic() - began)
        pods += len(theirs)
        placed += sum(1 for s in theirs if s.node is not None)
        scored += sum(1 for s in theirs if s.scores)
        node_scores += sum(len(s.scores or ()) for s in theirs)
        retries = [d for d in diffs if d.startswith("(queueing) ")]
        if retries:
            retried_differently[seed] = retries
        diffs = [d for d in diffs if not d.startswith("(queueing) ")]
        if diffs:
            path = write_reproducer(out, sc, theirs, ours, diffs)
            disagreements[seed] = [*diffs, f"(reproducer: {path})"]
    with capsys.disabled():
        print(f"\nconformance: {SCENARIOS - len(disagreements)}/{SCENARIOS} scenarios agree on every point "
              f"({(time.monotonic() - started) / max(SCENARIOS, 1):.1f} s a scenario)")
        print(f"  {pods} pods, {placed} placed in their step, {scored} of them scored ({node_scores} final scores per node)")
        if with_devices:
            print(f"  {len(with_devices)} scenario(s) with devices ({sum(with_devices) / len(with_devices):.1f} s a scenario)")
        for seed, diffs in disagreements.items():
            print(f"  seed {seed}:")
            for d in diffs:
                print(f"    {d}")
        print(f"  counted apart (queueing: pods left pending ended elsewhere, and what followed): {len(retried_differently)} scenario(s)")
        for seed, lines in retried_differently.items():
            for line in lines:
                print(f"    seed {seed}: {line.removeprefix('(queueing) ')}")
    assert not disagreements, json.dumps(disagreements, indent=1)
