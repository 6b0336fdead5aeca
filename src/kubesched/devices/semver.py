"""Semantic versions as DRA's CEL environment reads them: parsing, normalizing and ordering with
the rules and error messages of github.com/blang/semver/v4 (which Kubernetes' semver CEL library
and DRA's version attributes use).

A version compares by major, minor, patch, then pre-release identifiers (a version without them
is greater; numeric identifiers are lower than alphanumeric ones); build metadata never counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.infra.gostrconv import quote as go_quote

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64_MAX = 2**64 - 1


class SemverError(ValueError):
    """A string that is not a semantic version; the message is blang/semver's."""


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(ch in allowed for ch in text)


def _leading_zero(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _uint64(text: str) -> int:
    """strconv.ParseUint(text, 10, 64) on a string of digits (or empty)."""
    if not text:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


@dataclass(frozen=True, slots=True)
class Version:
    """A parsed semantic version. `pre` holds pre-release identifiers, ints for numeric ones."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def compare(self, other: Version) -> int:
        """-1, 0 or 1, build metadata ignored."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if isinstance(a, int) != isinstance(b, int):
                return -1 if isinstance(a, int) else 1
            return 1 if a > b else -1  # type: ignore[operator]  # both ints or both strs
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def key(self) -> str:
        """A text equal for exactly the versions that compare equal (build metadata dropped)."""
        return str(Version(self.major, self.minor, self.patch, self.pre))


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if _only(text, _NUMBERS):
        if _leading_zero(text):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}")
        return _uint64(text)
    if _only(text, _ALPHANUM):
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {go_quote(text)}")


def parse(text: str) -> Version:
    """semver.Parse: strict semantic version 2.0.0."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    numbers = []
    for part, label in zip(parts[:2], ("major", "minor"), strict=True):
        if not _only(part, _NUMBERS):
            raise SemverError(f"Invalid character(s) found in {label} number {go_quote(part)}")
        if _leading_zero(part):
            raise SemverError(f"{label.capitalize()} number must not contain leading zeroes {go_quote(part)}")
        numbers.append(_uint64(part))
    rest = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    if "+" in rest:
        rest, meta = rest.split("+", 1)
        build = meta.split(".")
    if "-" in rest:
        rest, pre = rest.split("-", 1)
        prerelease = pre.split(".")
    if not _only(rest, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in patch number {go_quote(rest)}")
    if _leading_zero(rest):
        raise SemverError(f"Patch number must not contain leading zeroes {go_quote(rest)}")
    patch = _uint64(rest)
    identifiers = tuple(_prerelease(p) for p in prerelease)
    for item in build:
        if not item:
            raise SemverError("Build meta data is empty")
        if not _only(item, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(item)}")
    return Version(numbers[0], numbers[1], patch, identifiers, tuple(build))


def parse_normalized(text: str) -> Version:
    """semver(s, true): a leading "v" dropped, leading zeroes trimmed, missing minor and patch
    filled with zeroes, then parsed strictly."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return parse(".".join(parts))
