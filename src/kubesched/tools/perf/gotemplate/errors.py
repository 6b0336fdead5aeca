"""TemplateError, the one error a caller sees, and the exceptions raised inside the package while
executing: each is caught and becomes a TemplateError that says where (or, break and continue, the
range's control flow)."""

from __future__ import annotations


class TemplateError(ValueError):
    """A template that does not parse or does not execute. The message reads
    `<template>:<line>: <what is wrong>` (Go's words), or `<template>:<line>: at <command>: <what is
    wrong>` when executing; `template` and `line` hold the first two."""

    def __init__(self, message: str, template: str = "", line: int = 0) -> None:
        super().__init__(message)
        self.template = template
        self.line = line


class _ExecFailure(Exception):
    """An execution error without its location; the command that catches it adds that."""


class _Fail(Exception):
    """A builtin function's error: reported as Go reports it, `error calling <name>: ...`."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass
