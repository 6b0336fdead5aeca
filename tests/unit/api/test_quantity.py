from decimal import Decimal

import pytest

from kubesched.api import quantity
from kubesched.api.quantity import (
    FORMAT_ERROR,
    SUFFIX_ERROR,
    QuantityError,
    parse,
    parse_quantity,
    resource_value,
    to_int,
    to_milli,
)


@pytest.mark.parametrize(
    ("raw", "milli"),
    [("100m", 100), ("1", 1000), ("1.5", 1500), (2, 2000), ("0.1", 100), ("1e3", 1_000_000), ("250u", 1)],
)
def test_cpu_in_millicores_rounds_up(raw, milli):
    assert to_milli(raw) == milli


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1Ki", 1024), ("1Mi", 2**20), ("32Gi", 32 * 2**30), ("1k", 1000), ("1M", 10**6), ("500Mi", 500 * 2**20), ("0.5", 1)],
)
def test_base_units(raw, value):
    assert to_int(raw) == value


def test_resource_value_uses_milli_only_for_cpu():
    assert resource_value("cpu", "2") == 2000
    assert resource_value("memory", "2") == 2
    assert resource_value("nvidia.com/gpu", 1) == 1


def test_resource_values_parsed_once_stay_right_and_bounded(monkeypatch):
    """Parsed strings are kept (pods repeat them): the same answers, cpu apart from the rest, a
    refused string refused every time, and the store emptied when full."""
    monkeypatch.setattr(quantity, "_PARSED", {})
    monkeypatch.setattr(quantity, "PARSED_LIMIT", 3)
    for _ in range(2):
        assert resource_value("cpu", "3") == 3000 and resource_value("memory", "3") == 3
        with pytest.raises(QuantityError):
            resource_value("memory", "3GB")
    assert len(quantity._PARSED) == 2
    resource_value("memory", "1Ki")
    resource_value("memory", "2Ki")
    assert len(quantity._PARSED) <= 3
    assert resource_value("cpu", "3") == 3000


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3Gi", "1GB", "--1", True])
def test_bad_quantities_are_refused(bad):
    with pytest.raises(QuantityError):
        to_int(bad)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [("1000m", "1"), ("1.5", "1500m"), ("0.5Gi", "512Mi"), ("2048Mi", "2Gi"), ("1536Mi", "1536Mi"), ("1e3", "1e3"),
     ("1E3", "1e3"), ("100Ki", "100Ki"), ("1000Mi", "1000Mi"), ("500", "500"), ("0", "0"), ("-2", "-2"), (".5", "500m"),
     ("1Ki", "1Ki"), ("1023Ki", "1023Ki"), ("0.5Ki", "512"), ("12e6", "12e6"), ("1n", "1n"), ("0.1n", "1n")],
)
def test_canonical_form_as_kube_prints_it(raw, canonical):
    assert parse(raw).canonical() == canonical


def test_huge_values_are_refused_not_overflowed():
    # kube stores these (arbitrary precision); the scheduler's int64 cannot hold them.
    for raw in ("1e30", "1e1000000", 99999999999999999999999, 1e30, "1E"):
        with pytest.raises(QuantityError, match="must be less than or equal to 9223372036854775807"):
            to_int(raw) if raw != "1E" else to_milli(raw)
    assert to_int("9223372036854775807") == 2**63 - 1
    with pytest.raises(QuantityError):
        to_milli("9223372036854775807")
    # Binary quantities are capped at 2^63-1 by ParseQuantity itself.
    assert to_int("16Ei") == 2**63 - 1 and to_int("1e50Ki".replace("e50", "")) == 1024
    assert to_milli("1e-1000000") == 1  # anything above zero is at least a nano, rounded up


def test_suffix_errors_and_no_decimal_context():
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix") as info:
        parse("1Ki2")
    assert info.value.reason == "unable to parse quantity's suffix"
    with pytest.raises(QuantityError, match="quantities must match"):
        parse("1e3k")
    # Exact: 40 significant digits survive (a default Decimal context keeps 28).
    assert parse_quantity("1234567890123456789.123456789") == Decimal("1234567890123456789.123456789")


def test_quantity_errors_do_not_echo_huge_values():
    with pytest.raises(QuantityError) as info:
        parse("x" * 1_000_000)
    assert len(str(info.value)) < 300 and "(999900 more)" in str(info.value)


@pytest.mark.parametrize("text", ["G", "Ki", "m", "-", "+", ".", "-G", ".G", "e3", "E"])
def test_a_suffix_without_digits_is_zero_as_parse_quantity_reads_it(text: str) -> None:
    # kube-apiserver 1.34 stores these as 0, whatever its error message's regular expression says.
    assert parse(text).nanos == 0


@pytest.mark.parametrize(("text", "reason"), [("", FORMAT_ERROR), ("  ", FORMAT_ERROR), ("e", SUFFIX_ERROR), ("Gi5", SUFFIX_ERROR),
                                              ("k1", SUFFIX_ERROR), ("i", SUFFIX_ERROR)])
def test_without_digits_the_suffix_must_still_parse(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse(text)
    assert reason in str(info.value)
