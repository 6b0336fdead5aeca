"""ImageLocality: spread-scaled image sizes, thresholds, init containers, name normalization."""

from __future__ import annotations

import numpy as np

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import EnqueueExtensions
from kubesched.plugins.imagelocality import ImageLocality

MB = 1024 * 1024


def run_score(cache: Cache, pi: PodInfo, plugin: ImageLocality | None = None) -> dict[str, int]:
    plugin = plugin or ImageLocality(handle=UnitHandle(cache))
    table = cache.table
    names = list(table.index)
    rows = np.array([table.row_of(n) for n in names], dtype=np.intp)
    state = CycleState()
    return dict(zip(names, (int(s) for s in plugin.score(state, pi, table, rows)), strict=True))


def app_pod(name: str, *images: str, init: tuple[str, ...] = ()) -> PodInfo:
    containers = [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]
    spec = {"initContainers": [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]}
    return make_pod(name).containers(*containers).spec(**spec).info()


def test_size_scaled_by_spread() -> None:
    app = (["registry.example/app:1"], 300 * MB)
    cache = cache_with([make_node("a").image(*app).obj(), make_node("b").image(*app).obj(), make_node("c").obj(), make_node("d").obj()])
    # 300 MB on 2 of 4 nodes -> 150 MB; 100 * (150 - 23) / (1000 - 23) = 12.99 -> 12
    assert run_score(cache, app_pod("p", "registry.example/app:1")) == {"a": 12, "b": 12, "c": 0, "d": 0}


def test_wider_spread_scores_higher() -> None:
    app = (["app:1"], 300 * MB)
    cache = cache_with([make_node("a").image(*app).obj(), make_node("b").image(*app).obj()])
    # On every node: 100 * (300 - 23) / 977 = 28.35 -> 28
    assert run_score(cache, app_pod("p", "app:1")) == {"a": 28, "b": 28}


def test_small_images_score_zero_and_huge_ones_are_capped() -> None:
    small, huge = (["small:1"], 20 * MB), (["huge:1"], 2000 * MB)
    cache = cache_with([make_node("a").image(*small).image(*huge).obj()])
    assert run_score(cache, app_pod("p", "small:1")) == {"a": 0}
    assert run_score(cache, app_pod("q", "huge:1")) == {"a": 100}


def test_init_containers_count_in_the_sum_and_the_threshold() -> None:
    init, app = (["init:1"], 500 * MB), (["app:1"], 800 * MB)
    cache = cache_with([make_node("a").image(*init).image(*app).obj(), make_node("b").image(*init).obj()])
    pi = app_pod("p", "app:1", init=("init:1",))
    # Two containers: max threshold 2000 MB.
    # a: 500 + 800/2 = 900 MB -> 100 * 877 / 1977 = 44.36 -> 44; b: 500 MB -> 100 * 477 / 1977 = 24.1 -> 24
    assert run_score(cache, pi) == {"a": 44, "b": 24}


def test_an_image_used_twice_counts_twice() -> None:
    app = (["app:1"], 400 * MB)
    cache = cache_with([make_node("a").image(*app).obj()])
    # 800 MB over a 2000 MB threshold: 100 * 777 / 1977 = 39.3 -> 39
    assert run_score(cache, app_pod("p", "app:1", "app:1")) == {"a": 39}


def test_missing_tag_means_latest() -> None:
    cache = cache_with([make_node("a").image(["nginx:latest"], 500 * MB).obj(),
                        make_node("b").image(["nginx:1.25"], 500 * MB).obj()])
    scores = run_score(cache, app_pod("p", "nginx"))
    # 500 MB on 1 of 2 nodes -> 250 MB: 100 * 227 / 977 = 23.2 -> 23
    assert scores == {"a": 23, "b": 0}


def test_any_of_an_images_names_matches() -> None:
    img = (["docker.io/library/redis:7", "redis@sha256:abc"], 600 * MB)
    cache = cache_with([make_node("a").image(*img).obj()])
    # 100 * 577 / 977 = 59.05 -> 59
    assert run_score(cache, app_pod("p", "redis@sha256:abc")) == {"a": 59}
    assert run_score(cache, app_pod("q", "docker.io/library/redis:7")) == {"a": 59}


def test_no_prescore_as_kube_and_zero_everywhere_when_no_node_has_the_images() -> None:
    from kubesched.framework.interface import PreScorePlugin

    assert not isinstance(ImageLocality(), PreScorePlugin)  # kube's is Score only: config validate lists it so
    cache = cache_with([make_node("a").image(["other:1"], 500 * MB).obj()])
    plugin = ImageLocality(handle=UnitHandle(cache))
    assert plugin.score(CycleState(), app_pod("p", "app:1"), cache.table, cache.table.rows()).tolist() == [0]


def test_scores_follow_cluster_changes() -> None:
    app = (["app:1"], 300 * MB)
    cache = cache_with([make_node("a").image(*app).obj(), make_node("b").obj()])
    plugin = ImageLocality(handle=UnitHandle(cache))
    # 150 MB -> 100 * 127 / 977 = 12
    assert run_score(cache, app_pod("p", "app:1"), plugin) == {"a": 12, "b": 0}
    cache.update_node(make_node("b").image(*app).obj())
    assert run_score(cache, app_pod("p", "app:1"), plugin) == {"a": 28, "b": 28}
    cache.remove_node("a")
    cache.add_node(make_node("c").obj())
    assert run_score(cache, app_pod("p", "app:1"), plugin) == {"b": 12, "c": 0}


def test_no_candidate_rows_and_no_nodes() -> None:
    cache = Cache()
    plugin = ImageLocality(handle=UnitHandle(cache))
    empty = np.array([], dtype=np.intp)
    assert plugin.score(CycleState(), app_pod("p", "app:1"), cache.table, empty).tolist() == []


def test_registers_no_events_as_kube() -> None:
    # kube's ImageLocality has no EnqueueExtensions: a Score plugin rejects no pod, so no event needs a hint.
    assert not issubclass(ImageLocality, EnqueueExtensions)
