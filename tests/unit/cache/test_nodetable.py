import numpy as np

from builders import info, node, pod
from kubesched.cache.nodetable import ABSENT, NO_TAINT, NodeTable


def test_rows_are_reused_after_delete_and_columns_grow():
    t = NodeTable(capacity=2)
    for i in range(5):
        t.upsert_node(node(f"n{i}"))
    assert t.capacity >= 5 and len(t) == 5
    row = t.remove_node("n2")
    assert not t.present[row]
    assert t.upsert_node(node("n9")) == row
    assert t.name_of(row) == "n9"


def test_allocatable_and_requests_per_resource():
    t = NodeTable()
    r = t.upsert_node(node("a", cpu="2", memory="4Gi", extra={"nvidia.com/gpu": 4}))
    gpu = t.resource_index["nvidia.com/gpu"]
    assert t.allocatable[r, gpu] == 4 and t.allocatable[r, 0] == 2000
    pi = info(pod("p", "500m", "1Gi", requests={"nvidia.com/gpu": 1}))
    t.add_pod(r, pi)
    assert t.requested[r, 0] == 500 and t.requested[r, gpu] == 1 and t.requested[r, 3] == 1
    t.remove_pod(r, pi)
    assert not t.requested[r].any()
    t.remove_pod(r, pi)  # twice is harmless
    assert not t.requested[r].any()


def test_unknown_extended_resource_gets_a_zero_column():
    t = NodeTable()
    r = t.upsert_node(node("a"))
    pi = info(pod("p", requests={"example.com/foo": 1}))
    vec = t.request_vector(pi)
    assert vec[t.resource_index["example.com/foo"]] == 1
    assert t.allocatable[r, t.resource_index["example.com/foo"]] == 0


def test_labels_are_encoded_and_updated():
    t = NodeTable()
    a = t.upsert_node(node("a", labels={"zone": "z1"}))
    b = t.upsert_node(node("b"))
    ids = t.label_ids("zone")
    assert ids[b] == ABSENT and t.labels["zone"].values[ids[a]] == "z1"
    t.upsert_node(node("a", labels={}))
    assert t.label_ids("zone")[a] == ABSENT


def test_taint_positions_follow_node_order():
    t = NodeTable()
    r = t.upsert_node(node("a", taints=[{"key": "x", "effect": "NoSchedule"}, {"key": "y", "effect": "NoExecute"}]))
    x = t.taint_vocab[("x", "", "NoSchedule")]
    y = t.taint_vocab[("y", "", "NoExecute")]
    assert t.taint_pos[r, x] == 0 and t.taint_pos[r, y] == 1
    t.upsert_node(node("a"))
    assert (t.taint_pos[r] == NO_TAINT).all()


def test_images_reverse_index():
    t = NodeTable()
    r = t.upsert_node(node("a", images=[(["nginx:1.25", "docker.io/library/nginx:1.25"], 100)]))
    assert t.image_rows["nginx:1.25"] == {r: 100}
    t.remove_node("a")
    assert t.image_rows["nginx:1.25"] == {}


def test_ports_counter():
    t = NodeTable()
    r = t.upsert_node(node("a"))
    p = pod("p", containers=[{"name": "c", "ports": [{"containerPort": 1, "hostPort": 80}]}])
    pi = info(p)
    t.add_pod(r, pi)
    assert sum(t.ports[r].values()) == 1
    t.remove_pod(r, pi)
    assert not t.ports[r]


def test_rows_lists_present_only():
    t = NodeTable()
    for n in "abc":
        t.upsert_node(node(n))
    t.remove_node("b")
    assert np.array_equal(t.rows(), [0, 2])
