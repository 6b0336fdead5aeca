"""blang/semver's parsing, normalizing, ordering and messages (as DRA's CEL environment uses them)."""

from __future__ import annotations

import itertools

import pytest

from kubesched.devices.semver import SemverError, Version, go_quote, parse, parse_normalized


def test_parse_and_print() -> None:
    v = parse("1.2.3-rc.1+build.5")
    assert v == Version(1, 2, 3, ("rc", 1), ("build", "5"))
    assert str(v) == "1.2.3-rc.1+build.5" and v.key() == "1.2.3-rc.1"


@pytest.mark.parametrize(("text", "message"), [
    ("", "Version string empty"),
    ("1.2", "No Major.Minor.Patch elements found"),
    ("x.1.2", 'Invalid character(s) found in major number "x"'),
    ("01.2.3", 'Major number must not contain leading zeroes "01"'),
    ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
    ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
    ("1.2.x", 'Invalid character(s) found in patch number "x"'),
    ("1.2.3-", "Prerelease is empty"),
    ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
    ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
    ("1.2.3+", "Build meta data is empty"),
    ("1.2.3+a_b", 'Invalid character(s) found in build meta data "a_b"'),
    (".1.2", 'strconv.ParseUint: parsing "": invalid syntax'),
    ("1.2.99999999999999999999", 'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SemverError) as exc:
        parse(text)
    assert str(exc.value) == message


def test_order() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
               "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
    for lower, higher in itertools.pairwise(ordered):
        assert parse(lower).compare(parse(higher)) == -1 and parse(higher).compare(parse(lower)) == 1
    assert parse("1.0.0+a").compare(parse("1.0.0+b")) == 0


def test_normalized() -> None:
    assert parse_normalized("v01.002") == Version(1, 2, 0)
    assert parse_normalized("1") == Version(1, 0, 0)
    with pytest.raises(SemverError, match=r"^short version cannot contain PreRelease/Build meta data$"):
        parse_normalized("1.2-rc")


def test_go_quote() -> None:
    assert go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'
