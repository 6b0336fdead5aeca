"""Deployments, ReplicaSets, StatefulSets, Jobs and ReplicationControllers: the apps and batch
validation of their specs and pod templates, after defaulting (replicas 1, the template's
restartPolicy Always, an RC's selector from its template's labels, a Job's generated labels).
A Job's template without restartPolicy is refused as kube refuses it: "Required value", since
the Always defaulting wrote is not the user's.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import (
    Int32,
    Int64,
    LabelSelector,
    ObjectMeta,
    PersistentVolumeClaimVolumeSource,
    PodTemplateSpec,
    Volume,
)
from kubesched.api.selectors import SelectorError, compile_label_selector
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.api.validation.field import FieldIssue, forbidden, go_map, invalid, not_supported, required
from kubesched.api.validation.meta import (
    NameCheck,
    name_is_dns_label,
    name_is_dns_subdomain,
    selector_string,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.pod import validate_pod_template
from kubesched.api.validation.storage import validate_pvc_spec
from kubesched.api.validation.strategies import (
    DeploymentStrategy,
    RetentionPolicy,
    StatefulSetStrategy,
    validate_deployment_strategy,
    validate_progress_deadline,
    validate_retention_policy,
    validate_statefulset_strategy,
)

JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
MAX_PARALLELISM_INDEXED = 100_000
NONNEGATIVE = "must be greater than or equal to 0"


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class Ordinals(_Obj):
    start: Int32 = 0


class WorkloadSpec(_Obj):
    """The union of the workload spec fields validated here; each kind reads its own."""

    replicas: Int32 | None = None
    min_ready_seconds: Int32 = 0
    revision_history_limit: Int32 | None = None
    selector: Any = None  # LabelSelector, or a map for ReplicationControllers
    template: PodTemplateSpec | None = None
    ordinals: Ordinals | None = None
    pod_management_policy: str = ""
    parallelism: Int32 | None = None
    completions: Int32 | None = None
    completion_mode: str = ""
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    manual_selector: bool | None = None
    ttl_seconds_after_finished: Int32 | None = None
    backoff_limit_per_index: Int32 | None = None
    max_failed_indexes: Int32 | None = None
    pod_replacement_policy: str | None = None
    pod_failure_policy: Any = None
    strategy: DeploymentStrategy | None = None
    progress_deadline_seconds: Int32 | None = None
    service_name: str = ""
    update_strategy: StatefulSetStrategy | None = None
    persistent_volume_claim_retention_policy: RetentionPolicy | None = None
    volume_claim_templates: list[PersistentVolumeClaim] = msgspec.field(default_factory=list)


class Workload(_Obj):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


NAME_CHECKS: dict[str, NameCheck] = {
    "Deployment": name_is_dns_subdomain,
    "ReplicaSet": name_is_dns_subdomain,
    "StatefulSet": name_is_dns_label,
    "Job": name_is_dns_subdomain,
    "ReplicationController": name_is_dns_subdomain,
}


def _nonnegative(value: int | None, path: str) -> list[FieldIssue]:
    return [invalid(path, value, NONNEGATIVE)] if value is not None and value < 0 else []


def _label_selector(raw: Any) -> LabelSelector | None:
    return msgspec.convert(raw, LabelSelector, strict=False) if raw is not None else None


def validate_workload(kind: str, obj: Workload, selector: LabelSelector | dict[str, str] | None) -> list[FieldIssue]:
    """One workload of `kind` (already decoded, its selector decoded for the kind; obj.spec.selector
    keeps the raw form for messages)."""
    out = validate_object_meta(obj.metadata, namespaced=True, name_check=NAME_CHECKS[kind])
    spec = obj.spec
    out.extend(_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if kind == "Job":
        out.extend(_job(obj, selector if isinstance(selector, LabelSelector) or selector is None else None))
        return out
    out.extend(_nonnegative(spec.replicas, "spec.replicas"))
    if kind == "Deployment":
        out.extend(_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit"))
        out.extend(validate_deployment_strategy(spec.strategy))
        out.extend(validate_progress_deadline(spec.progress_deadline_seconds, spec.min_ready_seconds))
    if kind == "StatefulSet":
        if spec.pod_management_policy not in ("", "OrderedReady", "Parallel"):
            out.append(invalid("spec.podManagementPolicy", spec.pod_management_policy, "must be 'OrderedReady' or 'Parallel'"))
        out.extend(validate_statefulset_strategy(spec.update_strategy))
        out.extend(validate_retention_policy(spec.persistent_volume_claim_retention_policy))
        if spec.ordinals is not None:
            out.extend(_nonnegative(spec.ordinals.start, "spec.ordinals.start"))
        if spec.service_name:
            # The headless Service's name becomes part of every pod's DNS name: a DNS-1123 label.
            out.extend(invalid("spec.serviceName", spec.service_name, msg) for msg in name_is_dns_label(spec.service_name))
    template = spec.template or PodTemplateSpec()
    if kind == "ReplicationController":
        labels = selector if isinstance(selector, dict) and selector else dict(template.metadata.labels)
        if not labels:
            out.append(required("spec.selector"))
        out.extend(validate_labels(labels, "spec.selector"))
        if spec.template is None:
            out.append(required("spec.template"))
            return out
        if labels and not all(template.metadata.labels.get(k) == v for k, v in labels.items()):
            out.append(_mismatch(template))
    else:
        out.extend(_selector(kind, selector if isinstance(selector, LabelSelector) or selector is None else None, template,
                             spec.selector))
    if kind == "StatefulSet" and spec.volume_claim_templates:
        for i, claim in enumerate(spec.volume_claim_templates):
            out.extend(validate_pvc_spec(claim.spec, f"spec.volumeClaimTemplates[{i}].spec"))
        # The template is validated with the claims' volumes in place, as the pods will have them.
        template = PodTemplateSpec(metadata=template.metadata,
                                   spec=msgspec.structs.replace(template.spec, volumes=claim_volumes(spec.volume_claim_templates,
                                                                                                     template.spec.volumes)))
    out.extend(validate_pod_template(template.metadata, template.spec, "spec.template"))
    restart = template.spec.restart_policy or "Always"
    if restart != "Always":
        out.append(not_supported("spec.template.spec.restartPolicy", restart, ["Always"]))
    if template.spec.active_deadline_seconds is not None:
        out.append(forbidden("spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported"))
    return out


def claim_volumes(templates: list[PersistentVolumeClaim], volumes: list[Volume], claim_name: Any = None) -> list[Volume]:
    """A StatefulSet pod's volumes: one per volumeClaimTemplate (replacing a template volume of
    the same name), claiming `claim_name(template name)` (the template's own name by default)."""
    added = {t.metadata.name: Volume(name=t.metadata.name, persistent_volume_claim=PersistentVolumeClaimVolumeSource(
        claim_name=claim_name(t.metadata.name) if claim_name else t.metadata.name)) for t in templates}
    kept = [v for v in volumes if v.name not in added]
    return [*kept, *added.values()]


def _mismatch(template: PodTemplateSpec) -> FieldIssue:
    return invalid("spec.template.metadata.labels", go_map(template.metadata.labels),
                   "`selector` does not match template `labels`", rendered=True)


def _selector(kind: str, selector: LabelSelector | None, template: PodTemplateSpec, raw: Any) -> list[FieldIssue]:
    """A required label selector that must select the template's labels."""
    out: list[FieldIssue] = []
    if selector is None:
        # A nil selector selects nothing, so the template mismatch is reported too (as kube does).
        return [required("spec.selector"), _mismatch(template)]
    errs = validate_label_selector(selector, "spec.selector")
    out.extend(errs)
    if not selector.match_labels and not selector.match_expressions:
        noun = "statefulset" if kind == "StatefulSet" else "deployment"
        out.append(invalid("spec.selector", selector_string(selector, raw), f"empty selector is invalid for {noun}",
                           rendered=True))
        return out
    try:
        # LabelSelectorAsSelector refuses what the selector's validation refused (keys, values,
        # operators), and then nothing is matched against the template.
        if errs:
            raise SelectorError("invalid")
        compiled = compile_label_selector(selector)
    except SelectorError:
        out.append(invalid("spec.selector", selector_string(selector, raw), "invalid label selector", rendered=True))
        return out
    if not compiled.matches(template.metadata.labels):
        out.append(_mismatch(template))
    return out


def _job(obj: Workload, selector: LabelSelector | None) -> list[FieldIssue]:
    spec = obj.spec
    out: list[FieldIssue] = []
    out.extend(_nonnegative(spec.parallelism, "spec.parallelism"))
    out.extend(_nonnegative(spec.completions, "spec.completions"))
    out.extend(_nonnegative(spec.active_deadline_seconds, "spec.activeDeadlineSeconds"))
    out.extend(_nonnegative(spec.backoff_limit, "spec.backoffLimit"))
    out.extend(_nonnegative(spec.ttl_seconds_after_finished, "spec.ttlSecondsAfterFinished"))
    mode = spec.completion_mode or "NonIndexed"
    if mode not in ("NonIndexed", "Indexed"):
        out.append(not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
    if spec.backoff_limit_per_index is not None:
        out.extend(_nonnegative(spec.backoff_limit_per_index, "spec.backoffLimitPerIndex"))
        if mode != "Indexed":
            out.append(invalid("spec.backoffLimitPerIndex", spec.backoff_limit_per_index, "requires indexed completion mode"))
    if spec.max_failed_indexes is not None:
        out.extend(_nonnegative(spec.max_failed_indexes, "spec.maxFailedIndexes"))
        if spec.backoff_limit_per_index is None:
            out.append(required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if spec.pod_replacement_policy is not None:
        # With a podFailurePolicy, only Failed pods may be replaced.
        policies = ["Failed"] if spec.pod_failure_policy is not None else ["Failed", "TerminatingOrFailed"]
        if spec.pod_replacement_policy not in policies:
            out.append(not_supported("spec.podReplacementPolicy", spec.pod_replacement_policy, policies))
    if mode == "Indexed":
        if spec.completions is None:
            out.append(required("spec.completions", "when completion mode is Indexed"))
        if spec.parallelism is not None and spec.parallelism > MAX_PARALLELISM_INDEXED:
            out.append(invalid("spec.parallelism", spec.parallelism,
                               f"must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed"))
    template = spec.template or PodTemplateSpec()
    if spec.manual_selector:
        out.extend(_selector("Job", selector, template, spec.selector))
    else:
        # The API server generates the selector and adds these labels to the template before
        # validating it, so a name too long for a label value is reported on the template.
        uid, name = obj.metadata.uid or "00000000-0000-0000-0000-000000000000", obj.metadata.name
        generated = {JOB_CONTROLLER_UID: uid, JOB_NAME: name, LEGACY_JOB_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
        if selector is not None:
            # The API server adds the controller-uid label to a given selector; it must then select
            # exactly the generated labels (a selector on app=... does not).
            generated_selector = LabelSelector(match_labels={JOB_CONTROLLER_UID: uid, **selector.match_labels},
                                               match_expressions=selector.match_expressions)
            try:
                matches = compile_label_selector(generated_selector).matches({JOB_CONTROLLER_UID: uid, JOB_NAME: name})
            except SelectorError:
                matches = True  # reported by the selector's own validation
            if not matches:
                raw = {**spec.selector, "matchLabels": {}} if isinstance(spec.selector, dict) else None
                out.append(invalid("spec.selector", selector_string(generated_selector, raw), "`selector` not auto-generated",
                                   rendered=True))
            out.extend(validate_label_selector(selector, "spec.selector"))
        template = PodTemplateSpec(metadata=msgspec.structs.replace(
            template.metadata, labels={**template.metadata.labels, **generated}), spec=template.spec)
        if selector is not None and not matches:
            # The selector must also select the pods the Job will make (their labels as generated).
            out.append(_mismatch(template))
    out.extend(validate_pod_template(template.metadata, template.spec, "spec.template"))
    out.extend(_job_restart_policy(template.spec.restart_policy, spec.pod_failure_policy is not None))
    return out


def _job_restart_policy(restart: str, failure_policy: bool) -> list[FieldIssue]:
    """A Job's pods must not restart in place. Defaulting would have written Always where the user
    wrote nothing, so Always (written or not) is a value missing, not one unsupported."""
    path = "spec.template.spec.restartPolicy"
    if restart in ("", "Always"):
        return [required(path, 'valid values: "OnFailure", "Never"')]
    if restart not in ("OnFailure", "Never"):
        return [not_supported(path, restart, ["OnFailure", "Never"])]
    if failure_policy and restart != "Never":
        return [invalid(path, restart, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def decode_selector(kind: str, raw: Any) -> LabelSelector | dict[str, str] | None:
    """The selector of a workload as its kind types it (a map for ReplicationControllers)."""
    if raw is None:
        return None
    if kind == "ReplicationController":
        return msgspec.convert(raw, dict[str, str], strict=False)
    return _label_selector(raw)
