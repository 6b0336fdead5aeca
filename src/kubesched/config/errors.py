"""The one error a configuration kube-scheduler would refuse gets, after the file it is about."""

from __future__ import annotations

# Longest message: a user's value is cut before this, but a path of many long keys could still grow.
MAX_MESSAGE = 1000


class ConfigError(ValueError):
    """A configuration kube-scheduler would refuse: one message naming the field path and the bad
    value.

    The message is always one line of bounded length: a key or value the user wrote may hold line
    breaks or control characters, which are shown escaped, as Go's %q shows them."""

    def __init__(self, message: str) -> None:
        if not message.isprintable():
            message = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in message)
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        super().__init__(message)

    def in_file(self, source: str) -> ConfigError:
        """The same error after the file it is about (the path as the user gave it), so that a
        user who gave several configurations knows which one is wrong."""
        return ConfigError(f"{source}: {self}")
