"""KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`) loading, defaulting and validation.

A file that kube-scheduler accepts should load here with the same meaning, and a file it refuses
should be refused with one message naming the field. The steps follow kube-scheduler's: strict
decoding (unknown fields are errors), v1 defaulting (the default plugin set as MultiPoint, merged
with the user's plugins), the framework's MultiPoint expansion, then validation. The plugin merge
itself lives in `kubesched.config.merge`, what a configuration is in `kubesched.config.types`, the
default plugin set in `kubesched.config.defaults`.

Deliberate differences from kube-scheduler:
- a negative score weight is refused (kube-scheduler accepts it and subtracts that score);
- every pluginConfig entry must name a plugin kubesched can resolve, and args given to a plugin
  that takes none are refused (kube-scheduler passes unknown args through to out-of-tree plugins).
- scheduler extenders are refused after kube's own checks of them: kubesched does not call them yet;
- numbers are held to what the Go types hold (durations to int64 nanoseconds, qps to float32, every
  number in plugin args finite and within int64), and kubesched.scheduler.configload.load_config builds the
  scheduler once, so a plugin that cannot start with its args is refused at load, not when a run begins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from kubesched.api.durations import MAX_GO_DURATION_SECONDS, format_go_duration
from kubesched.api.yamlio import InputFileError, YamlError, load_all, read_text
from kubesched.config.checks import check_numbers
from kubesched.config.defaults import REMOVED_PLUGINS, UNSUPPORTED_PLUGINS, default_plugins
from kubesched.config.errors import ConfigError
from kubesched.config.extensions import EXT_API_VERSION, EXT_KIND, KubeschedSettings
from kubesched.config.merge import (
    Entry,
    PluginSet,
    expand_profile,
    merge_plugin_set,
)
from kubesched.config.types import API_VERSION, DEFAULT_SCHEDULER_NAME, KIND, ClientConnection, LeaderElection, SchedulerConfig
from kubesched.config.values import INT32 as _INT32
from kubesched.config.values import dns1123_label_error, dns1123_subdomain_error
from kubesched.config.values import invalid as _invalid
from kubesched.config.values import path_key as _key
from kubesched.config.values import read_bool as _bool
from kubesched.config.values import read_duration as _duration
from kubesched.config.values import read_fields as _fields
from kubesched.config.values import read_int as _int
from kubesched.config.values import read_list as _list
from kubesched.config.values import read_percentage as _percentage
from kubesched.config.values import read_str as _str
from kubesched.config.values import show as _show
from kubesched.framework.interface import EXTENSION_POINTS, Plugin
from kubesched.framework.profile import PluginRef, Profile
from kubesched.framework.registry import Registry, RegistryError

# Real configurations are a few kilobytes; this only keeps a wrong file (a log, a disk image,
# /dev/zero) from being read whole.
MAX_CONFIG_BYTES = 4 * 2**20


# kube-scheduler sets no limit; every profile is a set of plugin instances built at load time and
# kept for the run, and real configurations have a handful. A few thousand took minutes to load.
MAX_PROFILES = 100


_FLOAT32_MAX = 3.4028234663852886e38


# client-go's leaderelection.JitterFactor.
LEADER_JITTER_FACTOR = 1.2


# A message in kube's field.Error form, "<field path>: Invalid value: ...", as args validators may write.
_KUBE_FIELD_ERROR = re.compile(
    r"([A-Za-z_][\w.\[\]]*): (?=(?:invalid value|unsupported value|required value|duplicate value|forbidden"
    r"|too many|too long|not found)\b)",
    re.IGNORECASE,
)


# A validator's message that starts with the field it is about: "window: must be ...".
_FIELD_PREFIX = re.compile(r"([A-Za-z_][\w]*(?:(?:\.[A-Za-z_][\w]*)|\[\d+\])*): ")


_TOP_FIELDS = (
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "enableProfiling",
    "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds",
    "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
)


# Fields of older config versions that users still carry over: say where they went.
_GONE_FIELDS = {
    "healthzBindAddress": "removed in kubescheduler.config.k8s.io/v1beta3; the health address is a command-line flag",
    "metricsBindAddress": "removed in kubescheduler.config.k8s.io/v1beta3; the metrics address is a command-line flag",
}


_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")


_PLUGINS_FIELDS = ("multiPoint", *EXTENSION_POINTS)


_LEADER_FIELDS = (
    "leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock", "resourceName",
    "resourceNamespace",
)


_CLIENT_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


def read_config(path: str | Path | None, registry: Registry | None = None) -> SchedulerConfig:
    """Read a configuration file; None gives the default configuration. Only parses: `run` and
    `simulate` load through kubesched.scheduler.configload.load_config, which also builds the scheduler."""
    if path is None:
        return default_config(registry)
    return parse_config_text(read_config_text(path), str(path), registry)


def read_config_text(path: str | Path) -> str:
    """The file's text, bounded; ConfigError if it cannot be read."""
    try:
        return read_text(Path(path), MAX_CONFIG_BYTES, "configuration file")
    except InputFileError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def parse_config_text(text: str, source: str, registry: Registry | None = None) -> SchedulerConfig:
    """A configuration file's text: the KubeSchedulerConfiguration document, and optionally a
    KubeschedConfiguration document (config.extensions) in the same file, in either order."""
    docs = _parse_yaml(text, source)
    if not docs:
        raise ConfigError(f"{source}: the file is empty; expected a {KIND}")
    main: Any = None
    ext: Any = None
    for index, data in docs:
        manifest = _manifest_problem(data)
        if manifest is not None:
            raise ConfigError(f"{source}: {f'document {index}: ' if index > 1 else ''}{manifest}")
        kind = data.get("kind") if isinstance(data, Mapping) else None
        if kind == EXT_KIND:
            if ext is not None:
                raise ConfigError(f"{source}: document {index}: a second {EXT_KIND}; give one at most")
            ext = data
        elif main is None:
            main = data
        else:
            raise ConfigError(f"{source}: document {index}: a second {KIND}; give one, and at most one {EXT_KIND} beside it")
    if main is None:
        raise ConfigError(f"{source}: no {KIND} document (only a {EXT_KIND})")
    try:
        return parse_config(main, registry, ext)
    except ConfigError as exc:
        raise exc.in_file(source) from None


def default_config(registry: Registry | None = None) -> SchedulerConfig:
    """What kube-scheduler runs with when given no configuration file."""
    return parse_config({"apiVersion": API_VERSION, "kind": KIND}, registry)


def parse_config(data: Any, registry: Registry | None = None, ext: Any = None) -> SchedulerConfig:
    """Decode, default and validate a configuration already parsed from YAML/JSON (`ext`: the
    KubeschedConfiguration document, if any)."""
    if registry is None:
        # Imported here: only a caller that passes no registry needs every in-tree plugin loaded.
        from kubesched.plugins.registry import in_tree_registry

        registry = in_tree_registry()
    if not isinstance(data, Mapping):
        raise ConfigError(f"configuration: must be a mapping, got {_show(data)}")
    # Type meta first: a file of another version fails on its version, not on a field it has.
    _check_type_meta(data)
    top = _fields(data, "", _TOP_FIELDS, gone=_GONE_FIELDS)

    cfg = SchedulerConfig(profiles=[])
    if top.get("parallelism") is not None:
        cfg.parallelism = _int(top["parallelism"], "parallelism", _INT32)
    if cfg.parallelism <= 0:
        raise _invalid("parallelism", str(cfg.parallelism), "should be an integer value greater than zero")
    cfg.percentage_of_nodes_to_score = _percentage(top, "percentageOfNodesToScore", "percentageOfNodesToScore", 0)
    _backoff(top, cfg)
    cfg.leader_election = _leader_election(top.get("leaderElection"))
    cfg.client_connection = _client_connection(top.get("clientConnection"))
    cfg.enable_profiling = _bool(top.get("enableProfiling", True), "enableProfiling")
    # kube only turns contention profiling on by default when profiling is on.
    cfg.enable_contention_profiling = _bool(
        top.get("enableContentionProfiling", cfg.enable_profiling), "enableContentionProfiling"
    )
    cfg.delay_cache_until_active = _bool(top.get("delayCacheUntilActive", False), "delayCacheUntilActive")
    cfg.extenders = _extenders(top.get("extenders"))

    raw_profiles = _list(top.get("profiles"), "profiles") or [{}]
    if len(raw_profiles) > MAX_PROFILES:
        # In kube's field.TooMany words; each profile is a framework built at load and kept.
        raise ConfigError(f"profiles: Too many: {len(raw_profiles)}: must have at most {MAX_PROFILES} items")
    for i, raw in enumerate(raw_profiles):
        cfg.profiles.append(_profile(raw, f"profiles[{i}]", registry, single=len(raw_profiles) == 1))
    _check_profiles_agree(cfg.profiles)
    if ext is not None:
        cfg.kubesched = _kubesched_settings(ext, cfg.profiles)
    return cfg


def _kubesched_settings(data: Any, profiles: list[Profile]) -> KubeschedSettings:
    """The KubeschedConfiguration document, checked against the profiles it names."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{EXT_KIND}: must be a mapping, got {_show(data)}")
    body = dict(data)
    api_version = body.pop("apiVersion", None)
    if api_version != EXT_API_VERSION:
        raise ConfigError(f"{EXT_KIND}.apiVersion: must be {EXT_API_VERSION}, got {_show(api_version)}")
    body.pop("kind", None)
    settings = _validate_args(KubeschedSettings, body, EXT_KIND)
    assert isinstance(settings, KubeschedSettings)
    names = [p.scheduler_name for p in profiles]
    shadows = {s.scheduler_name for s in settings.shadow_profiles}
    seen: set[str] = set()
    for i, shadow in enumerate(settings.shadow_profiles):
        where = f"{EXT_KIND}.shadowProfiles[{i}]"
        if shadow.scheduler_name in seen:
            raise ConfigError(f"{where}.schedulerName: {_show(shadow.scheduler_name)} is marked shadow twice")
        seen.add(shadow.scheduler_name)
        for key, name in (("schedulerName", shadow.scheduler_name), ("shadowOf", shadow.shadow_of)):
            if name not in names:
                raise ConfigError(f"{where}.{key}: Not found: {_show(name)}: no such profile (profiles: {', '.join(names)})")
        # A shadow of a live profile: so at least one profile is live.
        if shadow.shadow_of in shadows:
            raise ConfigError(f"{where}.shadowOf: {_show(shadow.shadow_of)} is itself a shadow profile; name a live one")
    return settings


def _parse_yaml(text: str, source: str) -> list[tuple[int, Any]]:
    """The file's non-empty documents through the shared bounded reader (duplicate keys refused,
    alias expansion and depth limited), its errors in this module's forms."""
    try:
        return [(index, data) for index, data in load_all(text) if data is not None]
    except YamlError as exc:
        if exc.problem.startswith("invalid YAML") and exc.line is not None:
            raise ConfigError(f"{source}:{exc.line}:{exc.column}: {exc.problem}") from None
        raise ConfigError(f"{source}: {exc.located()}") from None


def _manifest_problem(data: Any) -> str | None:
    """What to say of a document that is a Kubernetes object (a Deployment, a ConfigMap...) rather
    than a configuration: given as one by mistake, its version or its fields are not the problem."""
    if not isinstance(data, Mapping):
        return None
    kind, api_version = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not kind or kind in (KIND, EXT_KIND):
        return None
    if isinstance(api_version, str) and api_version.split("/", 1)[0] == API_VERSION.split("/", 1)[0]:
        return None  # a configuration of another kind: its kind is what is wrong
    version = f", apiVersion {_show(api_version)}" if api_version is not None else ""
    problem = (f"this is a Kubernetes manifest (kind {_show(kind)}{version}), not a {KIND}: a configuration "
               f"has apiVersion: {API_VERSION} and kind: {KIND}")
    data_map = data.get("data") if kind == "ConfigMap" else None
    if isinstance(data_map, Mapping):
        held = [key for key, value in data_map.items() if isinstance(value, str) and f"kind: {KIND}" in value]
        if held:
            problem += f" (this ConfigMap holds one under data[{_show(held[0])}]: give that text as its own file)"
    return problem


def _check_type_meta(top: Mapping[str, Any]) -> None:
    problem = _manifest_problem(top)
    if problem is not None:
        raise ConfigError(problem)
    api_version, kind = top.get("apiVersion"), top.get("kind")
    if api_version is None:
        raise ConfigError(f"apiVersion: required, must be {API_VERSION}")
    if api_version != API_VERSION:
        # Only a version of the scheduler's own group is an older version.
        older = isinstance(api_version, str) and api_version.split("/", 1)[0] == API_VERSION.split("/", 1)[0]
        raise ConfigError(f"apiVersion: must be {API_VERSION}, got {_show(api_version)}"
                          + (" (older versions are not read; convert the file to v1)" if older else ""))
    if kind is None:
        raise ConfigError(f"kind: required, must be {KIND}")
    if kind != KIND:
        raise ConfigError(f"kind: must be {KIND}, got {_show(kind)}")


def _backoff(top: Mapping[str, Any], cfg: SchedulerConfig) -> None:
    # Whole seconds, as kube's int64 fields; kube turns them into durations, so they end where
    # Go's durations do (beyond that kube's backoff silently wraps around).
    for key, attr in (("podInitialBackoffSeconds", "pod_initial_backoff_seconds"),
                      ("podMaxBackoffSeconds", "pod_max_backoff_seconds")):
        if top.get(key) is None:
            continue
        seconds = _int(top[key], key)
        if key == "podInitialBackoffSeconds" and seconds <= 0:
            raise _invalid(key, str(seconds), "must be greater than 0")
        if seconds > MAX_GO_DURATION_SECONDS:
            raise _invalid(key, str(seconds), f"must be at most {int(MAX_GO_DURATION_SECONDS)} (the longest duration kube holds)")
        setattr(cfg, attr, float(seconds))
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        raise _invalid(
            "podMaxBackoffSeconds", f"{cfg.pod_max_backoff_seconds:.0f}", "must be greater than or equal to PodInitialBackoffSeconds"
        )


def _leader_election(raw: Any) -> LeaderElection:
    path = "leaderElection"
    data = _fields(raw, path, _LEADER_FIELDS)
    le = LeaderElection()
    if data.get("leaderElect") is not None:
        le.leader_elect = _bool(data["leaderElect"], f"{path}.leaderElect")
    for key, attr in (("leaseDuration", "lease_duration"), ("renewDeadline", "renew_deadline"),
                      ("retryPeriod", "retry_period")):
        if data.get(key) is not None:
            setattr(le, attr, _duration(data[key], f"{path}.{key}"))
    # An empty string means "not set" in kube, so it takes the default too.
    for key, attr in (("resourceLock", "resource_lock"), ("resourceName", "resource_name"),
                      ("resourceNamespace", "resource_namespace")):
        if data.get(key) is not None and _str(data[key], f"{path}.{key}"):
            setattr(le, attr, data[key])
    if not le.leader_elect:
        return le
    # component-base's ValidateLeaderElectionConfiguration, then kube-scheduler's own lock rule.
    for key, attr in (("leaseDuration", "lease_duration"), ("renewDeadline", "renew_deadline"),
                      ("retryPeriod", "retry_period")):
        if getattr(le, attr) <= 0:
            raise _invalid(f"{path}.{key}", format_go_duration(getattr(le, attr)), "must be greater than zero")
    if le.lease_duration <= le.renew_deadline:
        # kube shows renewDeadline's value here, not leaseDuration's.
        raise _invalid(f"{path}.leaseDuration", format_go_duration(le.renew_deadline), "must be greater than `RenewDeadline`")
    if le.resource_lock != "leases":
        raise _invalid(f"{path}.resourceLock", _show(le.resource_lock), 'resourceLock value must be "leases"')
    # client-go's NewLeaderElector refuses this at start: retries are jittered up to 20% late.
    if le.renew_deadline <= LEADER_JITTER_FACTOR * le.retry_period:
        raise _invalid(f"{path}.renewDeadline", format_go_duration(le.renew_deadline), "must be greater than retryPeriod*JitterFactor")
    # The Lease stores the duration as leaseDurationSeconds, an int32: the API server refuses more.
    if le.lease_duration > _INT32[1]:
        raise _invalid(f"{path}.leaseDuration", format_go_duration(le.lease_duration),
                       f"must be at most {_INT32[1]}s (the Lease's leaseDurationSeconds is a 32-bit integer)")
    for key, attr, check in (("resourceNamespace", "resource_namespace", dns1123_label_error),
                             ("resourceName", "resource_name", dns1123_subdomain_error)):
        problem = check(getattr(le, attr))
        if problem:
            raise _invalid(f"{path}.{key}", _show(getattr(le, attr)), problem)
    return le


def _client_connection(raw: Any) -> ClientConnection:
    path = "clientConnection"
    data = _fields(raw, path, _CLIENT_FIELDS)
    cc = ClientConnection()
    for key, attr in (("kubeconfig", "kubeconfig"), ("acceptContentTypes", "accept_content_types")):
        if data.get(key) is not None:
            setattr(cc, attr, _str(data[key], f"{path}.{key}"))
    if data.get("contentType") and _str(data["contentType"], f"{path}.contentType"):
        cc.content_type = data["contentType"]
    qps = data.get("qps")
    if qps is not None:
        if isinstance(qps, bool) or not isinstance(qps, (int, float)):
            raise ConfigError(f"{path}.qps: must be a number, got {_show(qps)}")
        # kube's qps is a float32: a JSON number beyond it does not decode there.
        if not (isinstance(qps, int) or math.isfinite(qps)) or abs(qps) > _FLOAT32_MAX:
            raise _invalid(f"{path}.qps", _show(qps), "must be a finite number within the range of a 32-bit float")
        # kube treats 0 as "not set" and applies the scheduler's own default.
        cc.qps = float(qps) or cc.qps
    if data.get("burst") is not None:
        burst = _int(data["burst"], f"{path}.burst", _INT32)
        if burst < 0:
            raise _invalid(f"{path}.burst", str(burst), "must be non-negative")
        cc.burst = burst or cc.burst
    return cc


def _extenders(raw: Any) -> list[dict[str, Any]]:
    extenders = _list(raw, "extenders")
    binders = 0
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if not isinstance(ext, Mapping):
            raise ConfigError(f"{path}: must be a mapping, got {_show(ext)}")
        if ext.get("prioritizeVerb"):
            weight = _int(ext.get("weight") or 0, f"{path}.weight")
            if weight <= 0:
                raise _invalid(f"{path}.weight", str(weight), "must have a positive weight applied to it")
        if ext.get("bindVerb"):
            binders += 1
    if binders > 1:
        raise _invalid("extenders", f'"found {binders} extenders implementing bind"', "only one extender can implement bind")
    if extenders:
        # Accepting them would schedule as if they were not there: say so instead.
        raise ConfigError(
            f"extenders[0]: scheduler extenders are not supported by kubesched yet ({len(extenders)} configured); "
            "remove the extenders section"
        )
    return []


def _profile(raw: Any, path: str, registry: Registry, single: bool) -> Profile:
    data = _fields(raw, path, _PROFILE_FIELDS)
    name = data.get("schedulerName")
    if name is None and single:
        name = DEFAULT_SCHEDULER_NAME
    if name is None or name == "":
        hint = "" if single else " (every profile needs a name when there are several)"
        raise ConfigError(f"{path}.schedulerName: required{hint}")
    name = _str(name, f"{path}.schedulerName")
    percentage = _percentage(data, "percentageOfNodesToScore", f"{path}.percentageOfNodesToScore", None)

    points, multi = _plugins(data.get("plugins"), f"{path}.plugins")
    multi = merge_plugin_set(PluginSet([Entry(n, w) for n, w in default_plugins()]), multi)

    classes: dict[str, type[Plugin]] = {}
    for entry in [*multi.enabled, *(e for ps in points.values() for e in ps.enabled)]:
        if entry.name not in classes:
            where = entry.path or f"{path}.plugins (default plugin {entry.name})"
            classes[entry.name] = _resolve(entry.name, where, registry)

    resolved = {
        point: [PluginRef(n, w) for n, w in refs]
        for point, refs in expand_profile(points, multi, classes, f"{path}.plugins").items()
    }
    queue_sort, bind = resolved["queueSort"], resolved["bind"]
    if len(queue_sort) != 1:
        raise ConfigError(
            f"{path}.plugins.queueSort: exactly one queue sort plugin is required for profile "
            f"{name!r}, got {len(queue_sort)}" + (f" ({', '.join(r.name for r in queue_sort)})" if queue_sort else "")
        )
    if not bind:
        raise ConfigError(f"{path}.plugins.bind: at least one bind plugin is needed for profile {name!r}")

    used = {ref.name for refs in resolved.values() for ref in refs}
    configured, args_paths = _plugin_config(data.get("pluginConfig"), f"{path}.pluginConfig", registry, classes)
    args: dict[str, BaseModel] = {}
    for plugin in sorted(used):
        cls = classes[plugin]
        if plugin in configured:
            model = configured[plugin]
            if model is not None:
                args[plugin] = model
        elif cls.Args is not None:
            args[plugin] = _validate_args(cls.Args, {}, f"{path} (default args of {plugin})")
    return Profile(
        scheduler_name=name,
        plugins=resolved,
        plugin_args=args,
        percentage_of_nodes_to_score=percentage,
        plugin_classes={n: classes[n] for n in sorted(used)},
        args_paths={n: args_paths[n] for n in sorted(used) if n in args_paths},
    )


def _plugins(raw: Any, path: str) -> tuple[dict[str, PluginSet], PluginSet]:
    """The user's plugin sets per extension point, and their multiPoint set."""
    data = _fields(raw, path, _PLUGINS_FIELDS)
    points = {point: _plugin_set(data.get(point), f"{path}.{point}") for point in EXTENSION_POINTS}
    return points, _plugin_set(data.get("multiPoint"), f"{path}.multiPoint")


def _plugin_set(raw: Any, path: str) -> PluginSet:
    data = _fields(raw, path, ("enabled", "disabled"))
    result = PluginSet()
    for kind in ("enabled", "disabled"):
        for i, item in enumerate(_list(data.get(kind), f"{path}.{kind}")):
            where = f"{path}.{kind}[{i}]"
            plugin = _fields(item, where, ("name", "weight"))
            name = plugin.get("name")
            if not name:
                raise ConfigError(f"{where}.name: required")
            name = _str(name, f"{where}.name")
            weight = None
            if plugin.get("weight") is not None:
                weight = _int(plugin["weight"], f"{where}.weight", _INT32)
                if weight < 0:
                    raise ConfigError(f"{where}.weight: must not be negative (0 means the default, 1), got {weight}")
            if kind == "enabled":
                result.enabled.append(Entry(name, weight, where))
            else:
                result.disabled.append(name)
    return result


def _resolve(name: str, path: str, registry: Registry) -> type[Plugin]:
    if name in UNSUPPORTED_PLUGINS:
        raise ConfigError(f"{path}: plugin {name!r} is not supported by kubesched yet; remove it from the profile")
    if name in REMOVED_PLUGINS:
        raise ConfigError(f"{path}: plugin {name!r} was removed in {API_VERSION} and cannot be used")
    try:
        return registry.resolve(name)
    except RegistryError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except Exception as exc:  # a user's module can fail at import in any way
        raise ConfigError(f"{path}: plugin {name!r} failed to load: {type(exc).__name__}: {exc}") from None


def _plugin_config(
    raw: Any, path: str, registry: Registry, classes: dict[str, type[Plugin]]
) -> tuple[dict[str, BaseModel | None], dict[str, str]]:
    """Validated args per plugin name for every pluginConfig entry, and where each was written."""
    out: dict[str, BaseModel | None] = {}
    paths: dict[str, str] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(_list(raw, path)):
        where = f"{path}[{i}]"
        entry = _fields(item, where, ("name", "args"))
        if not entry.get("name"):
            raise ConfigError(f"{where}.name: required")
        name = _str(entry["name"], f"{where}.name")
        if name in first:
            raise ConfigError(
                f"{where}.name: duplicate args for plugin {name!r} (already given at {path}[{first[name]}])"
            )
        first[name] = i
        cls = classes.get(name) or _resolve(name, f"{where}.name", registry)
        classes.setdefault(name, cls)
        out[name] = _plugin_args(cls, name, entry.get("args"), f"{where}.args")
        paths[name] = f"{where}.args"
    return out, paths


def _plugin_args(cls: type[Plugin], name: str, raw: Any, path: str) -> BaseModel | None:
    if raw is not None and not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: must be a mapping, got {_show(raw)}")
    args = dict(raw or {})
    # Args may carry their own type meta, as kube's nested decoding allows; it must match.
    api_version = args.pop("apiVersion", None)
    if api_version is not None and api_version != API_VERSION:
        raise ConfigError(f"{path}.apiVersion: must be {API_VERSION}, got {_show(api_version)}")
    kind = args.pop("kind", None)
    if kind is not None and kind not in (f"{name}Args", f"{cls.name}Args"):
        raise ConfigError(f"{path}.kind: must be {cls.name}Args, got {_show(kind)}")
    if cls.Args is None:
        if args:
            raise ConfigError(f"{path}: plugin {name!r} takes no args, got {', '.join(map(str, args))}")
        return None
    return _validate_args(cls.Args, args, path)


def _validate_args(model: type[BaseModel], args: Mapping[str, Any], path: str) -> BaseModel:
    try:
        validated = model.model_validate(args)
    except ValidationError as exc:
        raise _args_error(exc, path) from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply") from None
    except Exception as exc:  # a validator failing in a way pydantic does not catch (a user's plugin, an overflow)
        raise ConfigError(f"{path}: cannot be read: {type(exc).__name__}: {_show(str(exc))}") from None
    check_numbers(validated, path, _show)
    return validated


def _args_error(exc: ValidationError, path: str) -> ConfigError:
    """The first pydantic error as one line: field path, message, offending value."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    loc = [f"[{p}]" if isinstance(p, int) else f".{_key(p)}" for p in err["loc"]]
    kind, msg, value = err["type"], err["msg"], err.get("input")
    if kind == "extra_forbidden":
        text = f"{path}{''.join(loc)}: unknown field"
    elif kind == "missing":
        text = f"{path}{''.join(loc)}: required"
    else:
        msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        kube_style = _KUBE_FIELD_ERROR.match(msg)
        named = kube_style or _FIELD_PREFIX.match(msg)
        if named:
            # The validator named a field inside its own ("<field path>: ..."; kube's form is
            # "<field path>: Invalid value: ..."): join its path to ours, without repeating a
            # segment both name.
            inner = named.group(1)
            head = re.split(r"[.\[]", inner, maxsplit=1)[0]
            if loc and loc[-1] == f".{head}":
                loc.pop()
            loc.append(f".{inner}")
            msg = msg[named.end(1) + 2:]
        where = f"{path}{''.join(loc)}"
        if named or isinstance(value, (Mapping, list, tuple)) or "got " in msg:
            # The message places or shows the value itself (or the value is a whole structure).
            text = f"{where}: {msg}"
        else:
            # kube's field.Invalid form, with the value as the user wrote it.
            text = f"{where}: Invalid value: {_show(value)}: {msg}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in these args)"
    return ConfigError(text)


def _check_profiles_agree(profiles: list[Profile]) -> None:
    """kube-scheduler keeps one queue for all profiles, so they must sort it the same way."""
    seen: dict[str, int] = {}
    for i, prof in enumerate(profiles):
        if prof.scheduler_name in seen:
            raise ConfigError(
                f"profiles[{i}].schedulerName: duplicate of profiles[{seen[prof.scheduler_name]}].schedulerName, "
                f"got {_show(prof.scheduler_name)}"
            )
        seen[prof.scheduler_name] = i
    first = profiles[0]
    sort = first.names("queueSort")
    for i, prof in enumerate(profiles[1:], start=1):
        if prof.names("queueSort") != sort:
            raise ConfigError(
                f"profiles[{i}].plugins.queueSort: must be the same for all profiles, "
                f"got {', '.join(prof.names('queueSort'))} but profiles[0] has {', '.join(sort)}"
            )
        if prof.plugin_args.get(sort[0]) != first.plugin_args.get(sort[0]):
            raise ConfigError(
                f"profiles[{i}].pluginConfig: args of queue sort plugin {sort[0]!r} must be the same for all profiles"
            )
