"""The counts NodeVolumeLimits keeps between cycles (plugins.helper.attachedvolumes): after any sequence of
changes to pods, claims, volumes, classes, VolumeAttachments, CSINodes and nodes, and during
preemption's trial removals, a long-lived plugin gives exactly the verdicts of a plugin built
afresh, which counts every node from nothing."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import pytest

from builders import UnitHandle, cache_with, make_node, make_pv, make_pvc, make_storage_class
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    CSI_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_ATTACHMENT,
)
from kubesched.cache.cache import Cache
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from unit.plugins.storagekit import add, attachment, claim_pod, csidriver, csinode, fresh, verdicts

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
CLAIMS = 14


def claim_objects(rng: random.Random, i: int) -> list[Any]:
    """Claim c<i> in one of the shapes the plugin resolves differently."""
    shape = rng.randrange(5)
    name = f"c{i}"
    if shape == 0:  # bound to a CSI volume
        driver = rng.choice((EBS, GCE))
        return [make_pv(f"pv-{name}").csi(driver, f"h-{name}").obj(), make_pvc(name).volume(f"pv-{name}").obj()]
    if shape == 1:  # bound to an in-tree EBS volume (migrated)
        return [make_pv(f"pv-{name}").spec(awsElasticBlockStore={"volumeID": f"aws://z/{name}"}).obj(),
                make_pvc(name).volume(f"pv-{name}").obj()]
    if shape == 2:  # unbound, counted by its class's provisioner
        return [make_pvc(name).cls(rng.choice(("sc-ebs", "sc-gce", "sc-missing"))).obj()]
    if shape == 3:  # bound to a volume that does not exist (yet)
        return [make_pvc(name).cls("sc-ebs").volume(f"pv-{name}").obj()]
    return [make_pv(f"pv-{name}").csi(EBS, "shared").obj(), make_pvc(name).volume(f"pv-{name}").obj()]  # a volume two claims share


class World:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.nodes = [f"n{i}" for i in range(6)]
        self.cache: Cache = cache_with([make_node(n).obj() for n in self.nodes])
        add(self.cache, make_storage_class("sc-ebs").provisioner(EBS).obj(), make_storage_class("sc-gce").provisioner(GCE).obj(),
            csidriver(GCE, prevent_if_missing=True))
        for i in range(CLAIMS):
            add(self.cache, *claim_objects(self.rng, i))
        for n in self.nodes[:4]:
            self.set_csinode(n)
        self.pods: list[PodInfo] = []
        self.serial = 0
        self.plugin = NodeVolumeLimits(handle=UnitHandle(self.cache))  # type: ignore[arg-type]

    def set_csinode(self, name: str) -> None:
        drivers: list[tuple[str, int | None]] = [(EBS, self.rng.randrange(4))]
        if self.rng.random() < 0.6:
            drivers.append((GCE, self.rng.choice((None, 1, 2))))
        add(self.cache, csinode(name, *drivers))

    def claims(self) -> list[str]:
        return [f"c{self.rng.randrange(CLAIMS)}" for _ in range(self.rng.randrange(1, 3))]

    def step(self) -> None:
        rng, cache, storage = self.rng, self.cache, self.cache.storage
        action = rng.randrange(9)
        if action <= 2 or not self.pods:  # a pod lands
            self.serial += 1
            p = claim_pod(f"p{self.serial}", *self.claims(), node_name=rng.choice(self.nodes))
            if p.pod.spec.node_name in cache.table.index:
                cache.add_pod(p)
                self.pods.append(p)
        elif action == 3:  # a pod leaves
            p = self.pods.pop(rng.randrange(len(self.pods)))
            cache.remove_pod(p.uid)
        elif action == 4:  # a claim is bound elsewhere, deleted or created again
            i = rng.randrange(CLAIMS)
            if rng.random() < 0.3 and f"default/c{i}" in storage.pvcs:
                storage.delete(PERSISTENT_VOLUME_CLAIM, storage.pvcs[f"default/c{i}"])
            else:
                add(cache, *claim_objects(rng, i))
        elif action == 5:  # a volume goes away
            names = sorted(storage.pvs)
            if names:
                storage.delete(PERSISTENT_VOLUME, storage.pvs[rng.choice(names)])
        elif action == 6:  # attachments come and go
            name = f"va{rng.randrange(4)}"
            if name in storage.attachments and rng.random() < 0.5:
                storage.delete(VOLUME_ATTACHMENT, storage.attachments[name])
            else:
                add(cache, attachment(name, EBS, rng.choice(self.nodes), f"pv-c{rng.randrange(CLAIMS)}"))
        elif action == 7:  # CSINodes change or go
            name = rng.choice(self.nodes)
            if name in storage.csinodes and rng.random() < 0.3:
                storage.delete(CSI_NODE, storage.csinodes[name])
            else:
                self.set_csinode(name)
        else:  # a node goes and comes back (its pods stay known, off the table)
            name = rng.choice(self.nodes)
            if name in cache.table.index:
                cache.remove_node(name)
            else:
                cache.add_node(make_node(name).obj())

    def judge(self, pi: PodInfo) -> tuple[Any, Any]:
        afresh = NodeVolumeLimits(handle=UnitHandle(self.cache))  # type: ignore[arg-type]
        afresh.random_prefix = self.plugin.random_prefix
        kept = verdicts(self.plugin.filter(fresh(), pi, self.cache.table), self.cache)
        built = verdicts(afresh.filter(fresh(), pi, self.cache.table), self.cache)
        return kept, built


@pytest.mark.parametrize("seed", range(12))
def test_kept_counts_match_counting_afresh(seed: int) -> None:
    world = World(seed)
    exceeded = 0
    for _ in range(150):
        world.step()
        pi = claim_pod("new", *world.claims())
        kept, built = world.judge(pi)
        assert kept == built
        exceeded += sum(1 for v in kept.values() if v is not None)
    assert exceeded > 0  # the sequences do reach the limits


def test_trial_removals_are_seen_and_undone() -> None:
    world = World(99)
    table = world.cache.table
    for _ in range(200):
        world.step()
        if not world.pods:
            continue
        pi = claim_pod("new", *world.claims())
        victim = world.rng.choice(world.pods)
        row = table.index.get(victim.pod.spec.node_name)
        if row is None or victim.uid not in table.pods[row]:
            continue
        table.remove_pod(row, victim)  # as preemption tries the node without its victim
        try:
            kept, built = world.judge(pi)
            assert kept == built
        finally:
            table.add_pod(row, victim)
        kept, built = world.judge(pi)
        assert kept == built


def test_a_reader_behind_the_journal_counts_everything_again() -> None:
    world = World(7)
    world.cache.storage.journal = deque(maxlen=2)
    for _ in range(100):
        for _ in range(world.rng.randrange(1, 5)):
            world.step()
        kept, built = world.judge(claim_pod("new", *world.claims()))
        assert kept == built
