"""Names, labels, annotations, label selectors and ObjectMeta, with apimachinery's rules and texts.

The texts are kube's (k8s.io/apimachinery/pkg/api/validate/content and util/validation),
including their quirks (the double space in "(e.g. 'my-name',  or '123-abc', ...)").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from kubesched.api.objects import LabelSelector, ObjectMeta, OwnerReference
from kubesched.api.validation.field import FieldIssue, go_json, invalid, required, too_long

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_VALUE_MAX = 63
LABEL_KEY_NAME_MAX = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"

_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}$")
_LABEL_KEY = re.compile(f"^{_LABEL_KEY_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")

_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                      "start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                      "alphabetic character, and end with an alphanumeric character")
_LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                    "must start and end with an alphanumeric character")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """kube's RegexError text, examples and all."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown_examples = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown_examples}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


EMPTY_ERROR = "must be non-empty"


def dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


_DNS1123_SUBDOMAIN_CASELESS = re.compile(_DNS1123_SUBDOMAIN_FMT, re.IGNORECASE | re.ASCII)
_DNS1123_SUBDOMAIN_CASELESS_MSG = ("an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start "
                                   "and end with an alphanumeric character")


def dns1123_subdomain_caseless(value: str) -> list[str]:
    """IsDNS1123SubdomainCaseless (the declarative validation's LongNameCaseless): upper case allowed."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_CASELESS.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_CASELESS_MSG, _DNS1123_SUBDOMAIN_FMT, "Example.com"))
    return errs


def dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _DNS1035_LABEL.match(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def label_key(value: str) -> list[str]:
    """IsQualifiedName / IsLabelKey: an optional DNS subdomain prefix, '/', and a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + EMPTY_ERROR)
        else:
            errs.extend("prefix part " + msg for msg in dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + EMPTY_ERROR)
    elif len(name) > LABEL_KEY_NAME_MAX:
        errs.append("name part " + max_len_error(LABEL_KEY_NAME_MAX))
    if not _LABEL_KEY.match(name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.match(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


# Name validators take (name, prefix): with prefix (generateName) a trailing '-' is allowed, as
# the random suffix follows it.
NameCheck = Callable[[str, bool], list[str]]


def _mask_trailing_dash(name: str) -> str:
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool = False) -> list[str]:
    """What the API server asks of the names of kinds it validates no further (apimachinery's
    ValidatePathSegmentName): a name usable as one segment of a URL path."""
    out = []
    if not prefix and name in (".", ".."):
        out.append(f"may not be '{name}'")
    out.extend(f"may not contain '{c}'" for c in "/%" if c in name)
    return out


def validate_label_name(name: str, path: str) -> list[FieldIssue]:
    return [invalid(path, name, msg) for msg in label_key(name)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for key, value in labels.items():
        out.extend(validate_label_name(key, path))
        out.extend(invalid(path, value, msg) for msg in label_value(value))
    return out


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    total = 0
    for key, value in annotations.items():
        out.extend(invalid(path, key, msg) for msg in label_key(key.lower()))
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        out.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return out


def validate_object_meta(meta: ObjectMeta, *, namespaced: bool, name_check: NameCheck, path: str = "metadata") -> list[FieldIssue]:
    """ValidateObjectMeta on create: name or generateName, namespace, labels, annotations."""
    out: list[FieldIssue] = []
    if meta.generate_name:
        out.extend(invalid(f"{path}.generateName", meta.generate_name, msg) for msg in name_check(meta.generate_name, True))
    if not meta.name:
        if not meta.generate_name:
            out.append(required(f"{path}.name", "name or generateName is required"))
    else:
        out.extend(invalid(f"{path}.name", meta.name, msg) for msg in name_check(meta.name, False))
    if namespaced:
        if not meta.namespace:
            out.append(required(f"{path}.namespace"))
        else:
            out.extend(invalid(f"{path}.namespace", meta.namespace, msg) for msg in name_is_dns_label(meta.namespace))
    out.extend(validate_labels(meta.labels, f"{path}.labels"))
    out.extend(validate_annotations(meta.annotations, f"{path}.annotations"))
    out.extend(validate_owner_references(meta.owner_references, f"{path}.ownerReferences"))
    return out


def validate_owner_references(refs: list[OwnerReference], path: str) -> list[FieldIssue]:
    """ValidateOwnerReferences (reported at the list's path, without an index, as kube does)."""
    out: list[FieldIssue] = []
    controller = ""
    for ref in refs:
        version = ref.api_version.rsplit("/", 1)[-1]
        if not version:
            out.append(invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty"))
        if not ref.kind:
            out.append(invalid(f"{path}.kind", ref.kind, "kind must not be empty"))
        if not ref.name:
            out.append(invalid(f"{path}.name", ref.name, "name must not be empty"))
        if not ref.uid:
            out.append(invalid(f"{path}.uid", ref.uid, "uid must not be empty"))
        if ref.controller:
            name = f"{ref.kind}/{ref.name}"
            if controller:
                listed = go_json([{"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid,
                                   **({} if r.controller is None else {"controller": r.controller})} for r in refs[:5]])
                out.append(invalid(path, listed, "Only one reference can have Controller set to true. Found \"true\" in "
                                                       f"references for {controller} and {name}", rendered=True))
            else:
                controller = name
    return out


# --- label selectors ------------------------------------------------------------------------


def validate_label_selector(selector: LabelSelector | None, path: str) -> list[FieldIssue]:
    """metav1 ValidateLabelSelector (label values in selectors checked, as on create)."""
    if selector is None:
        return []
    out = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, expr in enumerate(selector.match_expressions):
        where = f"{path}.matchExpressions[{i}]"
        if expr.operator in ("In", "NotIn"):
            if not expr.values:
                out.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif expr.operator in ("Exists", "DoesNotExist"):
            if expr.values:
                out.append(FieldIssue(f"{where}.values",
                                      "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            out.append(invalid(f"{where}.operator", expr.operator, "not a valid selector operator"))
        out.extend(validate_label_name(expr.key, f"{where}.key"))
        for j, value in enumerate(expr.values):
            out.extend(invalid(f"{where}.values[{j}]", value, msg) for msg in label_value(value))
    return out


def selector_string(selector: LabelSelector, raw: object = None) -> str:
    """A *metav1.LabelSelector as kube prints it in 'Invalid value: ...': its JSON, empty fields
    left out (`{}` for an empty selector). `raw` is unused (kept for callers)."""
    out: dict[str, object] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(sorted(selector.match_labels.items()))
    if selector.match_expressions:
        out["matchExpressions"] = [{"key": e.key, "operator": e.operator, **({"values": e.values} if e.values else {})}
                                   for e in selector.match_expressions]
    return go_json(out)


__all__ = [
    "NameCheck",
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "label_key",
    "label_value",
    "name_is_dns1035_label",
    "name_is_dns_label",
    "name_is_dns_subdomain",
    "selector_string",
    "validate_annotations",
    "validate_label_name",
    "validate_label_selector",
    "validate_labels",
    "validate_object_meta",
]
