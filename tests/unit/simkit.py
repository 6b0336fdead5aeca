"""Run the real scheduler on small simulated clusters written as manifest dicts (built with the
builders' `.manifest()`): `run`, the configuration's text and changes, streams of arrivals."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import make_pod, make_priority_class
from kubesched.backends.sim.engine import SimResult, Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import default_config, parse_config, parse_config_text


def priority_classes(objects: list[dict]) -> list[dict]:
    """PriorityClasses for every `priority-<n>` class the pods name (make_pod(...).priority(n)
    writes a manifest's priority so; admission resolves them)."""
    names = {o["spec"].get("priorityClassName") for o in objects if o["kind"] == "Pod"}
    names = {n for n in names if n and n.startswith("priority-")}
    return [make_priority_class(n, int(n.split("-", 1)[1])) for n in sorted(names)]


def run(objects: list[dict], config: dict | str | None = None, seed: int = 0) -> tuple[SimResult, Simulation]:
    """`config`: a KubeSchedulerConfiguration as a dict, or a configuration file's text."""
    if isinstance(config, str):
        cfg = parse_config_text(config, "config.yaml")
    else:
        cfg = parse_config(config) if config else default_config()
    objects = priority_classes(objects) + objects
    sim = Simulation(load_objects(objects), cfg, seed=seed)
    return asyncio.run(sim.run()), sim


def profile_config(*profiles: dict, **top: Any) -> dict:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": list(profiles), **top}


def config_text(*profiles: dict, kubesched: dict | None = None, **top: Any) -> str:
    """A configuration file's text: the KubeSchedulerConfiguration, and a KubeschedConfiguration
    document when `kubesched` is given."""
    import yaml

    docs = [profile_config(*profiles, **top)]
    if kubesched is not None:
        docs.append({"apiVersion": "kubesched.io/v1alpha1", "kind": "KubeschedConfiguration", **kubesched})
    return yaml.safe_dump_all(docs)


def config_change(name: str, at: str, text: str) -> dict:
    """A scenario's configuration change: the ConfigMap that brings `text` at virtual time `at`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "annotations": {"sim.kubesched.io/scheduler-config": "config.yaml",
                                                    "sim.kubesched.io/arrival": at}},
        "data": {"config.yaml": text},
    }


def stream(prefix: str, count: int, every: float, *, start: float = 0.0, duration: float | None = None,
           cpu: str = "100m", memory: str = "100Mi", scheduler: str | None = None) -> list[dict]:
    """`count` pods requesting `cpu` and `memory`, arriving every `every` virtual seconds from
    `start`, each running `duration`."""
    out = []
    for i in range(count):
        builder = make_pod(f"{prefix}-{i}").req(cpu=cpu, memory=memory).arrival(f"{start + i * every:g}s")
        if duration is not None:
            builder.duration(f"{duration:g}s")
        if scheduler is not None:
            builder.scheduler(scheduler)
        out.append(builder.manifest())
    return out
