"""What every command shares: the consoles, one-line failures with exit code 2, Ctrl-C, output paths,
feature gates, configurations and pod references."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from kubesched.config.types import SchedulerConfig
from kubesched.scheduler.configload import load_config

# Tables and lists written to a pipe or a file are not cut to a terminal's 80 columns (plugin
# names, configuration names, messages): they are as wide as this, unless COLUMNS says otherwise.
WIDTH_NOT_A_TERMINAL = 240


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if os.environ.get("COLUMNS") or os.environ.get("TERMINAL_WIDTH") or stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=WIDTH_NOT_A_TERMINAL)


console = _console()
err = _console(stderr=True)


# Longest run of non-blank characters echoed in a message, and longest message: a 10 MB scalar in
# a manifest must not come back whole on the terminal.
MAX_TOKEN_CHARS = 200
MAX_MESSAGE_CHARS = 4000
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

_LONG_TOKEN = re.compile(rf"\S{{{MAX_TOKEN_CHARS + 1},}}")


def clip(message: str) -> str:
    """The message with overlong words and an overlong whole cut, saying how much was left out."""

    def cut(match: re.Match[str]) -> str:
        text = match.group(0)
        return f"{text[:MAX_TOKEN_CHARS // 2]}...({len(text) - MAX_TOKEN_CHARS // 2} more characters)"

    message = _LONG_TOKEN.sub(cut, message)
    if len(message) > MAX_MESSAGE_CHARS:
        message = f"{message[:MAX_MESSAGE_CHARS]}...({len(message) - MAX_MESSAGE_CHARS} more characters)"
    return message


def print_error(message: str) -> None:
    """`error: <message>` on stderr, cut by `clip`, the message never read as markup."""
    line = Text("error: ", style="bold red")
    line.append(clip(message))
    err.print(line, highlight=False, soft_wrap=True)


def say(target: Console, text: str | Text) -> None:
    """A line of text, never read as markup: wrapped at the width of a terminal, left whole when
    written to a pipe or a file, where the reader's pager or editor wraps it."""
    target.print(text if isinstance(text, Text) else Text(text), highlight=False, soft_wrap=not target.is_terminal)


def warn(message: str) -> None:
    """`warning: <message>` on stderr, cut by `clip`."""
    line = Text("warning: ", style="yellow")
    line.append(clip(message))
    say(err, line)


def fail(message: str) -> typer.Exit:
    """User mistakes end with one line and exit code 2, never a traceback."""
    print_error(message)
    return typer.Exit(EXIT_USAGE)


P = ParamSpec("P")
R = TypeVar("R")


def interruptible(command: Callable[P, R]) -> Callable[P, R]:
    """Ctrl-C ends the command with one short line and exit code 130, whatever it was doing."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            err.print("interrupted", highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper


def raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def check_writable(path: Path | None, option: str) -> None:
    """Refuse an output path that cannot be written before the run, not after it."""
    if path is None:
        return
    if path.is_dir():
        raise fail(f"{option} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise fail(f"{option} {path}: no such directory {parent}")
    if (path.exists() and not os.access(path, os.W_OK)) or (not path.exists() and not os.access(parent, os.W_OK)):
        raise fail(f"{option} {path}: permission denied")


def write_json(path: Path, data: Any, option: str) -> None:
    try:
        path.write_text(json.dumps(data, indent=2))
    except OSError as exc:
        raise fail(f"{option} {path}: cannot write: {exc.strerror}") from None


def set_feature_gates(spec: str, *, over: bool = False) -> None:
    """--feature-gates (or a scenario's featureGates over them): process-wide, as kube's are."""
    from kubesched.infra import features

    try:
        features.set_gates(features.parse(spec, features.current() if over else None))
    except features.FeatureGateError as exc:
        raise fail(f"--feature-gates: {exc}") from None


def load_configs(paths: list[Path] | None) -> list[tuple[str, SchedulerConfig]]:
    if not paths:
        return [("default", load_config(None))]
    return [(p.stem, load_config(p)) for p in paths]




def tracing_config(path: Path | None) -> Any:
    from kubesched.observe.tracing import TracingConfigError, load_tracing_config

    if path is None:
        return None
    try:
        return load_tracing_config(path)
    except TracingConfigError as exc:
        raise fail(f"--tracing-config-file {exc}") from None



def pod_ref(ref: str, namespace: str) -> tuple[str, str]:
    """`namespace/name`, or `name` in --namespace; refused unless both are DNS names."""
    from kubesched.api.validation.meta import dns1123_label, dns1123_subdomain

    ns, sep, name = ref.partition("/")
    if not sep:
        ns, name = namespace, ref
    for problems, what in ((dns1123_label(ns), f"namespace {ns!r}"), (dns1123_subdomain(name), f"name {name!r}")):
        if problems:
            raise fail(f"pod {ref!r}: {what}: {problems[0]}")
    return ns, name

