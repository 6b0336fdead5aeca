"""Manifest files as files (backends.sim.manifestfiles), through the manifest loader: directories,
Lists, YAML limits and empty files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_paths
from unit.backends.manifestkit import POD as POD_TEMPLATE
from unit.backends.manifestkit import error_of
from unit.backends.manifestkit import write as write_manifest

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


# --- directories and Lists -----------------------------------------------------------------------


def test_directories_are_read_recursively_in_sorted_order(tmp_path: Path) -> None:
    write_manifest(tmp_path, POD_TEMPLATE.format(name="b"), "d/2-b.yaml")
    write_manifest(tmp_path, POD_TEMPLATE.format(name="a"), "d/1-a.yml")
    write_manifest(tmp_path, POD_TEMPLATE.format(name="c"), "d/sub/3-c.yaml")
    write_manifest(tmp_path, "not: a manifest", "d/notes.txt")
    write_manifest(tmp_path, "on: push\njobs: {}", "d/.github/workflows/ci.yaml")
    write_manifest(tmp_path, "not: a manifest", "d/.hidden.yaml")
    pod_json = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    (tmp_path / "d" / "0-j.json").write_text(json.dumps(pod_json))
    cluster = load_paths([tmp_path / "d"])
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["j", "a", "b", "c"]
    assert cluster.name == "d"


def test_kind_list_in_yaml_and_json(tmp_path: Path) -> None:
    items = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": {"cpu": "2"}}}
        for i in range(3)
    ]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    write_manifest(tmp_path, """
        apiVersion: v1
        kind: PodList
        items:
          - apiVersion: v1
            kind: Pod
            metadata: {name: p1}
            spec: {containers: [{name: c, image: pause}]}
          - apiVersion: v1
            kind: Pod
            metadata: {name: p2}
            spec: {containers: [{name: c, image: pause}]}
    """, "pods.yaml")
    cluster = load_paths([tmp_path / "nodes.json", tmp_path / "pods.yaml"])
    assert [n.metadata.name for n in cluster.nodes] == ["n0", "n1", "n2"]
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["p1", "p2"]


def test_list_item_errors_name_the_item(tmp_path: Path) -> None:
    message = error_of(tmp_path, """
        apiVersion: v1
        kind: List
        items:
          - {apiVersion: v1, kind: Pod, metadata: {name: ok}, spec: {containers: [{name: c, image: pause}]}}
          - {apiVersion: v1, kind: Pod, metadata: {}, spec: {containers: [{name: c, image: pause}]}}
    """)
    assert message.startswith(f"{tmp_path / 'cluster.yaml'}: document 1, item 2: Pod default/")
    assert "metadata.name: Required value" in message


def test_missing_path_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file or directory"):
        load_paths([tmp_path / "nope.yaml"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ManifestError, match="no manifest files"):
        load_paths([tmp_path / "empty"])
    message = error_of(tmp_path, POD_TEMPLATE.format(name="a") + "---\nkind: Pod\nmetadata: {name: [unclosed\n")
    assert "cluster.yaml: document 2: line" in message and "invalid YAML" in message
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"kind": "Pod",}')
    with pytest.raises(ManifestError, match=r"bad.json: line 1 column \d+: invalid JSON"):
        load_paths([bad_json])


def test_document_that_is_not_an_object(tmp_path: Path) -> None:
    message = error_of(tmp_path, "- just\n- a list\n")
    assert "cluster.yaml: document 1: expected a Kubernetes object" in message
    assert "kind: Required value" in error_of(tmp_path, "metadata: {name: x}\n")


def test_with_keep_going_a_file_that_cannot_be_parsed_is_refused_and_the_rest_loads(tmp_path: Path) -> None:
    """`simulate` on a directory: a file of invalid YAML is one refused object, named, as a schema
    error is; what came before the error in that file stays (kubectl applies it), the other files load."""
    write(tmp_path, "a.yaml", POD)
    broken = write(tmp_path, "b.yaml", POD.replace("name: p", "name: q") + "---\nkind: Pod\nmetadata: {name: [unclosed\n")
    not_object = write(tmp_path, "c.yaml", "- just\n- a list\n---\n" + POD.replace("name: p", "name: r"))
    empty = write(tmp_path, "d.yaml", "# nothing\n")
    bad_json = write(tmp_path, "e.json", '{"kind": "Pod",}')
    write(tmp_path, "f.yaml", POD.replace("name: p", "name: s"))
    cluster = load_paths([tmp_path], keep_going=True)
    assert sorted(sp.pod.metadata.name for sp in cluster.pods) == ["p", "q", "r", "s"]
    assert len(cluster.errors) == 4
    yaml_error, shape_error, empty_error, json_error = cluster.errors
    assert yaml_error.startswith(f"{broken}: document 2: line ") and "invalid YAML" in yaml_error
    assert shape_error.startswith(f"{not_object}: document 1: expected a Kubernetes object")
    assert empty_error.startswith(f"{empty}: no Kubernetes objects in this file")
    assert json_error.startswith(f"{bad_json}: line 1 column ") and "invalid JSON" in json_error
    # Without keep_going the first stays fatal, as before.
    with pytest.raises(ManifestError, match="invalid YAML"):
        load_paths([tmp_path])
