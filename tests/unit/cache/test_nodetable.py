import numpy as np

from builders import make_node, make_pod
from kubesched.api.podinfo import make_pod_info
from kubesched.api.selectors import Requirement
from kubesched.cache.labels import requirement_mask
from kubesched.cache.nodetable import ABSENT, COMPACT_SLACK, NO_TAINT, NodeTable


def test_rows_are_reused_after_delete_and_columns_grow():
    t = NodeTable(capacity=2)
    for i in range(5):
        t.upsert_node(make_node(f"n{i}").obj())
    assert t.capacity >= 5 and len(t) == 5
    row = t.remove_node("n2")
    assert not t.present[row]
    assert t.upsert_node(make_node("n9").obj()) == row
    assert t.name_of(row) == "n9"


def test_allocatable_and_requests_per_resource():
    t = NodeTable()
    r = t.upsert_node(make_node("a").capacity(cpu="2", memory="4Gi").capacity({"nvidia.com/gpu": 4}).obj())
    gpu = t.resource_index["nvidia.com/gpu"]
    assert t.allocatable[r, gpu] == 4 and t.allocatable[r, 0] == 2000
    pi = make_pod("p").req({"nvidia.com/gpu": 1}, cpu="500m", memory="1Gi").info()
    t.add_pod(r, pi)
    assert t.requested[r, 0] == 500 and t.requested[r, gpu] == 1 and t.requested[r, 3] == 1
    t.remove_pod(r, pi)
    assert not t.requested[r].any()
    t.remove_pod(r, pi)  # twice is harmless
    assert not t.requested[r].any()


def test_unknown_extended_resource_gets_a_zero_column():
    t = NodeTable()
    r = t.upsert_node(make_node("a").obj())
    pi = make_pod("p").req({"example.com/foo": 1}).info()
    vec = t.request_vector(pi)
    assert vec[t.resource_index["example.com/foo"]] == 1
    assert t.allocatable[r, t.resource_index["example.com/foo"]] == 0


def test_labels_are_encoded_and_updated():
    t = NodeTable()
    a = t.upsert_node(make_node("a").label(zone="z1").obj())
    b = t.upsert_node(make_node("b").obj())
    ids = t.label_ids("zone")
    assert ids[b] == ABSENT and t.labels["zone"].values[ids[a]] == "z1"
    t.upsert_node(make_node("a").obj())
    assert t.label_ids("zone")[a] == ABSENT


def test_taint_positions_follow_node_order():
    t = NodeTable()
    r = t.upsert_node(make_node("a").taints([{"key": "x", "effect": "NoSchedule"}, {"key": "y", "effect": "NoExecute"}]).obj())
    x = t.taint_vocab[("x", "", "NoSchedule")]
    y = t.taint_vocab[("y", "", "NoExecute")]
    assert t.taint_pos[r, x] == 0 and t.taint_pos[r, y] == 1
    t.upsert_node(make_node("a").obj())
    assert (t.taint_pos[r] == NO_TAINT).all()


def test_images_reverse_index():
    t = NodeTable()
    r = t.upsert_node(make_node("a").image(["nginx:1.25", "docker.io/library/nginx:1.25"], 100).obj())
    assert t.image_rows["nginx:1.25"] == {r: 100}
    t.remove_node("a")
    assert "nginx:1.25" not in t.image_rows  # an image no node has leaves the index


def test_ports_counter():
    t = NodeTable()
    r = t.upsert_node(make_node("a").obj())
    p = make_pod("p").containers({"name": "c", "ports": [{"containerPort": 1, "hostPort": 80}]}).obj()
    pi = make_pod_info(p)
    t.add_pod(r, pi)
    assert sum(t.ports[r].values()) == 1
    t.remove_pod(r, pi)
    assert not t.ports[r]


def test_rows_lists_present_only():
    t = NodeTable()
    for n in "abc":
        t.upsert_node(make_node(n).obj())
    t.remove_node("b")
    assert np.array_equal(t.rows(), [0, 2])


def test_image_index_stays_bounded_through_image_churn():
    t = NodeTable()
    for release in range(500):  # every rollout a new tag; the old one disappears from the node
        t.upsert_node(make_node("a").image([f"app:{release}"], 100).obj())
    assert list(t.image_rows) == ["app:499"]


def test_label_vocabulary_stays_bounded_through_node_churn():
    t = NodeTable()
    for i in range(2000):  # an autoscaled pool: each node a new hostname, three at a time
        t.upsert_node(make_node(f"n{i}").label({"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 3}", f"once-{i}": "x"}).obj())
        if i >= 3:
            t.remove_node(f"n{i - 3}")
    col = t.labels["kubernetes.io/hostname"]
    assert col.live == 3 and len(col.values) <= 2 * 3 + COMPACT_SLACK
    assert len(t.labels["zone"].values) == 3
    assert set(t.labels) == {"kubernetes.io/hostname", "zone", "once-1997", "once-1998", "once-1999"}
    # The encoding still answers correctly after compactions.
    for name in ("n1997", "n1998", "n1999"):
        row = t.row_of(name)
        assert col.values[col.ids[row]] == name
        assert requirement_mask(t, Requirement("kubernetes.io/hostname", "In", frozenset((name,))))[row]
    assert int(requirement_mask(t, Requirement("kubernetes.io/hostname", "Exists", frozenset())).sum()) == 3
    assert not requirement_mask(t, Requirement("kubernetes.io/hostname", "In", frozenset(("n5",)))).any()


def test_a_compacted_column_is_a_new_object_and_keeps_every_row():
    t = NodeTable()
    for i in range(COMPACT_SLACK + 10):
        t.upsert_node(make_node("keep").label(v="stay").obj() if i == 0 else make_node(f"x{i}").label(v=f"x{i}").obj())
    first = t.labels["v"]
    for i in range(1, COMPACT_SLACK + 10):
        t.upsert_node(make_node(f"x{i}").label(v="stay").obj())  # every value but one dies
    col = t.labels["v"]
    assert col is not first and col.live == 1 and len(col.values) < COMPACT_SLACK
    assert all(col.values[i] == "stay" for i in t.label_ids("v")[: t.size])


def test_taint_columns_stay_bounded_through_taint_churn():
    """cluster-autoscaler stamps a time into its taints: every scale-down a new distinct taint."""
    t = NodeTable()
    t.upsert_node(make_node("steady").taints([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]).obj())
    for i in range(3000):
        stamp = {"key": "DeletionCandidateOfClusterAutoscaler", "value": str(1_700_000_000 + i), "effect": "PreferNoSchedule"}
        t.upsert_node(make_node(f"n{i}").taints([stamp]).obj())
        if i >= 2:
            t.remove_node(f"n{i - 2}")
    assert len(t.taint_list) <= 2 * 3 + COMPACT_SLACK
    assert t.taint_pos.shape[1] == len(t.taint_list) == len(t.taint_refs)
    # Every present node still reads its own taints back.
    for name in ("steady", "n2998", "n2999"):
        row = t.row_of(name)
        carried = [t.taint_list[c] for c in np.flatnonzero(t.taint_pos[row] != NO_TAINT)]
        assert carried == [(x.key, x.value, x.effect) for x in t.nodes[row].spec.taints]


def test_copies_of_a_pod_count_on_every_node_only_inside_the_block():
    t = NodeTable()
    rows = [t.upsert_node(make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj()) for i in range(3)]
    t.add_pod(rows[0], make_pod("there").req(cpu="1", memory="1Gi").info())
    before = (t.requested.copy(), t.non_zero_requested.copy(), t.generation)
    pi = make_pod("p").req(cpu="500m", memory="2Gi").info()
    with t.with_copies(pi, 2):
        assert t.copies == 2 and t.generation > before[2]
        assert (t.requested[rows, 0] - before[0][rows, 0] == 1000).all()
        assert (t.non_zero_requested[rows, 1] - before[1][rows, 1] == 4 * (1 << 30)).all()
    assert t.copies == 0 and t.generation > before[2] + 1
    assert (t.requested == before[0]).all() and (t.non_zero_requested == before[1]).all()



def test_the_port_index_follows_pods_and_nodes() -> None:
    table = NodeTable()
    rows = [table.upsert_node(make_node(f"n{i}").obj()) for i in range(2)]

    def with_port(name: str, port: int, ip: str = ""):  # type: ignore[no-untyped-def]
        return make_pod(name).containers({"name": "c", "ports": [{"containerPort": port, "hostPort": port, "hostIP": ip}]}).info()

    a, b, c = with_port("a", 80), with_port("b", 80), with_port("c", 443, "10.0.0.1")
    table.add_pod(rows[0], a)
    table.add_pod(rows[0], b)
    table.add_pod(rows[1], c)
    assert table.port_index.as_counts() == {("TCP", 80): {"0.0.0.0": {rows[0]: 2}}, ("TCP", 443): {"10.0.0.1": {rows[1]: 1}}}
    table.remove_pod(rows[0], a)
    assert table.port_index.as_counts()[("TCP", 80)] == {"0.0.0.0": {rows[0]: 1}}
    table.remove_pod(rows[0], b)
    table.remove_node("n1")
    assert table.port_index.as_counts() == {} and not table.port_index


def _state(table: NodeTable) -> tuple[object, ...]:
    size = table.size
    return (table.requested[:size].tolist(), table.non_zero_requested[:size].tolist(),
            [dict(c) for c in table.ports[:size]], [sorted(p) for p in table.pods[:size]], repr(table.port_index))


def test_adding_and_removing_many_pods_at_once_is_adding_them_one_at_a_time() -> None:
    """add_pods/remove_pods (rows repeated, host ports, extended resources, a pod not on its row)
    leave the table as add_pod/remove_pod one by one do, with a generation per row changed."""
    import random

    rng = random.Random(3)
    pods = []
    for i in range(40):
        ports = [{"containerPort": 80 + i % 3, "hostPort": 80 + i % 3}] if i % 5 == 0 else []
        extra = {"example.com/gpu": "1"} if i % 7 == 0 else {}
        pods.append(make_pod(f"p{i}").containers({"name": "c", "ports": ports, "resources": {"requests": {
            "cpu": f"{rng.randint(1, 900)}m", "memory": f"{rng.randint(1, 64)}Mi", **extra}}}).info())
    one, many = NodeTable(), NodeTable()
    for t in (one, many):
        for i in range(6):
            t.upsert_node(make_node(f"n{i}").obj())
    placed = [(rng.randrange(6), p) for p in pods]
    for row, p in placed:
        one.add_pod(row, p)
    generation = many.generation
    many.add_pods(placed)
    assert _state(one) == _state(many)
    assert many.generation == generation + len(placed)
    assert sorted(set(many.changed_since(generation) or [])) == sorted({row for row, _ in placed})
    leaving = [*rng.sample(placed, 25), ((placed[0][0] + 1) % 6, placed[0][1])]  # the last: not on that row
    for row, p in leaving:
        one.remove_pod(row, p)
    many.remove_pods(leaving, many.requests_of(leaving))
    assert _state(one) == _state(many)
    back = leaving[:-1]
    for row, p in back:
        one.add_pod(row, p)
    many.add_pods(back, many.requests_of(back))
    assert _state(one) == _state(many)
