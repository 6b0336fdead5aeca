"""User plugins (`module:Class`) re-imported when their source changes.

Python imports a module once; a reload that should pick up an edited plugin file must import it
again. Each user module's source is hashed when it is first seen and at every reload; a module
whose source changed is re-imported (importlib.reload) before the new configuration is parsed, so
the configuration resolves the new class. Frameworks of the running generation keep the classes
they were built with until the new generation replaces them; a plugin whose class did not change
keeps its instance, one whose module was re-imported gets a new one.

Only the modules the configuration names are watched, not what they import themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import sys
from collections.abc import Iterable

log = logging.getLogger(__name__)

# The digest of each user module's source as it was last imported.
_loaded: dict[str, str] = {}


class ModuleError(RuntimeError):
    pass


def source_digest(name: str) -> str:
    """The digest of a module's source file now ("" if it has no readable file)."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return ""


def refresh(names: Iterable[str]) -> list[str]:
    """Re-imports the already imported modules among `names` whose source changed since they were
    imported; returns those re-imported. Raises ModuleError naming the module that fails to import."""
    reloaded = []
    for name in sorted(set(names)):
        module = sys.modules.get(name)
        if module is None:
            continue  # not imported yet: the configuration's registry imports it fresh
        now = source_digest(name)
        before = _loaded.setdefault(name, now)
        if now == before or not now:
            continue
        try:
            importlib.reload(module)
        except Exception as exc:  # a syntax error, an import that fails: the running classes stay
            raise ModuleError(f"plugin module {name!r} changed but cannot be imported again: {type(exc).__name__}: {exc}") from None
        _loaded[name] = now
        reloaded.append(name)
        log.info("re-imported plugin module %s: its source changed", name)
    return reloaded


def digests(names: Iterable[str]) -> dict[str, str]:
    """The source digests of modules as imported, for the configuration's digest."""
    out = {}
    for name in names:
        if name in sys.modules:
            out[name] = _loaded.setdefault(name, source_digest(name))
    return out
