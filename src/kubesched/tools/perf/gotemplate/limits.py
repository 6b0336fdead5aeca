"""How far one template may go: how deep it nests, and the ranges, range iterations and output of
one execution. Going past one is a TemplateError."""

from __future__ import annotations

from typing import Final

MAX_RANGE: Final = 10_000_000
"""The largest int a range may count to."""
MAX_ITERATIONS: Final = 10_000_000
"""Range iterations in one execution, all ranges together."""
MAX_OUTPUT: Final = 64 * 1024 * 1024
"""Characters of output of one execution."""
MAX_DEPTH: Final = 100
"""Nesting of control structures, and of parentheses, in a template."""
