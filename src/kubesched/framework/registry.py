"""Finds plugin classes by registered name, or by `module:Class` for a user's own plugin.

Generic: which plugins are registered is the caller's choice (kubesched.plugins.registry has the
in-tree ones), so the framework never imports a concrete plugin."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from kubesched.framework.interface import Plugin


class RegistryError(LookupError):
    pass


class Registry:
    def __init__(self, plugins: Iterable[type[Plugin]] = ()) -> None:
        self._plugins: dict[str, type[Plugin]] = {}
        for cls in plugins:
            self.register(cls)

    def register(self, cls: type[Plugin]) -> None:
        if not cls.name:
            raise RegistryError(f"plugin class {cls.__qualname__} has no name")
        if cls.name in self._plugins and self._plugins[cls.name] is not cls:
            raise RegistryError(f"a plugin named {cls.name!r} is already registered")
        self._plugins[cls.name] = cls

    def names(self) -> list[str]:
        return sorted(self._plugins)

    def resolve(self, ref: str) -> type[Plugin]:
        """A registered name, or `package.module:ClassName` imported on demand."""
        cls = self._plugins.get(ref)
        if cls is not None:
            return cls
        if ":" not in ref:
            raise RegistryError(f"unknown plugin {ref!r} (registered: {', '.join(self.names())}; "
                                "a plugin of your own is named as module:Class)")
        module_name, _, attr = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise RegistryError(f"plugin {ref!r}: cannot import module {module_name!r}: {exc}") from None
        obj = getattr(module, attr, None)
        if not (isinstance(obj, type) and issubclass(obj, Plugin)):
            raise RegistryError(f"plugin {ref!r}: {attr!r} in {module_name} is not a kubesched Plugin class")
        if not obj.name:
            obj.name = ref
        self._plugins[ref] = obj
        return obj

