"""Decoding Prometheus's instant-query answers: every bad answer is a PrometheusError naming it."""

from __future__ import annotations

import json

import pytest

from kubesched.metrics.prometheus import PrometheusError, decode_answer


def answer(result: object, result_type: str = "vector", status: str = "success") -> bytes:
    return json.dumps({"status": status, "data": {"resultType": result_type, "result": result}}).encode()


def test_vector_samples() -> None:
    body = answer([
        {"metric": {"instance": "n1:9100"}, "value": [1700000000.5, "0.25"]},
        {"metric": {"instance": "n2:9100"}, "value": [1700000000.5, "NaN"]},
        {"metric": {"instance": "n3:9100"}, "value": [1700000000.5, "+Inf"]},
    ])
    samples = decode_answer(body, "q")
    assert [(s.labels["instance"], s.value, s.timestamp) for s in samples] == [("n1:9100", 0.25, 1700000000.5)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>proxy error</html>", "is not a Prometheus API response"),
        (json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(), "bad_data: parse error"),
        (answer([], "matrix"), "returned a matrix, not an instant vector"),
        (answer([{"metric": {}, "value": [1, "abc"]}]), "non-numeric value 'abc'"),
        (answer([{"metric": "x"}]), "malformed vector"),
        (json.dumps({"status": "success"}).encode(), "has no data"),
    ],
)
def test_garbage_is_refused_with_a_reason(body: bytes, message: str) -> None:
    with pytest.raises(PrometheusError, match=message):
        decode_answer(body, "up")
