"""Changing CEL rules of a running `kubesched run` through its ConfigMap, on the real apiserver.

Issue 12: a CEL rule changed in the ConfigMap takes effect, and a rule that fails to compile is
refused. The configuration is a ConfigMap object in the API server, projected into a volume
directory as the kubelet's AtomicWriter does it (harness.configmap: a timestamped directory and a
`..data` symlink swap), and kubesched runs with `--config <volume>/config.yaml`. Every change is
made to the ConfigMap object first (a merge PATCH, as `kubectl patch`/`kubectl edit` send), then
synced into the volume; kubesched finds it by polling (`reload.pollInterval: 0.5s`).

The rules: a CELFilter rule keeps pods on one pool of nodes, a CELScore rule (weight 10) prefers
one zone in it. Four nodes, one for each (pool, zone) pair, so every placement names the pair of
rules in force:

- generation 1: pool a, zone x  -> pods land on a-x;
- generation 2: pool b, zone y  -> pods land on b-y;
- a refused file: the score rule back to zone x (valid) and the filter rule misspelt
  (`node.lables`, refused by the type checker). The whole file is refused, not only the bad
  plugin: pods still land on b-y (b-x would mean the valid half had been taken);
- another refused file: the filter rule back to pool a (valid) and a score rule that does not
  parse. Refused again, and pods still land on b-y (a-y would mean the valid half had been taken).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from integration.harness.configmap import ConfigMapVolume, apply_configmap
from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, Kube
from kubesched.tools.devcluster.procs import wait_until

SCHEDULER = "kubesched"
CONFIGMAP = "kubesched-config"
KEY = "config.yaml"


# --- the configuration ------------------------------------------------------------------------------------


def pool_rule(pool: str, *, field: str = "labels") -> str:
    return f'"pool" in node.{field} && node.{field}["pool"] == "{pool}"'


def zone_rule(zone: str) -> str:
    return f'"zone" in node.labels && node.labels["zone"] == "{zone}"'


def config_text(base: dict[str, Any], filter_expr: str, score_expr: str) -> str:
    """The ConfigMap's config.yaml: the KubeSchedulerConfiguration with a CELFilter and a CELScore
    rule in kubesched's profile, and the KubeschedConfiguration (0.5 s polling, no SLO guard: the
    test changes placement on purpose, and only the reload itself is under test here)."""
    profile = {
        "schedulerName": SCHEDULER,
        "plugins": {"multiPoint": {"enabled": [{"name": "CELFilter"}, {"name": "CELScore", "weight": 10}]}},
        "pluginConfig": [
            {"name": "CELFilter", "args": {"rules": [
                {"name": "pool", "expression": filter_expr, "message": "node(s) were not in the pool"}]}},
            {"name": "CELScore", "args": {"rules": [{"name": "zone", "expression": score_expr, "score": 100}]}},
        ],
    }
    ext = {"apiVersion": "kubesched.io/v1alpha1", "kind": "KubeschedConfiguration",
           "reload": {"pollInterval": "0.5s"}, "sloGuard": {"enabled": False}}
    return yaml.safe_dump_all([{**base, "profiles": [profile]}, ext], sort_keys=False)


def patch_configmap(kube: Kube, namespace: str, text: str) -> str:
    """`kubectl patch configmap kubesched-config --type merge`: returns the new resourceVersion."""
    cm = kube.patch(f"/api/v1/namespaces/{namespace}/configmaps/{CONFIGMAP}", {"data": {KEY: text}})
    assert cm["data"][KEY] == text
    return str(cm["metadata"]["resourceVersion"])


# --- reading kubesched and the API server -------------------------------------------------------------------


def configz(ks: Kubesched) -> dict[str, Any]:
    code, body = ks.get("/configz")
    assert code == 200, body
    return dict(yaml.safe_load(body))


def plugin_args(cz: dict[str, Any], plugin: str) -> dict[str, Any]:
    """The args of `plugin` in force: /configz's componentconfig, kubesched's profile."""
    profile = next(p for p in cz["componentconfig"]["profiles"] if p["schedulerName"] == SCHEDULER)
    return dict(next(c for c in profile["pluginConfig"] if c["name"] == plugin)["args"])


def expressions(cz: dict[str, Any]) -> tuple[str, str]:
    return (plugin_args(cz, "CELFilter")["rules"][0]["expression"], plugin_args(cz, "CELScore")["rules"][0]["expression"])


def wait_reload(ks: Kubesched, result: str, count: int) -> dict[str, Any]:
    """Waits until /configz's reload history holds `count` records of `result`; returns /configz."""
    def check() -> dict[str, Any] | None:
        cz = configz(ks)
        found = [r for r in cz["kubesched"]["status"]["history"] if r["result"] == result]
        return cz if len(found) >= count else None

    return wait_until(check, timeout=15, what=f"{count} {result!r} reload(s) in /configz", watch=[ks.process])


def place(kube: Kube, namespace: str, prefix: str, count: int = 3) -> set[str]:
    """Creates `count` pods for kubesched and returns the nodes they were bound to."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        create_pod(kube, name, namespace, scheduler_name=SCHEDULER)
    return {wait_bound(kube, namespace, name, timeout=15) for name in names}


def reload_failed_events(kube: Kube, lease: str) -> list[JSON]:
    return [e for e in kube.list("/apis/events.k8s.io/v1/namespaces/kube-system/events")
            if e.get("reason") == "ConfigurationReloadFailed" and (e.get("regarding") or {}).get("name") == lease]


# --- the test ------------------------------------------------------------------------------------------------------


def test_cel_rule_changed_in_the_configmap_takes_effect_and_a_rule_that_fails_to_compile_is_refused(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    tag = secrets.token_hex(3)
    nodes: dict[tuple[str, str], str] = {}
    for pool in ("a", "b"):
        for zone in ("x", "y"):
            name = f"cel-{tag}-{pool}-{zone}"
            make_node(name, cpu="8", memory="32Gi", labels={"pool": pool, "zone": zone})
            nodes[pool, zone] = name
    # No leader election: the Lease is only what the reload events are about. Its name is this
    # test's own, so events of other tests' schedulers are not counted.
    lease = f"kubesched-cel-{tag}"
    base = kubesched_config(control_plane.admin_kubeconfig)
    base["leaderElection"]["resourceName"] = lease

    v1 = config_text(base, pool_rule("a"), zone_rule("x"))
    v2 = config_text(base, pool_rule("b"), zone_rule("y"))
    bad_filter = pool_rule("a", field="lables")
    v3 = config_text(base, bad_filter, zone_rule("x"))
    unparsable_score = zone_rule("x") + " &&"
    v4 = config_text(base, pool_rule("a"), unparsable_score)

    # The ConfigMap object, and the kubelet's first projection of it.
    apply_configmap(kube, namespace, CONFIGMAP, {KEY: v1})
    volume = ConfigMapVolume(tmp_path / "volume")
    assert volume.sync(kube, namespace, CONFIGMAP)
    try:
        with run_kubesched(tmp_path, base, config_path=volume.path(KEY)) as ks:
            # Generation 1: pool a, zone x.
            cz = configz(ks)
            assert cz["kubesched"]["status"]["generation"] == 1
            assert expressions(cz) == (pool_rule("a"), zone_rule("x"))
            assert place(kube, namespace, "one") == {nodes["a", "x"]}

            # The rules change in the ConfigMap; the kubelet syncs the volume; kubesched reloads.
            rv1 = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{CONFIGMAP}")["metadata"]["resourceVersion"]
            rv2 = patch_configmap(kube, namespace, v2)
            assert rv2 != rv1
            data_before = volume.current()
            assert volume.sync(kube, namespace, CONFIGMAP)
            assert volume.current() != data_before and volume.path(KEY).read_text() == v2
            cz = wait_reload(ks, "applied", 1)
            st = cz["kubesched"]["status"]
            assert st["generation"] == 2, st
            assert not st["problem"], st
            assert expressions(cz) == (pool_rule("b"), zone_rule("y"))
            assert ks.metric("kubesched_config_reloads_total", result="applied") == 1
            assert place(kube, namespace, "two") == {nodes["b", "y"]}
            # The pods placed under generation 1 stay where they are.
            assert {wait_bound(kube, namespace, f"one-{i}") for i in range(3)} == {nodes["a", "x"]}
            code, body = ks.get("/readyz?verbose")
            assert code == 200 and "[+]config-reload ok" in body, (code, body)

            # A rule that does not type check: the whole file is refused.
            patch_configmap(kube, namespace, v3)
            assert volume.sync(kube, namespace, CONFIGMAP)
            cz = wait_reload(ks, "refused", 1)
            st = cz["kubesched"]["status"]
            refused = [r for r in st["history"] if r["result"] == "refused"]
            assert [r["result"] for r in st["history"]] == ["applied", "refused"], st["history"]
            message = refused[0]["message"]
            assert "profiles[0].pluginConfig[0].args.rules[0]" in message, message
            assert "node.lables" in message, message
            assert st["generation"] == 2, st
            assert expressions(cz) == (pool_rule("b"), zone_rule("y"))  # nothing of the refused file is in force
            assert ks.metric("kubesched_config_reloads_total", result="refused") == 1
            assert ks.metric("kubesched_config_reloads_total", result="applied") == 1
            assert ks.metric("kubesched_config_last_reload_successful") == 0

            code, body = ks.get("/readyz?verbose")
            assert code != 200, body
            failed = next((line for line in body.splitlines() if line.startswith("[-]config-reload failed:")), None)
            assert failed is not None, body
            assert "refused, still running generation 2" in failed, failed
            assert "profiles[0].pluginConfig[0].args.rules[0]" in failed and "node.lables" in failed, failed

            events = wait_until(lambda: reload_failed_events(kube, lease), timeout=10,
                                what="a ConfigurationReloadFailed event", watch=[ks.process])
            assert len(events) == 1, events
            event = events[0]
            assert event["type"] == "Warning", event
            assert event["regarding"]["kind"] == "Lease" and event["regarding"]["namespace"] == "kube-system", event
            assert "profiles[0].pluginConfig[0].args.rules[0]" in event["note"] and "node.lables" in event["note"], event

            # Generation 2 still governs: not a-x (the refused file) nor b-x (its valid score rule alone).
            assert place(kube, namespace, "three") == {nodes["b", "y"]}
            time.sleep(1.0)  # two more polls: the refused file is not tried again while it is unchanged
            cz = configz(ks)
            assert cz["kubesched"]["status"]["generation"] == 2
            assert [r["result"] for r in cz["kubesched"]["status"]["history"]] == ["applied", "refused"]
            assert ks.metric("kubesched_config_reloads_total", result="refused") == 1

            # Fixed filter rule, but a score rule that does not even parse: refused too, this time
            # naming the second plugin's rule; a-x (the valid filter with generation 2's score) never.
            patch_configmap(kube, namespace, v4)
            assert volume.sync(kube, namespace, CONFIGMAP)
            cz = wait_reload(ks, "refused", 2)
            st = cz["kubesched"]["status"]
            message = st["history"][-1]["message"]
            assert "profiles[0].pluginConfig[1].args.rules[0]" in message and "Syntax error" in message, message
            assert st["generation"] == 2, st
            assert expressions(cz) == (pool_rule("b"), zone_rule("y"))
            assert ks.metric("kubesched_config_reloads_total", result="refused") == 2
            code, body = ks.get("/readyz?verbose")
            assert code != 200 and "profiles[0].pluginConfig[1].args.rules[0]" in body, body
            wait_until(lambda: len(reload_failed_events(kube, lease)) == 2, timeout=10,
                       what="a second ConfigurationReloadFailed event", watch=[ks.process])
            assert place(kube, namespace, "four") == {nodes["b", "y"]}
            assert ks.running(), ks.log()
    finally:
        for e in reload_failed_events(kube, lease):
            kube.delete(f"/apis/events.k8s.io/v1/namespaces/kube-system/events/{e['metadata']['name']}", missing_ok=True)
