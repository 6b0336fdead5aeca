"""Objects one scheduler's plugins share, one of each type (kube's plugins share informers through
the handle's SharedInformerFactory the same way).

The first plugin that asks for a type makes it; a backend may provide one in advance (the
simulator provides its Prometheus, say). The scheduler closes what it holds when it stops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class Closeable(Protocol):
    async def close(self) -> None: ...


class SharedObjects:
    def __init__(self, provided: Iterable[object] = ()) -> None:
        self._objects: dict[type[Any], object] = {type(obj): obj for obj in provided}

    def get(self, kind: type[T], make: Callable[[], T]) -> T:
        """The object of type `kind`, made by `make` on the first request."""
        obj = self._objects.get(kind)
        if obj is None:
            obj = make()
            self._objects[kind] = obj
        assert isinstance(obj, kind), f"shared object {kind.__name__} is a {type(obj).__name__}"
        return obj

    def find(self, kind: type[T]) -> T | None:
        """The object of type `kind` if some plugin made it (or it was provided), else None."""
        obj = self._objects.get(kind)
        return obj if isinstance(obj, kind) else None

    async def close(self) -> None:
        """Closes every object that holds something open (connections, timers)."""
        for obj in list(self._objects.values()):
            if isinstance(obj, Closeable):
                await obj.close()
