"""The estimated cost of a device selector, for the API server's check against COST_LIMIT: the
estimator of infra/celcost.py with the largest device a ResourceSlice may hold (32 attributes and
capacities, domains of 63 characters, values of 64)."""

from __future__ import annotations

from kubesched.devices.celenv import ATTRIBUTE_VALUE_MAX_LENGTH, MAX_ATTRIBUTES_AND_CAPACITIES
from kubesched.infra import celcost
from kubesched.infra.celtree import Checked

DEVICE_SIZES = celcost.Sizes(
    lambda _name: MAX_ATTRIBUTES_AND_CAPACITIES, ATTRIBUTE_VALUE_MAX_LENGTH, lambda _name: MAX_ATTRIBUTES_AND_CAPACITIES,
)


def estimate_cost(checked: Checked) -> int:
    """The bound of one evaluation on the largest device."""
    return celcost.estimate(checked, DEVICE_SIZES)
