"""Plugins a user might write, loaded by tests as `unit.sample_plugins:Class`."""

from __future__ import annotations

from pydantic import BaseModel

from kubesched.framework.interface import NodeFilterPlugin, NodeScorePlugin, PermitPlugin, Plugin, ReservePlugin
from kubesched.framework.status import Code, Status


class EvenOnlyArgs(BaseModel):
    suffixes: list[str] = ["0", "2", "4", "6", "8"]


class EvenOnly(Plugin, NodeFilterPlugin):
    """Per-node filter: only nodes whose name ends in an even digit."""

    name = "EvenOnly"
    Args = EvenOnlyArgs

    def filter_node(self, state, pi, node):
        if node.name[-1] in self.args.suffixes:
            return None
        return Status.unschedulable("node(s) had an odd name")


class PreferHighest(Plugin, NodeScorePlugin):
    """Per-node score: the node name's last digit, so n8 beats n6."""

    name = "PreferHighest"

    def score_node(self, state, pi, node):
        return int(node.name[-1]) * 10


class HoldAtPermit(Plugin, PermitPlugin, ReservePlugin):
    """Waits at Permit; pods labelled allow=yes are allowed right away by a later hook."""

    name = "HoldAtPermit"
    reserved: list[str] = []
    unreserved: list[str] = []

    def reserve(self, state, pi, node):
        HoldAtPermit.reserved.append(pi.key)
        if pi.labels.get("reserve") == "fail":
            return Status(Code.UNSCHEDULABLE, ("reserve refused",))
        return None

    def unreserve(self, state, pi, node):
        HoldAtPermit.unreserved.append(pi.key)

    def permit(self, state, pi, node):
        if pi.labels.get("permit") == "deny":
            return Status(Code.UNSCHEDULABLE, ("denied at permit",)), 0.0
        if pi.labels.get("permit") == "wait":
            return Status(Code.WAIT), 30.0
        return None, 0.0


class Closing(Plugin, NodeScorePlugin):
    """Scores every node alike, and notes when a reload's retirement closes it."""

    name = "Closing"
    closed: list[int] = []

    def score_node(self, state, pi, node):
        return 0

    def close(self):
        Closing.closed.append(id(self))
