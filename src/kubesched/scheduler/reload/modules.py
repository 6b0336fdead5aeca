"""User plugins (`module:Class`) re-imported when their source changes.

Python imports a module once; a reload that should pick up an edited plugin file must import it
again. Each user module's source is hashed when it is first seen and at every reload; a module
whose source changed is imported again, as a new module object that replaces the old one in
sys.modules, before the new configuration is parsed, so the configuration resolves the new class.
The old module object is left as it was (importlib.reload would execute the new source in the old
namespace, under the feet of the classes still running): the frameworks in force keep their
classes, with the globals those were written against, until a new generation replaces them, and
a refused reload leaves them untouched. A plugin whose class did not change keeps its instance,
one whose module was imported again gets a new one.

Only the modules the configuration names are watched, not what they import themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import logging
import sys
from collections.abc import Iterable
from types import ModuleType

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
            _import_again(name, module)
        except Exception as exc:  # a syntax error, an import that fails: the running classes stay
            raise ModuleError(f"plugin module {name!r} changed but cannot be imported again: {type(exc).__name__}: {exc}") from None
        _loaded[name] = now
        reloaded.append(name)
        log.info("re-imported plugin module %s: its source changed", name)
    return reloaded


def _import_again(name: str, old: ModuleType) -> None:
    """Executes the module's current source in a new module object that takes the old one's place
    in sys.modules (and in its parent package); the old object is put back if it fails."""
    spec = old.__spec__
    if spec is None or spec.origin is None or spec.loader is None:
        raise ModuleError(f"plugin module {name!r} has no source file to import again")
    fresh_spec = importlib.util.spec_from_file_location(name, spec.origin,
                                                        submodule_search_locations=spec.submodule_search_locations)
    if fresh_spec is None or fresh_spec.loader is None:
        raise ModuleError(f"plugin module {name!r}: cannot load {spec.origin}")
    fresh = importlib.util.module_from_spec(fresh_spec)
    sys.modules[name] = fresh
    try:
        fresh_spec.loader.exec_module(fresh)
    except BaseException:
        sys.modules[name] = old
        raise
    parent, _, child = name.rpartition(".")
    if parent and parent in sys.modules:
        setattr(sys.modules[parent], child, fresh)


def digests(names: Iterable[str]) -> dict[str, str]:
    """The source digests of modules as imported, for the configuration's digest."""
    out = {}
    for name in names:
        if name in sys.modules:
            out[name] = _loaded.setdefault(name, source_digest(name))
    return out
