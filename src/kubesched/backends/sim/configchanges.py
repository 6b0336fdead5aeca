"""Configuration changes in a simulated scenario: rehearse a reload, and its rollback, in
virtual time before making it in production.

A change is a ConfigMap, the way the configuration reaches `kubesched run` in a cluster, marked
with the annotation `sim.kubesched.io/scheduler-config` whose value is the data key holding the
configuration file (usually `config.yaml`), and arriving at `sim.kubesched.io/arrival`:

```yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: scheduler-config-v2
  annotations:
    sim.kubesched.io/scheduler-config: config.yaml
    sim.kubesched.io/arrival: "10m"
data:
  config.yaml: |
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    ...
```

The text is not checked when the scenario loads: at its time it goes through the same reload as a
changed file in `kubesched run` (reload.controller), so a configuration that would be refused is
refused then, and one the SLO guard would roll back is rolled back, in the run's results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONFIG_ANNOTATION = "sim.kubesched.io/scheduler-config"


@dataclass(frozen=True, slots=True)
class ConfigChange:
    at: float  # virtual seconds
    text: str
    origin: str  # "ConfigMap <namespace>/<name>" and where it was written


def is_config_change(raw: dict[str, Any]) -> bool:
    meta = raw.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return raw.get("kind") == "ConfigMap" and isinstance(annotations, dict) and CONFIG_ANNOTATION in annotations


def read_change(raw: dict[str, Any], where: str, arrival: float) -> ConfigChange:
    """The change a marked ConfigMap makes. Raises ValueError naming the field at fault."""
    meta = raw["metadata"]
    key = meta["annotations"][CONFIG_ANNOTATION]
    if not isinstance(key, str) or not key:
        raise ValueError(f"metadata.annotations[{CONFIG_ANNOTATION}]: must name the data key holding the configuration")
    data = raw.get("data")
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"data[{key}]: Required value: the key {CONFIG_ANNOTATION} names is not in data")
    text = data[key]
    if not isinstance(text, str):
        raise ValueError(f"data[{key}]: must be a string (the configuration file's text)")
    name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
    return ConfigChange(arrival, text, f"ConfigMap {name} ({where})")
