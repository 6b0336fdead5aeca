"""Field errors the way apimachinery's field.ErrorList prints them.

A FieldIssue is one `path: body` line; `body` is built as kube's ErrorBody builds it ("Required
value", "Invalid value: <value>: <detail>", "Unsupported value: "x": supported values: ...").
Values are rendered once, when the issue is made, by `shown` (strings quoted like Go's %q,
numbers bare) and cut short, so a 10 MB scalar never ends up whole in a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Longest user value echoed whole in a message; longer ones are cut with "...(N more)".
SHOWN_LIMIT = 100


def _cut(text: str) -> tuple[str, str]:
    if len(text) <= SHOWN_LIMIT:
        return text, ""
    return text[:SHOWN_LIMIT], f"...({len(text) - SHOWN_LIMIT} more)"


def shown(value: object) -> str:
    """A user value for a message: strings quoted as Go's %q does, other scalars bare, all cut to
    SHOWN_LIMIT characters with `...(N more)` after the cut."""
    if isinstance(value, str):
        head, rest = _cut(value)
        # json.dumps quotes and escapes as Go's %q does for the printable text manifests hold.
        return json.dumps(head, ensure_ascii=False) + rest
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    head, rest = _cut(str(value))
    return head + rest


def go_string(value: str) -> str:
    """A string inside a Go %#v rendering (struct fields, map entries), cut like `shown`."""
    return shown(value)


def go_json(value: object) -> str:
    """A struct, map or list value as the API server prints it in a message (kube 1.34 renders
    them with json.Marshal: compact, <, > and & escaped), cut to a few values' worth so a huge
    map never lands whole in a message. Dicts keep their order: a struct's is its fields' (give
    maps sorted, as Go sorts map keys)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text if len(text) <= 4 * SHOWN_LIMIT else text[: 4 * SHOWN_LIMIT] + f"...({len(text) - 4 * SHOWN_LIMIT} more)"


def go_map(values: dict[str, str]) -> str:
    """A map[string]string in a message; an empty one is shown as nil (`null`), what an object
    without the field decodes to."""
    return go_json(dict(sorted(values.items()))) if values else "null"


@dataclass(frozen=True, slots=True)
class FieldIssue:
    """One field error: the field path and kube's message body for it."""

    path: str
    body: str
    # True for a value that does not even decode (wrong type, int32 overflow): the API server
    # answers those with "cannot be handled as a <Kind>" rather than "is invalid".
    decode: bool = False

    def __str__(self) -> str:
        return f"{self.path}: {self.body}" if self.path else self.body

    def under(self, prefix: str) -> FieldIssue:
        """The same issue with its path moved under `prefix` (e.g. spec.template)."""
        if not prefix:
            return self
        return FieldIssue(f"{prefix}.{self.path}" if self.path else prefix, self.body, self.decode)


def _with_detail(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def required(path: str, detail: str = "") -> FieldIssue:
    return FieldIssue(path, _with_detail("Required value", detail))


def forbidden(path: str, detail: str) -> FieldIssue:
    return FieldIssue(path, _with_detail("Forbidden", detail))


def invalid(path: str, value: object, detail: str, *, rendered: bool = False) -> FieldIssue:
    """Invalid value; `rendered` marks a value already formatted (a Go struct rendering)."""
    return FieldIssue(path, _with_detail(f"Invalid value: {value if rendered else shown(value)}", detail))


def not_supported(path: str, value: object, supported: Sequence[str]) -> FieldIssue:
    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return FieldIssue(path, _with_detail(f"Unsupported value: {shown(value)}", detail))


def duplicate(path: str, value: object, detail: str = "", *, rendered: bool = False) -> FieldIssue:
    return FieldIssue(path, _with_detail(f"Duplicate value: {value if rendered else shown(value)}", detail))


def not_found(path: str, value: object) -> FieldIssue:
    return FieldIssue(path, f"Not found: {shown(value)}")


def internal_error(path: str, detail: str) -> FieldIssue:
    return FieldIssue(path, _with_detail("Internal error", detail))


def too_long(path: str, limit: int) -> FieldIssue:
    # field.TooLong (apimachinery v0.37): the value is never shown.
    return FieldIssue(path, f"Too long: may not be more than {limit} byte{'' if limit == 1 else 's'}")


def too_many(path: str, count: int, limit: int) -> FieldIssue:
    return FieldIssue(path, f"Too many: {count}: must have at most {limit} items")


# Most issues shown for one object; an object with hundreds of bad labels gets a bounded line.
AGGREGATE_LIMIT = 10


def aggregate(issues: Iterable[FieldIssue]) -> str:
    """Several issues as one line, as kube's ErrorList.ToAggregate prints them: one alone, several
    as `[a, b]`, exact repeats dropped. Beyond AGGREGATE_LIMIT the rest is counted, not listed."""
    seen: dict[str, None] = {}
    for issue in issues:
        seen.setdefault(str(issue), None)
    texts = list(seen)
    if len(texts) == 1:
        return texts[0]
    if len(texts) > AGGREGATE_LIMIT:
        texts = [*texts[:AGGREGATE_LIMIT], f"and {len(texts) - AGGREGATE_LIMIT} more"]
    return "[" + ", ".join(texts) + "]"


def invalid_object(kind: str, name: str, issues: Sequence[FieldIssue], api_version: str = "v1") -> str:
    """kubectl's line for an object the API server refused: `The Pod "web" is invalid: ...`, or
    for one it could not decode `Pod in version "v1" cannot be handled as a Pod: ...` (with the
    field named, which the API server's JSON error leaves out)."""
    undecodable = [i for i in issues if i.decode]
    if undecodable:
        version = api_version.rsplit("/", 1)[-1]
        return f"{kind} in version {shown(version)} cannot be handled as a {kind}: {undecodable[0]}"
    return f"The {kind} {shown(name)} is invalid: {aggregate(issues)}"
