"""`kubesched config validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kubesched.cli.app import PlainFlagsCommand, config_app
from kubesched.cli.common import console, fail, interruptible, set_feature_gates
from kubesched.config.errors import ConfigError
from kubesched.scheduler.configload import load_config


@config_app.command("validate", cls=PlainFlagsCommand)
@interruptible
def config_validate(
    path: Annotated[Path, typer.Argument(help="KubeSchedulerConfiguration YAML file.")],
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
) -> None:
    """Check a configuration as the scheduler would read it; exit 2 with the reason if it is wrong."""
    set_feature_gates(feature_gates)
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for profile in cfg.profiles:
        shadow = cfg.kubesched.shadow(profile.scheduler_name)
        note = f" (shadow of {shadow.shadow_of}, {shadow.sampling_percentage:g}% of its cycles)" if shadow else ""
        console.print(f"[green]ok[/] profile [bold]{profile.scheduler_name}[/]{note}", highlight=False)
        for point, refs in profile.plugins.items():
            if refs:
                names = ", ".join(f"{r.name}({r.weight})" if point == "score" else r.name for r in refs)
                # One line per point, however long (kube's default filter list passes 240 columns).
                console.print(f"  {point}: {names}", highlight=False, soft_wrap=True)

