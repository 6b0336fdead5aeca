"""What several plugins' queueing hints share (kube's util.As for the objects of an event)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def checked_new(plugin: str, kind: type[T], old: object, new: object) -> T:
    """An event's new object, once both it and the old one (None when the object was added) are
    found to be of `kind`; anything else is a mistake in the caller, raised as TypeError naming
    the plugin."""
    if not isinstance(new, kind) or (old is not None and not isinstance(old, kind)):
        raise TypeError(f"{plugin}: expected {kind.__name__} objects, got {type(old).__name__} and {type(new).__name__}")
    return new
