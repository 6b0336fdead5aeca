"""PodGroups and Workloads of scheduling.k8s.io/v1beta1, as the API server validates them on
create (kube v1.37.2: declarative validation of the v1beta1 types and the hand-written checks of
pkg/apis/scheduling/validation). Messages are the API server's, as observed from the real one."""

from __future__ import annotations

from kubesched.api.podgroups import PodGroup, SchedulingPolicy, Workload
from kubesched.api.validation.field import FieldIssue, duplicate, invalid, required, too_many
from kubesched.api.validation.meta import name_is_dns_label, name_is_dns_subdomain, validate_label_name, validate_object_meta

MAX_TEMPLATES = 8
MAX_PRIORITY = 1_000_000_000


def _policy(policy: SchedulingPolicy, path: str) -> list[FieldIssue]:
    chosen = [name for name, value in (("basic", policy.basic), ("gang", policy.gang)) if value is not None]
    if not chosen:
        return [invalid(path, "", "must specify one of: `basic`, `gang`")]
    if len(chosen) > 1:
        return [invalid(path, "{basic, gang}", "must specify exactly one of: `basic`, `gang`")]
    gang = policy.gang
    if gang is not None and gang.min_count <= 0:
        # The declarative validator reads a zero int as unset.
        return [required(f"{path}.gang.minCount")] if gang.min_count == 0 else \
            [invalid(f"{path}.gang.minCount", gang.min_count, "must be greater than or equal to 1")]
    return []


def _common(policy: SchedulingPolicy, constraints: object, priority: int | None, path: str) -> list[FieldIssue]:
    out = _policy(policy, f"{path}.schedulingPolicy")
    topology = getattr(constraints, "topology", None) or []
    if len(topology) > 1:
        out.append(too_many(f"{path}.schedulingConstraints.topology", len(topology), 1))
    for i, item in enumerate(topology):
        where = f"{path}.schedulingConstraints.topology[{i}].key"
        if not item.key:
            out.append(required(where))
        else:
            out.extend(validate_label_name(item.key, where))
    if priority is not None and priority > MAX_PRIORITY:
        out.append(invalid(f"{path}.priority", priority, f"must be less than or equal to {MAX_PRIORITY}"))
    return out


def validate_pod_group(pg: PodGroup) -> list[FieldIssue]:
    out = validate_object_meta(pg.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    spec = pg.spec
    if spec.workload_ref is not None:
        ref = spec.workload_ref
        if not ref.workload_name:
            out.append(required("spec.workloadRef.workloadName"))
        else:
            out.extend(invalid("spec.workloadRef.workloadName", ref.workload_name, m) for m in name_is_dns_subdomain(ref.workload_name))
        if not ref.template_name:
            out.append(required("spec.workloadRef.templateName"))
        else:
            out.extend(invalid("spec.workloadRef.templateName", ref.template_name, m) for m in name_is_dns_label(ref.template_name))
    out.extend(_common(spec.scheduling_policy, spec.scheduling_constraints, spec.priority, "spec"))
    return out


def validate_workload(wl: Workload) -> list[FieldIssue]:
    out = validate_object_meta(wl.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    templates = wl.spec.pod_group_templates
    if not templates:
        out.append(required("spec.podGroupTemplates", "must have at least one PodGroupTemplate"))
    if len(templates) > MAX_TEMPLATES:
        out.append(too_many("spec.podGroupTemplates", len(templates), MAX_TEMPLATES))
    seen: set[str] = set()
    priorities: set[tuple[str, int | None]] = set()
    for i, t in enumerate(templates):
        where = f"spec.podGroupTemplates[{i}]"
        if not t.name:
            out.append(required(f"{where}.name"))
        else:
            out.extend(invalid(f"{where}.name", t.name, m) for m in name_is_dns_label(t.name))
            if t.name in seen:
                out.append(duplicate(f"{where}.name", t.name))
            seen.add(t.name)
        out.extend(_common(t.scheduling_policy, t.scheduling_constraints, t.priority, where))
        priorities.add((t.priority_class_name, t.priority))
    if len(priorities) > 1:
        out.append(invalid("spec.podGroupTemplates", "", "detected multiple priority configurations"))
    return out
