"""An explanation (scheduler.explain's JSON) as rich tables for a terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

JSON = dict[str, Any]


def render(console: Console, data: JSON) -> None:
    """Prints the explanation. Everything that came from the cluster is printed as text, never
    read as markup (a pod or node name could contain brackets)."""
    head = Text()
    head.append(str(data.get("pod", "?")), style="bold")
    head.append(f"  profile {data.get('profile', '?')}  status ")
    status = str(data.get("status", "?"))
    head.append(status, style="green" if status == "scheduled" else "yellow")
    if data.get("node"):
        head.append(f" on {data['node']}")
    _line(console, head)
    for key, label in (("note", "note"), ("error", "error"), ("message", "a cycle now")):
        if data.get(key):
            _line(console, Text(f"{label}: {data[key]}"))
    record = data.get("record")
    if record and status not in ("scheduled", "binding") and record.get("message"):
        _line(console, Text(f"last attempt ({record.get('attempt')}): {record['message']}"))
    if record and record.get("placed_jointly_with"):
        _line(console, Text(f"placed on the node a joint plan chose for its burst of {record['placed_jointly_with']} pods "
                           "(JointPlacement), every Filter run there"))
    if data.get("devices"):
        _devices(console, data["devices"])
    if data.get("filter"):
        _filter(console, data["filter"], int(data.get("nodes_total") or 0))
    if data.get("preemption"):
        _preemption(console, data["preemption"])
    if data.get("scores"):
        _scores(console, data["scores"])
    for shadow in (record or {}).get("shadow") or []:
        _shadow(console, shadow)


def _line(console: Console, text: Text) -> None:
    """A line wrapped at the width of a terminal, and left whole in a pipe or a file."""
    console.print(text, soft_wrap=not console.is_terminal)


def _title(console: Console, title: str) -> None:
    """A table's title on a line of its own: a title inside the table would wrap at the table's
    width (40 columns for a narrow table), even in a file."""
    _line(console, Text(title, style="italic"))


def _shadow(console: Console, d: JSON) -> None:
    """What a shadow profile decided for the same pod on the same snapshot (scheduler/shadow.py)."""
    outcome = str(d.get("outcome", "")).replace("_", " ")
    line = f"shadow profile {d.get('profile')}: {outcome}"
    if d.get("node"):
        line += f", would choose {d['node']}"
    if d.get("gap") is not None:
        line += f" (it scores its choice {d['gap']} above the live node)"
    if d.get("message"):
        line += f": {d['message']}"
    _line(console, Text(line))


def _filter(console: Console, filtered: JSON, total: int) -> None:
    rejected = filtered.get("rejected") or []
    _line(console, Text(f"{filtered.get('feasible', 0)} of {total} nodes fit"))
    if rejected:
        _title(console, "Nodes rejected, by the first plugin that rejected them")
        table = Table()
        table.add_column("plugin")
        table.add_column("reason")
        table.add_column("nodes", justify="right")
        table.add_column("which")
        for group in rejected:
            names = list(group.get("nodes") or [])
            more = int(group.get("count", 0)) - len(names)
            shown = ", ".join(names) + (f" and {more} more" if more > 0 else "")
            table.add_row(Text(str(group.get("plugin"))), Text(str(group.get("reason"))), str(group.get("count")), Text(shown))
        console.print(table)
        for group in rejected:
            if group.get("detail"):
                _line(console, Text(f"{group.get('plugin')}: {group['detail']}"))
    nearest = filtered.get("nearest") or []
    if nearest:
        _title(console, "Nearest misses")
        table = Table()
        table.add_column("node")
        table.add_column("plugin")
        table.add_column("what is missing")
        for miss in nearest:
            for i, failed in enumerate(miss.get("failed") or []):
                table.add_row(
                    Text(str(miss.get("node")) if i == 0 else ""),
                    Text(str(failed.get("plugin"))),
                    Text(str(failed.get("detail") or failed.get("reason"))),
                )
        console.print(table)


def _devices(console: Console, claims: list[JSON]) -> None:
    """The devices a placed pod's claims hold (DynamicResources), one row per allocated device."""
    _title(console, "Devices it got, per claim and request")
    table = Table()
    for column in ("claim", "request", "device", "held"):
        table.add_column(column)
    for claim in claims:
        for device in claim.get("devices") or []:
            held = "whole"
            if device.get("share_id"):
                consumed = ", ".join(f"{name} {value}" for name, value in (device.get("consumed_capacity") or {}).items())
                held = f"share {device['share_id']}" + (f": {consumed}" if consumed else "")
            if device.get("admin_access"):
                held += " (admin access)"
            table.add_row(Text(str(claim.get("claim"))), Text(str(device.get("request"))),
                          Text(f"{device.get('driver')}/{device.get('pool')}/{device.get('device')}"), Text(held))
        if not claim.get("devices"):
            table.add_row(Text(str(claim.get("claim"))), "", Text("not allocated yet"), "")
    console.print(table)


def _preemption(console: Console, plan: JSON) -> None:
    if plan.get("possible"):
        victims = ", ".join(plan.get("victims") or []) or "no pods"
        _line(console, Text(f"preemption would help: on {plan.get('node')}, evicting {victims}"))
        violating = plan.get("violating_budgets") or []
        if violating:
            _line(console, Text(f"  evicting {', '.join(violating)} would violate a PodDisruptionBudget: "
                                "no candidate node spared the budgets' pods"))
    else:
        _line(console, Text(f"preemption would not help: {plan.get('message') or 'no candidate node'}"))


def _scores(console: Console, scores: JSON) -> None:
    nodes = scores.get("nodes") or []
    source = "the cycle that placed it" if scores.get("source") == "record" else "a dry run now"
    if not nodes:
        _line(console, Text(f"chosen: {scores.get('chosen')} ({scores.get('why', '')}; from {source})"))
        return
    weights = {p["name"]: p["weight"] for p in scores.get("plugins") or []}
    plugins = [p for p in weights if any(p in n.get("plugins", {}) for n in nodes)]
    _title(console, f"Scores from {source}: weighted (raw -> normalized x weight)")
    table = Table()
    table.add_column("plugin")
    for n in nodes:
        mark = " (chosen)" if n.get("node") == scores.get("chosen") else ""
        table.add_column(Text(f"{n.get('node')}{mark}"), justify="right")
    for p in plugins:
        cells = []
        for n in nodes:
            part = n.get("plugins", {}).get(p)
            cells.append("" if part is None else f"{part['weighted']} ({part['raw']} -> {part['normalized']} x {weights.get(p, 1)})")
        table.add_row(p, *cells)
    table.add_row(Text("total", style="bold"), *[Text(str(n.get("total")), style="bold") for n in nodes])
    console.print(table)
    for n in nodes:
        for p, part in (n.get("plugins") or {}).items():
            if part.get("why"):
                _line(console, Text(f"{p} on {n.get('node')}: {part['why']}"))
    margin = scores.get("margin")
    if margin is None:
        return
    if margin > 0:
        _line(console, Text(f"{scores.get('chosen')} won by {margin}; {scores.get('decided_by')} gave it the most of that lead"))
    else:
        _line(console, Text(f"{scores.get('chosen')} tied for the top score and was picked at random among the tied nodes"))
    if scores.get("why_sample"):
        _line(console, Text(str(scores["why_sample"])))
