"""Checks that several plugins' args share: a plugin that takes none, a label key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.validation.meta import label_key


def refuse_args(plugin: str, args: Any) -> None:
    """A plugin without args given some in pluginConfig: refused, naming them."""
    if isinstance(args, Mapping) and args:
        raise ValueError(f"{plugin} takes no args, got {sorted(args)}")


def check_label_key(value: str) -> str:
    """An arg naming a node or pod label: a valid label key (apimachinery's IsQualifiedName)."""
    errors = label_key(value)
    if errors:
        raise ValueError(f"{value!r} is not a valid label key: {errors[0]}")
    return value
