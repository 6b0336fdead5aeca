"""The Typer application the command modules register on, and the entry point."""

from __future__ import annotations

import signal
import warnings

import typer

from kubesched.cli.common import raise_keyboard_interrupt

app = typer.Typer(add_completion=False, no_args_is_help=True, help="kubesched: a Kubernetes pod scheduler in Python.")
config_app = typer.Typer(no_args_is_help=True, help="Work with KubeSchedulerConfiguration files.")
app.add_typer(config_app, name="config")


def main() -> None:
    # asyncio.run replaces Python's default SIGINT handler with one that first only cancels the
    # main task, which a busy simulation may not notice for a long time; a handler of our own is
    # left alone, so Ctrl-C raises KeyboardInterrupt wherever the run is (see `interruptible`).
    signal.signal(signal.SIGINT, raise_keyboard_interrupt)
    # numpy's floating-point warnings are not for users; the fuzz tests turn them into errors.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"numpy(\..*)?$")
    app()

