"""Manifest files as files: YAML limits and empty files, through the manifest loader."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubesched.backends.sim.manifests import ManifestError, load_paths

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: pause}]}\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n---\n", "null\n"])
def test_an_empty_manifest_file_is_an_error(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "empty.yaml", text)
    with pytest.raises(ManifestError, match="no Kubernetes objects in this file") as info:
        load_paths([path])
    assert str(info.value).startswith(f"{path}: ")


def test_an_empty_file_beside_good_ones_is_still_named(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", POD)
    empty = write(tmp_path, "b.yaml", "")
    with pytest.raises(ManifestError, match=f"{empty}: no Kubernetes objects"):
        load_paths([tmp_path])


def test_duplicate_keys_in_a_manifest_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", POD + "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  name: m\n")
    with pytest.raises(ManifestError) as info:
        load_paths([path])
    assert str(info.value) == f"{path}: document 2: line 10 column 3: invalid YAML: duplicate key 'name'"


def test_duplicate_keys_in_json_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.json", '{"apiVersion": "v1", "kind": "Pod", "kind": "Node"}')
    with pytest.raises(ManifestError, match=r"dup.json: invalid JSON: duplicate key 'kind'"):
        load_paths([path])


def test_an_alias_bomb_in_a_deployment_template_is_refused_quickly(tmp_path: Path) -> None:
    anchors = ["l0: &l0 [" + ", ".join(['"lol"'] * 9) + "]"]
    anchors += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n      labels: {app: web}\n"
        "      annotations:\n" + "".join(f"        {a}\n" for a in anchors)
        + "    spec: {containers: [{name: c, image: pause}]}\n"
    )
    path = write(tmp_path, "bomb.yaml", text)
    start = time.monotonic()
    with pytest.raises(ManifestError, match="aliases expand this document by"):
        load_paths([path])
    assert time.monotonic() - start < 5


def _deployment(name: str, replicas: int) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "pause"}]}}}}


def test_a_huge_count_is_refused_before_any_copy_is_made() -> None:
    from kubesched.backends.sim.limits import MAX_COUNT_PODS
    from kubesched.backends.sim.manifests import load_objects

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"sim.kubesched.io/count": "50000000"}},
           "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    start = time.monotonic()
    cluster = load_objects([pod], keep_going=True)
    assert time.monotonic() - start < 2
    assert cluster.pods == []
    (message,) = cluster.errors
    assert message.endswith(f"metadata.annotations[sim.kubesched.io/count]: 50000000 pods is over the simulator's limit "
                            f"of {MAX_COUNT_PODS} pods in one run")


def test_workloads_past_the_run_limit_are_refused_and_the_rest_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched.backends.sim import limits
    from kubesched.backends.sim.manifests import load_objects

    monkeypatch.setattr(limits, "MAX_PODS", 100)  # the same rule as at 1,000,000, at a test's size
    cluster = load_objects([_deployment("a", 95), _deployment("b", 10), _deployment("c", 5)], keep_going=True)
    assert len(cluster.pods) == 100  # a and c; b is refused before its pods exist
    (message,) = cluster.errors
    assert "Deployment default/b" in message and "105 pods in one run is over the simulator's limit of 100 pods" in message
