import pytest

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import LabelSelector, LabelSelectorRequirement
from kubesched.api.podinfo import make_pod_info
from kubesched.api.selectors import compile_label_selector
from kubesched.cache.cache import Cache, CacheError


def test_assume_counts_then_forget_releases():
    c = cache_with([make_node("a").capacity(cpu="1").obj()])
    pi = make_pod("p").req(cpu="600m").info()
    c.assume(pi, "a")
    assert c.table.requested[0, 0] == 600 and c.is_assumed(pi.uid)
    with pytest.raises(CacheError, match="already assumed"):
        c.assume(pi, "a")
    c.forget(pi)
    assert c.table.requested[0, 0] == 0 and c.node_of(pi.uid) is None


def test_bind_confirmation_keeps_a_single_count():
    c = cache_with([make_node("a").obj()])
    pi = make_pod("p").req(cpu="1").info()
    c.assume(pi, "a")
    pi.pod.spec.node_name = "a"
    c.add_pod(pi)
    assert c.table.requested[0, 0] == 1000 and not c.is_assumed(pi.uid)
    c.forget(pi)  # a confirmed pod is not forgotten
    assert c.table.requested[0, 0] == 1000


def test_bound_elsewhere_moves_the_pod():
    c = cache_with([make_node("a").obj(), make_node("b").obj()])
    pi = make_pod("p").req(cpu="1").info()
    c.assume(pi, "a")
    other = make_pod("p").req(cpu="1").node("b").info()
    other.uid = pi.uid
    c.add_pod(other)
    assert c.table.requested[0, 0] == 0 and c.table.requested[1, 0] == 1000


def test_assume_on_unknown_node_is_refused():
    c = Cache()
    with pytest.raises(CacheError, match="unknown node"):
        c.assume(make_pod("p").info(), "nowhere")


def test_pods_on_unknown_nodes_wait_for_the_node():
    c = Cache()
    c.add_pod(make_pod("p").req(cpu="1").node("late").info())
    c.add_node(make_node("late").obj())
    assert c.table.requested[c.table.row_of("late"), 0] == 1000
    c.remove_node("late")
    c.add_node(make_node("late").obj())
    assert c.table.requested[c.table.row_of("late"), 0] == 1000


def test_remove_pod_frees_resources_and_index():
    c = cache_with([make_node("a").obj()], [make_pod("p").req(cpu="1").label(app="x").node("a").obj()])
    uid = next(iter(c.placed))
    sel = compile_label_selector(LabelSelector(match_labels={"app": "x"}))
    assert len(c.pods.matching(sel)) == 1
    c.remove_pod(uid)
    assert c.table.requested[0, 0] == 0 and c.pods.matching(sel) == []


def test_pod_index_counts_by_row_and_namespace():
    c = cache_with(
        [make_node("a").obj(), make_node("b").obj()],
        [
            make_pod("p1").label(app="x").node("a").obj(),
            make_pod("p2").label(app="x").node("b").obj(),
            make_pod("p3").ns("other").label(app="x").node("b").obj(),
            make_pod("p4").label(app="y").node("b").obj(),
        ],
    )
    sel = compile_label_selector(LabelSelector(match_labels={"app": "x"}))
    assert list(c.pods.counts_matching(sel, {"default"}, c.table.size)) == [1, 1]
    assert len(c.pods.matching(sel)) == 3


def test_pods_of_a_deleted_node_leave_nothing_behind_once_deleted():
    c = Cache()
    for i in range(100):  # nodes come and go, each with a pod that outlives it briefly
        c.add_node(make_node(f"n{i}").obj())
        p = make_pod(f"p{i}").req(cpu="1").node(f"n{i}").info()
        c.add_pod(p)
        c.remove_node(f"n{i}")
        c.remove_pod(p.uid)
    assert c._orphans == {} and c.placed == {} and len(c.pods) == 0


class Listener:
    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def pod_placed(self, pi, row, assumed):
        self.seen.append(("placed", pi.pod.metadata.name, str(row), "assumed" if assumed else "bound"))

    def pod_removed(self, uid):
        self.seen.append(("removed", uid))


def test_listeners_hear_placements_once_and_removals():
    c = cache_with([make_node("a").obj(), make_node("b").obj()])
    heard = Listener()
    c.subscribe(heard)
    mine = make_pod("mine").req(cpu="1").info()
    c.assume(mine, "b")
    mine.pod.spec.node_name = "b"
    c.add_pod(mine)  # the confirmation of our own bind is no new placement
    theirs = make_pod("theirs").req(cpu="1").info()
    theirs.pod.spec.node_name = "a"
    c.add_pod(theirs)  # bound by someone else
    c.add_pod(theirs)  # an update of a known pod is no new placement either
    failed = make_pod("failed").req(cpu="1").info()
    c.assume(failed, "a")
    c.forget(failed)
    c.remove_pod(theirs.uid)
    assert heard.seen == [
        ("placed", "mine", "1", "assumed"),
        ("placed", "theirs", "0", "bound"),
        ("placed", "failed", "0", "assumed"),
        ("removed", failed.uid),
        ("removed", theirs.uid),
    ]


def test_rows_matching_follows_pods_as_they_come_and_go() -> None:
    import random

    from kubesched.cache.podindex import PodIndex

    index = PodIndex()
    selector = compile_label_selector(LabelSelector(match_labels={"app": "web"}))
    rng = random.Random(7)
    placed: dict[str, object] = {}

    def expected(namespaces: set[str] | None) -> dict[int, int]:
        want: dict[int, int] = {}
        for p in index.matching(selector, namespaces):
            want[index.row[p.uid]] = want.get(index.row[p.uid], 0) + 1
        return want

    for step in range(400):
        if placed and rng.random() < 0.4:
            uid = rng.choice(sorted(placed))
            index.remove(placed.pop(uid))  # type: ignore[arg-type]
        else:
            p = make_pod(f"p{step}").ns(rng.choice(["a", "b"])).label(app=rng.choice(["web", "db"])).info()
            index.add(p, rng.randrange(5))
            placed[p.uid] = p
        for namespaces in (None, {"a"}):
            rows, counts = index.rows_matching(selector, namespaces)
            assert dict(zip(rows.tolist(), counts.tolist(), strict=True)) == expected(namespaces)


def test_rows_matching_all_is_each_pod_every_term_matches() -> None:
    """rows_matching_all against a walk of every pod, as pods come and go and with the terms'
    matches kept from earlier asks (or found afresh)."""
    import random

    from kubesched.cache.podindex import PodIndex

    index = PodIndex()
    web = compile_label_selector(LabelSelector(match_labels={"app": "web"}))
    tier = compile_label_selector(LabelSelector(match_expressions=[LabelSelectorRequirement(key="tier", operator="Exists")]))
    rng = random.Random(11)
    placed: dict[str, object] = {}
    terms_sets: list[list[tuple[object, set[str] | None]]] = [
        [(web, None), (tier, None)], [(web, {"a"}), (tier, {"a", "b"})], [(tier, {"b"}), (web, None), (web, {"a", "b"})],
        [(tier, None), (web, {"a"}), (web, {"b", "c"})],
    ]
    for step in range(300):
        if placed and rng.random() < 0.4:
            index.remove(placed.pop(rng.choice(sorted(placed))))  # type: ignore[arg-type]
        else:
            labels = {"app": rng.choice(["web", "db"])} | ({"tier": "x"} if rng.random() < 0.5 else {})
            p = make_pod(f"p{step}").ns(rng.choice(["a", "b", "c"])).label(labels).info()
            index.add(p, rng.randrange(6))
            placed[p.uid] = p
        terms = terms_sets[step % len(terms_sets)]
        want = sorted(index.row[uid] for uid, p in index.infos.items()
                      if all((ns is None or p.namespace in ns) and sel.matches(p.labels) for sel, ns in terms))  # type: ignore[attr-defined]
        assert sorted(index.rows_matching_all(terms).tolist()) == want  # type: ignore[arg-type]


def test_rows_matching_live_only_leaves_out_terminating_pods() -> None:
    import msgspec

    from kubesched.cache.podindex import PodIndex

    index = PodIndex()
    selector = compile_label_selector(LabelSelector(match_labels={"app": "web"}))
    live = make_pod("live").label(app="web").info()
    going = make_pod("going").label(app="web").obj()
    going = msgspec.structs.replace(going, metadata=msgspec.structs.replace(going.metadata, deletion_timestamp="2026-11-25T00:00:00Z"))
    index.rows_matching(selector, None, live_only=True)  # cached before the pods come
    index.add(live, 1)
    index.add(make_pod_info(going), 2)
    rows, counts = index.rows_matching(selector, None, live_only=True)
    assert rows.tolist() == [1] and counts.tolist() == [1]
    assert sorted(index.rows_matching(selector, None)[0].tolist()) == [1, 2]


def test_a_bound_pod_requesting_a_resource_no_node_has_is_counted() -> None:
    """The pod's request brings a new resource column, which replaces the requested array: the
    row is updated in the new one (it raised a shape error before)."""
    c = cache_with([make_node("a").obj()], [make_pod("p").req({"example.com/gpu": "2"}).node("a").obj()])
    table = c.table
    assert table.requested[table.index["a"], table.resource_index["example.com/gpu"]] == 2
