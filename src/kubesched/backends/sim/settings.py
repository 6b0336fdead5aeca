"""The scenario's settings: the ConfigMap named `kubesched-simulation` (any namespace, at most
one) read into SimSettings. Its `data` keys:

- `scrapeInterval`: how often the simulated node-exporter is scraped (default 15s);
- `featureGates`: kube's feature gates the scenario needs, as `--feature-gates` takes them
  (`GenericWorkload=true` for PodGroups); the command line's come first, these over them;
- `prometheusOutages`: comma-separated virtual-time spans `START-END` (e.g. `10m-12m, 1h-1h5m`)
  during which the simulated Prometheus refuses connections.
"""

from __future__ import annotations

from typing import Any

from kubesched.backends.sim.clusterinput import SimSettings, quoted, type_name
from kubesched.backends.sim.simannotations import seconds
from kubesched.backends.sim.workloads import FieldError
from kubesched.infra import features

SIM_CONFIGMAP = "kubesched-simulation"
SIM_SETTINGS_KEYS = ("scrapeInterval", "prometheusOutages", "featureGates")


def read_settings(data: Any, settings: SimSettings) -> list[str]:
    """The ConfigMap's `data` into `settings`; warnings for keys that are no setting (each
    "<where>: ..."). A value that is wrong raises FieldError naming its key."""
    warnings: list[str] = []
    if data is None:
        return warnings
    if not isinstance(data, dict):
        raise FieldError("data", f"expected a mapping, got {type_name(data)}")
    for key, value in data.items():
        where = f"data[{key}]"
        if key not in SIM_SETTINGS_KEYS:
            warnings.append(f"{where}: unknown setting (known: {', '.join(SIM_SETTINGS_KEYS)})")
            continue
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise FieldError(where, f"expected a string, got {type_name(value)}")
        if key == "featureGates":
            try:
                features.parse(str(value))
            except features.FeatureGateError as exc:
                raise FieldError(where, str(exc)) from None
            settings.feature_gates = str(value)
        elif key == "scrapeInterval":
            interval = seconds(str(value), where)
            if interval <= 0:
                raise FieldError(where, f"invalid duration {quoted(value)}: must be above 0")
            settings.scrape_interval = interval
        else:
            settings.prometheus_outages = outages(str(value), where)
    return warnings


def outages(value: str, where: str) -> list[tuple[float, float]]:
    out = []
    for part in value.split(","):
        text = part.strip()
        if not text:
            continue
        start_text, sep, end_text = text.partition("-")
        if not sep:
            raise FieldError(where, f"invalid outage {quoted(text)}: write START-END, e.g. 10m-12m")
        start, end = seconds(start_text, where), seconds(end_text, where)
        if end <= start:
            raise FieldError(where, f"invalid outage {quoted(text)}: the end must be after the start")
        out.append((start, end))
    return out
