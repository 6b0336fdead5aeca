import pytest

from kubesched.api.quantity import QuantityError, parse_duration, resource_value, to_int, to_milli


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


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3Gi", "1GB", "--1", True])
def test_bad_quantities_are_refused(bad):
    with pytest.raises(QuantityError):
        to_int(bad)


@pytest.mark.parametrize(("raw", "seconds"), [("30s", 30), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), (7, 7.0)])
def test_durations(raw, seconds):
    assert parse_duration(raw) == pytest.approx(seconds)


def test_bad_duration():
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration("5 minutes")
