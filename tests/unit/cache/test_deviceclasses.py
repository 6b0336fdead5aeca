"""cache.deviceclasses: which DeviceClass maps a resource name to DRA, as classes come and go."""

from __future__ import annotations

from kubesched.api.dra import DeviceClass, DeviceClassSpec
from kubesched.api.objects import ObjectMeta
from kubesched.cache.deviceclasses import DeviceClassIndex

GPU = "example.com/gpu"


def device_class(name: str, extended: str | None = None, created: str | None = None) -> DeviceClass:
    return DeviceClass(metadata=ObjectMeta(name=name, creation_timestamp=created),
                       spec=DeviceClassSpec(extended_resource_name=extended))


def test_a_class_maps_its_implicit_name_and_its_extended_resource_until_deleted() -> None:
    index = DeviceClassIndex()
    assert index.set(device_class("gpu", GPU)) is None
    assert index.class_for(GPU) == "gpu"
    assert index.class_for("deviceclass.resource.kubernetes.io/gpu") == "gpu"
    assert index.class_for("example.com/other") is None
    removed = index.remove("gpu")
    assert removed is not None and removed.metadata.name == "gpu"
    assert index.class_for(GPU) is None and len(index) == 0
    assert index.remove("gpu") is None


def test_an_update_that_drops_the_extended_resource_unmaps_it() -> None:
    index = DeviceClassIndex()
    index.set(device_class("gpu", GPU))
    old = index.set(device_class("gpu"))
    assert old is not None and old.spec.extended_resource_name == GPU
    assert index.class_for(GPU) is None
    assert index.class_for("deviceclass.resource.kubernetes.io/gpu") == "gpu"


def test_of_two_classes_naming_one_resource_the_newest_answers_then_the_lower_name() -> None:
    index = DeviceClassIndex()
    index.set(device_class("old", GPU, "2026-01-01T00:00:00Z"))
    index.set(device_class("new", GPU, "2026-02-01T00:00:00Z"))
    assert index.class_for(GPU) == "new"
    index.set(device_class("also-new", GPU, "2026-02-01T00:00:00Z"))
    assert index.class_for(GPU) == "also-new"
    index.remove("also-new")
    index.remove("new")
    assert index.class_for(GPU) == "old"  # still mapped while one class names it
