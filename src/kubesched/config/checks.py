"""A check config parsing runs after decoding plugin args, so that a configuration it accepts cannot fail later.

`check_numbers`: every number in a plugin's validated args is finite and fits an int64, and no
list or mapping in them holds more than MAX_ARGS_ITEMS entries. Each plugin validates its own
ranges; this catches what a plugin's author did not think of (`.inf`, `.nan`, `2**80` in a dict of
weights, 50,000 HotValue windows that every scoring cycle would walk) before numpy or a timer
overflows on it, or a run crawls, mid-run.

The other check, building the scheduler, is in `kubesched.scheduler.configload`: it needs the scheduler,
which itself needs the config module, so it cannot sit below config parsing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from kubesched.config.errors import ConfigError
from kubesched.config.values import INT64

# Entries in one list or mapping of plugin args (a node-affinity term's values, HotValue's windows,
# extra resources): far above what any configuration needs, low enough that per-cycle loops stay fast.
MAX_ARGS_ITEMS = 1000


def check_numbers(value: Any, path: str, show: Any = repr) -> None:
    """Raises ConfigError at the first non-finite float, integer beyond int64 or container of more
    than MAX_ARGS_ITEMS entries under `value`, in field order; `show` renders a bad value."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        children: list[tuple[Any, str]] = []
        if isinstance(item, BaseModel):
            for name, info in type(item).model_fields.items():
                children.append((getattr(item, name), f"{where}.{info.alias or name}"))
        elif isinstance(item, (Mapping, list, tuple, set, frozenset)):
            if len(item) > MAX_ARGS_ITEMS:
                # kube's field.TooMany words.
                raise ConfigError(f"{where}: Too many: {len(item)}: must have at most {MAX_ARGS_ITEMS} items")
            if isinstance(item, Mapping):
                children = [(v, f"{where}.{k if isinstance(k, str) and k.isidentifier() else show(k)}") for k, v in item.items()]
            else:
                children = [(v, f"{where}[{i}]") for i, v in enumerate(item)]
        elif isinstance(item, bool):
            continue
        elif isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(f"{where}: Invalid value: {show(item)}: must be a finite number")
        elif isinstance(item, int) and not INT64[0] <= item <= INT64[1]:
            raise ConfigError(f"{where}: Invalid value: {show(item)}: must fit in a 64-bit integer")
        stack.extend(reversed(children))
