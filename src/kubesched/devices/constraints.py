"""A claim's device constraints as the structured allocator checks them while it searches:
matchAttribute (every device of the constrained requests has the same value) and
distinctAttribute (every one a different value). Devices come and go in stack order as the search
backtracks, so each constraint only tracks what it needs to undo the last `add`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.dra import Device, DeviceAttribute


def lookup_attribute(device: Device, driver: str, name: str) -> DeviceAttribute | None:
    """The attribute by its fully qualified name; in the driver's own domain also by the bare id."""
    attribute = device.attributes.get(name)
    if attribute is not None:
        return attribute
    domain, slash, ident = name.partition("/")
    if not slash or domain != driver:
        return None
    return device.attributes.get(ident)


def typed_value(attribute: DeviceAttribute) -> tuple[str, object] | None:
    """(type, value) in kube's order of checking the fields: string, int, bool, version."""
    for kind, value in (("string", attribute.string_value), ("int", attribute.int_value),
                        ("bool", attribute.bool_value), ("version", attribute.version_value)):
        if value is not None:
            return kind, value
    return None


@dataclass(slots=True)
class Constraint:
    """matchAttribute (`distinct` False) or distinctAttribute over `requests` (all when empty)."""

    attribute: str
    requests: frozenset[str]
    distinct: bool
    _first: tuple[str, object] | None = None
    _count: int = 0
    _seen: list[tuple[str, object] | None] = field(default_factory=list)

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(subrequest) and f"{request}/{subrequest}" in self.requests)

    def add(self, request: str, subrequest: str, device: Device, driver: str) -> bool:
        if not self.applies(request, subrequest):
            return True
        attribute = lookup_attribute(device, driver, self.attribute)
        if attribute is None:
            return False
        value = typed_value(attribute)
        if self.distinct:
            # A value of no known type differs from nothing but is never distinct from anything.
            if self._seen and (value is None or value in self._seen):
                return False
            self._seen.append(value)
            return True
        if self._count == 0:
            self._first = value
            self._count = 1
            return True
        if value is None or value != self._first:
            return False
        self._count += 1
        return True

    def remove(self, request: str, subrequest: str) -> None:
        if not self.applies(request, subrequest):
            return
        if self.distinct:
            self._seen.pop()
        else:
            self._count -= 1
