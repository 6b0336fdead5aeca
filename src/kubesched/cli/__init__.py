"""Command line: kubesched run | simulate | bench | explain | config validate.

One module per command (simulate, bench, run, explaining, configcmd), registered on the Typer
application of `app` in the order `kubesched --help` lists them; `common` holds what they share.
`kubesched.cli:main` is the entry point, and `python -m kubesched.cli` runs it too.
"""

# isort: off
from kubesched.cli import simulate, bench, run, explaining, configcmd  # noqa: F401  (each registers its command)
# isort: on
from kubesched.cli.app import app, main
from kubesched.cli.common import MAX_MESSAGE_CHARS, MAX_TOKEN_CHARS, clip

__all__ = ["MAX_MESSAGE_CHARS", "MAX_TOKEN_CHARS", "app", "clip", "main"]
