"""In-tree plugins: one module per plugin, registered here by name."""

from __future__ import annotations

from kubesched.framework.interface import Plugin

IN_TREE: list[type[Plugin]] = []
