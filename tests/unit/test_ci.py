"""tests/ci.py: one reading of CI=... for unit and integration tests (they used to disagree on 'True')."""

from __future__ import annotations

import pytest

from ci import in_ci, missing_outcome


@pytest.mark.parametrize(("value", "expected"),
                         [("true", True), ("True", True), (" TRUE\n", True), ("false", False), ("1", False), ("", False)])
def test_in_ci_reads_true_in_any_case(value: str, expected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_missing_outcome_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "True")
    with pytest.raises(pytest.fail.Exception, match="CI=true and no source"):
        missing_outcome("no source")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no source"):
        missing_outcome("no source")
