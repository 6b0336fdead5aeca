"""The feasible nodes and their final scores, one log line per scored cycle, as kube-scheduler
logs "Calculated node's final score for pod" at -v=10 (schedule_one.go prioritizeNodes).

Off by default: the line is built only when the `kubesched.decisions` logger is enabled for
DEBUG (`kubesched run --log-level info,kubesched.decisions=debug`, or `--log-level debug`).
Like kube, a cycle logs nothing when it does not score: no node fits, only one does (it is taken
as is), or the pod goes back to its nominated node.

    final scores pod=default/web-1 feasible=2 node-a=445 node-b=463
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from kubesched.cache.nodetable import NodeTable

LOGGER_NAME = "kubesched.decisions"
log = logging.getLogger(LOGGER_NAME)

_PREFIX = "final scores pod="
_LINE = re.compile(r"final scores pod=(\S+) feasible=(\d+)((?: [^\s=]+=-?\d+)*)$", re.MULTILINE)


def format_final_scores(pod: str, names: list[str], totals: np.ndarray) -> str:
    """`final scores pod=<ns/name> feasible=<n> <node>=<score> ...`, nodes in the order scored."""
    pairs = " ".join(f"{name}={score}" for name, score in zip(names, totals.tolist(), strict=True))
    return f"{_PREFIX}{pod} feasible={len(names)}{' ' + pairs if pairs else ''}"


def log_final_scores(pod: str, table: NodeTable, rows: np.ndarray, totals: np.ndarray) -> None:
    """Logs the scored (feasible) rows' final, weighted and summed, scores. Callers check
    `log.isEnabledFor(logging.DEBUG)` first, so that a disabled logger costs nothing."""
    log.debug("%s", format_final_scores(pod, [table.name_of(int(r)) for r in rows.tolist()], totals))


def parse_final_scores(text: str) -> list[tuple[str, dict[str, int]]]:
    """Every line of `text` written by log_final_scores (any log prefix), in order: (pod, scores)."""
    out = []
    for m in _LINE.finditer(text):
        scores = {name: int(score) for name, score in (pair.split("=") for pair in m.group(3).split())}
        if len(scores) != int(m.group(2)):
            raise ValueError(f"malformed final scores line: {m.group(0)!r}")
        out.append((m.group(1), scores))
    return out
