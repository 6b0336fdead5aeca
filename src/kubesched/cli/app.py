"""The Typer application the command modules register on, `--version`, and the entry point."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from importlib import metadata
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from kubesched.cli.common import raise_keyboard_interrupt

# Help written to a pipe or a file is as wide as this, not the 80 columns rich assumes without a
# terminal (it cut option help short: "KubeSchedulerConfigurati…"); COLUMNS or TERMINAL_WIDTH win.
HELP_WIDTH_NOT_A_TERMINAL = 120


def _plain_flags(params: list[Any]) -> list[Any]:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    return params


class PlainFlagsCommand(TyperCommand):
    """Shows flags as flags: typer prints `<bool>` beside `--quiet` or `--help`, which reads as if
    they took a value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))


class PlainFlagsGroup(TyperGroup):
    """PlainFlagsCommand's help for a group (the application, `config`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))


def kubesched_version() -> str:
    """kubesched's version as installed (the package metadata: pyproject's version)."""
    try:
        return metadata.version("kubesched")
    except metadata.PackageNotFoundError:
        return "unknown (not installed as a package)"


def _print_version(value: bool) -> None:
    if not value:
        return
    from kubesched.tools.perf.source import KUBE_VERSION

    typer.echo(f"kubesched {kubesched_version()} (matches kube-scheduler {KUBE_VERSION})")
    raise typer.Exit()


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=PlainFlagsGroup, rich_markup_mode="markdown",
                  help="kubesched: a Kubernetes pod scheduler in Python.")
config_app = typer.Typer(no_args_is_help=True, cls=PlainFlagsGroup, rich_markup_mode="markdown",
                         help="Work with KubeSchedulerConfiguration files.")
app.add_typer(config_app, name="config")


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print kubesched's version and the kube-scheduler release it matches, then exit.")] = False,
) -> None:
    pass


def _widen_help() -> None:
    """Help as wide as the terminal, COLUMNS or TERMINAL_WIDTH if set, else HELP_WIDTH_NOT_A_TERMINAL."""
    if os.environ.get("TERMINAL_WIDTH") or os.environ.get("COLUMNS") or sys.stdout.isatty():
        return
    import typer.rich_utils  # what draws help; imported here, not on every command's start

    typer.rich_utils.MAX_WIDTH = HELP_WIDTH_NOT_A_TERMINAL


def main() -> None:
    # asyncio.run replaces Python's default SIGINT handler with one that first only cancels the
    # main task, which a busy simulation may not notice for a long time; a handler of our own is
    # left alone, so Ctrl-C raises KeyboardInterrupt wherever the run is (see `interruptible`).
    signal.signal(signal.SIGINT, raise_keyboard_interrupt)
    # numpy's floating-point warnings are not for users; the fuzz tests turn them into errors.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"numpy(\..*)?$")
    _widen_help()
    app(prog_name="kubesched")
