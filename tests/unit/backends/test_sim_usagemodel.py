"""Usage models: the annotation grammar, where annotations apply, and the numbers the model produces."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from builders import make_node, make_pod
from kubesched.api.objects import Pod, convert
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_paths
from kubesched.backends.sim.usagemodel import Amount, UsageError, UsageModel, UsageSpec, parse_usage, running_requests
from kubesched.infra.clock import VirtualClock

# --- grammar -------------------------------------------------------------------------------------------------


def test_steady_quantities_and_percent() -> None:
    assert parse_usage("steady:800m", "cpu") == UsageSpec("steady", Amount(800.0, 800.0, False), text="steady:800m")
    assert parse_usage(" steady: 1.5 ", "cpu").level == Amount(1500.0, 1500.0, False)
    assert parse_usage("steady:2Gi", "memory").level == Amount(2.0 * 2**30, 2.0 * 2**30, False)
    assert parse_usage("steady:60%", "cpu").level == Amount(0.6, 0.6, True)
    assert parse_usage("steady:250%", "memory").level == Amount(2.5, 2.5, True)


def test_diurnal_options_and_defaults() -> None:
    spec = parse_usage("diurnal:500m,amplitude=0.5,period=1h", "cpu")
    assert (spec.model, spec.level.low, spec.amplitude, spec.period, spec.phase) == ("diurnal", 500.0, 0.5, 3600.0, 0.0)
    spec = parse_usage("diurnal:50%, amplitude=30%, period=90, phase=15m", "cpu")
    assert (spec.amplitude, spec.period, spec.phase) == (0.3, 90.0, 900.0)
    spec = parse_usage("diurnal:1", "cpu")
    assert (spec.amplitude, spec.period) == (0.5, 86400.0)


def test_bursty_and_uniform() -> None:
    spec = parse_usage("bursty:300m,peak=1500m,duty=0.2,mean=5m", "cpu")
    assert spec.peak == Amount(1500.0, 1500.0, False)
    assert (spec.duty, spec.mean) == (0.2, 300.0)
    spec = parse_usage("bursty:uniform(300m,800m),peak=uniform(2,3)", "cpu")
    assert spec.level == Amount(300.0, 800.0, False) and spec.peak == Amount(2000.0, 3000.0, False)
    assert (spec.duty, spec.mean) == (0.2, 60.0)
    assert parse_usage("steady:uniform( 5% , 60% )", "cpu").level == Amount(0.05, 0.6, True)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("steady", "expected MODEL:AMOUNT"),
        ("steady:", "expected MODEL:AMOUNT"),
        ("wobbly:1", "unknown model 'wobbly'"),
        ("steady:lots", "'lots' is not a quantity"),
        ("steady:-1", "must not be negative"),
        ("steady:-5%", "non-negative percentage"),
        ("steady:1,period=1h", "unknown option 'period' for steady (options: none)"),
        ("diurnal:1,amplitude=2", "amplitude: '2' must be between 0 and 1"),
        ("diurnal:1,period=0", "period: '0' must be above 0"),
        ("diurnal:1,period=soon", "not a duration"),
        ("diurnal:1,amplitude", "options are written NAME=VALUE"),
        ("diurnal:1,amplitude=0.1,amplitude=0.2", "given twice"),
        ("bursty:300m", "bursty needs peak=AMOUNT"),
        ("bursty:300m,peak=1,duty=0", "duty: '0' must be above 0 and at most 1"),
        ("bursty:300m,peak=1,mean=0s", "mean: '0s' must be above 0"),
        ("bursty:300m,peak=1,mean=10ms", "mean: '10ms' is under the simulator's minimum burst length of 1s"),
        ("steady:uniform(2,1)", "lower bound is above the upper bound"),
        ("steady:uniform(10%,2)", "both bounds must be percentages, or both quantities"),
        ("steady:uniform(1)", "uniform takes two amounts"),
        ("steady:uniform(1,2", "unbalanced '('"),
        ("steady:uniform", "write uniform(LOW,HIGH)"),
    ],
)
def test_bad_values_say_why(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_usage(text, "cpu")
    assert fragment in str(info.value)


# --- annotations in manifests ------------------------------------------------------------------------------

NODE = """
apiVersion: v1
kind: Node
metadata:
  name: {name}
  annotations: {annotations}
status:
  allocatable: {{cpu: "10", memory: 10Gi, pods: "110"}}
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations: {annotations}
spec:
  containers:
    - name: c
      image: nginx
      resources:
        requests: {{cpu: "1", memory: 1Gi}}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {annotations}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata:
      labels: {{app: web}}
      annotations: {template}
    spec:
      containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def load(tmp_path: Path, text: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(text))
    return load_paths([path])


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert "Traceback" not in message and "\n" not in message
    return message


def test_pod_usage_annotations_are_parsed(tmp_path: Path) -> None:
    cluster = load(tmp_path, POD.format(
        name="p", annotations='{sim.kubesched.io/usage-cpu: "steady:60%", sim.kubesched.io/usage-memory: "steady:512Mi"}'))
    (sp,) = cluster.pods
    assert sp.usage_cpu is not None and sp.usage_cpu.level == Amount(0.6, 0.6, True)
    assert sp.usage_memory is not None and sp.usage_memory.level.low == 512 * 2**20
    assert cluster.warnings == []


def test_template_annotation_wins_over_the_workloads(tmp_path: Path) -> None:
    cluster = load(tmp_path, DEPLOYMENT.format(
        annotations='{sim.kubesched.io/usage-cpu: "steady:1", sim.kubesched.io/usage-memory: "steady:1Gi"}',
        template='{sim.kubesched.io/usage-cpu: "steady:2"}',
    ))
    assert len(cluster.pods) == 2
    for sp in cluster.pods:
        assert sp.usage_cpu is not None and sp.usage_cpu.level.low == 2000.0
        assert sp.usage_memory is not None and sp.usage_memory.level.low == 2**30


def test_bad_pod_usage_names_object_and_annotation(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="p", annotations='{sim.kubesched.io/usage-cpu: "wobbly:1"}'))
    assert message.startswith(f"{tmp_path / 'cluster.yaml'}: document 1: Pod default/p: ")
    assert "metadata.annotations[sim.kubesched.io/usage-cpu]: invalid value 'wobbly:1': unknown model 'wobbly'" in message


def test_bad_template_usage_points_into_the_template(tmp_path: Path) -> None:
    message = error_of(tmp_path, DEPLOYMENT.format(annotations="{}", template='{sim.kubesched.io/usage-memory: "steady:1x"}'))
    assert "Deployment default/web: spec.template.metadata.annotations[sim.kubesched.io/usage-memory]" in message
    assert "'1x' is not a quantity (bytes such as 512Mi or 2Gi) or a percentage" in message


def test_node_background_per_copy(tmp_path: Path) -> None:
    cluster = load(tmp_path, NODE.format(
        name="n", annotations='{sim.kubesched.io/count: "3", sim.kubesched.io/background-cpu: "steady:uniform(5%,60%)"}'))
    assert sorted(cluster.background) == ["n-0", "n-1", "n-2"]
    cpu, memory = cluster.background["n-1"]
    assert cpu is not None and cpu.level == Amount(0.05, 0.6, True) and memory is None


def test_bad_background_names_the_node(tmp_path: Path) -> None:
    message = error_of(tmp_path, NODE.format(name="n", annotations='{sim.kubesched.io/background-cpu: "bursty:10%"}'))
    assert "Node n: metadata.annotations[sim.kubesched.io/background-cpu]: invalid value 'bursty:10%': bursty needs peak" in message


def test_misplaced_usage_annotations_warn(tmp_path: Path) -> None:
    cluster = load(tmp_path, NODE.format(name="n", annotations='{sim.kubesched.io/usage-cpu: "steady:1"}') + "---"
                   + POD.format(name="p", annotations='{sim.kubesched.io/background-memory: "steady:1Gi"}'))
    text = "\n".join(cluster.warnings)
    assert "Node n: metadata.annotations[sim.kubesched.io/usage-cpu]: ignored" in text and "background-cpu" in text
    assert "Pod default/p: metadata.annotations[sim.kubesched.io/background-memory]: ignored" in text
    assert cluster.background == {}


def test_simulation_configmap_settings(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: kubesched-simulation, namespace: kube-system}
        data:
          scrapeInterval: 30s
          prometheusOutages: "10m-12m, 3600-3700"
          colour: blue
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: other}
        data: {a: b}
    """)
    assert cluster.settings.scrape_interval == 30.0
    assert cluster.settings.prometheus_outages == [(600.0, 720.0), (3600.0, 3700.0)]
    text = "\n".join(cluster.warnings)
    assert "ConfigMap kube-system/kubesched-simulation: data[colour]: unknown setting" in text
    assert "skipped 1 object of kind ConfigMap (v1)" in text


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ("{scrapeInterval: 0s}", "data[scrapeInterval]: invalid duration '0s': must be above 0"),
        ("{scrapeInterval: often}", "data[scrapeInterval]: invalid duration 'often'"),
        ('{prometheusOutages: "10m"}', "data[prometheusOutages]: invalid outage '10m': write START-END"),
        ('{prometheusOutages: "10m-5m"}', "the end must be after the start"),
    ],
)
def test_bad_simulation_settings(tmp_path: Path, data: str, fragment: str) -> None:
    message = error_of(tmp_path, f"""
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: kubesched-simulation}}
        data: {data}
    """)
    assert "ConfigMap default/kubesched-simulation: " in message and fragment in message


def test_only_one_simulation_configmap(tmp_path: Path) -> None:
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kubesched-simulation, namespace: %s}\n"
    message = error_of(tmp_path, doc % "a" + "---\n" + doc % "b")
    assert "only one kubesched-simulation ConfigMap" in message and "document 1" in message


# --- the model -----------------------------------------------------------------------------------------------


def scrape_until(clock: VirtualClock, model: UsageModel, until: float) -> None:
    """Runs the model's scrape timers up to `until`."""
    while True:
        nxt = clock.next_time()
        if nxt is None or nxt > until:
            break
        clock.advance_to(nxt)
        clock.run_due()


def spec(text: str, resource: str = "cpu") -> UsageSpec:
    return parse_usage(text, resource)


def test_running_requests_ignore_init_containers_but_count_sidecars_and_overhead() -> None:
    p = convert({"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "8"}}},
                           {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}],
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
        "overhead": {"cpu": "50m"},
    }}, Pod, "p")
    assert running_requests(p) == {"cpu": 1150, "memory": 2**30}


def test_default_usage_is_the_request_and_a_mid_interval_bind_counts_in_part() -> None:
    clock = VirtualClock()
    model = UsageModel(
        clock,
        [
            make_node("a").uid("uid-a").capacity(cpu="4", memory="8Gi").without("ephemeral-storage").obj(),
            make_node("b").uid("uid-b").capacity(cpu="4", memory="8Gi").without("ephemeral-storage").obj(),
        ],
    )
    model.start()
    scrape_until(clock, model, 90)
    clock.advance_to(100)
    model.pod_started(make_pod("p").uid("uid-p").req(cpu="2", memory="2Gi").obj(), "a")
    scrape_until(clock, model, 120)
    times = model.times.tolist()
    assert times == [0, 15, 30, 45, 60, 75, 90, 105, 120]
    assert model.cpu[-3:, 0].tolist() == [0.0, pytest.approx(0.5 * 5 / 15), 0.5]
    assert model.memory[-3:, 0].tolist() == [0.0, 0.25, 0.25]
    assert model.cpu[:, 1].tolist() == [0.0] * 9
    clock.advance_to(125)
    model.pod_stopped("uid-p")
    scrape_until(clock, model, 150)
    assert model.cpu[-2:, 0].tolist() == [pytest.approx(0.5 * 5 / 15), 0.0]
    assert model.memory[-2:, 0].tolist() == [0.0, 0.0]
    # The counter is the running sum of busy share x interval.
    assert model.cpu_counter[-1, 0] == pytest.approx(15 * (0.5 * 5 / 15) + 15 * 0.5 + 15 * 0.5 * 5 / 15)


def test_usage_above_capacity_is_clipped_and_percent_is_of_the_request() -> None:
    clock = VirtualClock()
    p = make_pod("p").uid("uid-p").req(cpu="1", memory="1Gi").obj()
    model = UsageModel(
        clock,
        [make_node("a").uid("uid-a").capacity(cpu="4", memory="8Gi").without("ephemeral-storage").obj()],
        pod_usage={"uid-p": (spec("steady:9"), spec("steady:300%", "memory"))},
    )
    model.pod_started(p, "a")
    model.sample(15.0)
    assert model.cpu[0, 0] == 1.0
    assert model.memory[0, 0] == pytest.approx(3 / 8)
    assert model.usage_at(15.0)[0, 0] == 9000.0  # before clipping


def test_diurnal_values() -> None:
    clock = VirtualClock()
    model = UsageModel(
        clock,
        [make_node("a").uid("uid-a").capacity(cpu="10", memory="8Gi").without("ephemeral-storage").obj()],
        background={"a": (spec("diurnal:50%,amplitude=0.4,period=1h,phase=5m"), None)},
    )
    for t in (0.0, 600.0, 1800.0, 2700.0):
        expected = 5000 * (1 + 0.4 * math.sin(2 * math.pi * (t + 300) / 3600))
        assert model.usage_at(t)[0, 0] == pytest.approx(expected)


def test_bursty_is_on_or_off_with_the_duty_share_and_reproducible() -> None:
    def series(seed: int, prefix: str = "p", until: float = 30_000) -> np.ndarray:
        """(times, pods): one pod per node, so each column is one pod's usage."""
        clock = VirtualClock()
        nodes = [
            make_node(f"n{i}").uid(f"uid-n{i}").capacity(cpu="100", memory="8Gi").without("ephemeral-storage").obj() for i in range(40)
        ]
        model = UsageModel(clock, nodes, seed=seed,
                           pod_usage={f"uid-{prefix}{i}": (spec("bursty:200m,peak=2,duty=0.25,mean=2m"), None)
                                      for i in range(40)})
        for i in range(40):
            model.pod_started(make_pod(f"{prefix}{i}").uid(f"uid-{prefix}{i}").req(cpu="1", memory="1Gi").obj(), f"n{i}")
        return np.array([model.usage_at(t)[0] for t in np.arange(0, until, 10.0)])

    values = series(1)
    assert set(np.unique(values).tolist()) == {200.0, 2000.0}
    on = values == 2000.0
    assert 0.22 < float(on.mean()) < 0.28
    assert float(on.mean(axis=0).min()) > 0.1 and float(on.mean(axis=0).max()) < 0.45  # every pod bursts
    # Mean burst length, from runs of "on" samples 10 s apart (exponential, mean 120 s).
    starts = int((np.diff(on.astype(int), axis=0) == 1).sum())
    assert 100 < on.sum() * 10 / starts < 145
    assert np.array_equal(series(1, until=3000), values[:300])
    assert not np.array_equal(series(2, until=3000), values[:300])
    assert not np.array_equal(series(1, prefix="q", until=3000), values[:300])


def test_bursty_state_does_not_depend_on_when_the_pod_started() -> None:
    def at(start: float) -> list[float]:
        clock = VirtualClock()
        model = UsageModel(
            clock,
            [make_node("a").uid("uid-a").capacity(cpu="100", memory="8Gi").without("ephemeral-storage").obj()],
            pod_usage={"uid-p": (spec("bursty:1,peak=3,duty=0.5,mean=1m"), None)},
        )
        clock.advance_to(start)
        model.pod_started(make_pod("p").uid("uid-p").req(cpu="1", memory="1Gi").obj(), "a")
        return [float(model.usage_at(t)[0, 0]) for t in range(5000, 8000, 30)]

    assert at(0.0) == at(4000.0)


def test_uniform_background_differs_per_node_and_follows_the_seed() -> None:
    nodes = [make_node(f"n{i}").uid(f"uid-n{i}").capacity(cpu="10", memory="8Gi").without("ephemeral-storage").obj() for i in range(50)]
    background = {n.metadata.name: (spec("steady:uniform(5%,60%)"), None) for n in nodes}

    def levels(seed: int) -> np.ndarray:
        return UsageModel(VirtualClock(), nodes, seed=seed, background=background).usage_at(0.0)[0]

    first = levels(7)
    assert ((first >= 500) & (first <= 6000)).all()
    assert len(set(first.tolist())) == 50
    assert np.array_equal(first, levels(7)) and not np.array_equal(first, levels(8))


def test_many_pods_coming_and_going_stay_exact_after_compaction() -> None:
    clock = VirtualClock()
    model = UsageModel(
        clock,
        [
            make_node("a").uid("uid-a").capacity(cpu="1000", memory="1000Gi").without("ephemeral-storage").obj(),
            make_node("b").uid("uid-b").capacity(cpu="1000", memory="1000Gi").without("ephemeral-storage").obj(),
        ],
    )
    model.start()
    alive: set[str] = set()
    for step in range(40):
        clock.advance_to(step * 15.0 + 1)
        for i in range(50):
            name = f"p{step}-{i}"
            model.pod_started(make_pod(name).uid(f"uid-{name}").req(cpu="100m", memory="1Gi").obj(), "a" if i % 2 else "b")
            alive.add(name)
        for name in sorted(alive)[: 40]:
            model.pod_stopped(f"uid-{name}")
            alive.discard(name)
        scrape_until(clock, model, step * 15.0 + 15)
    assert model.running() == len(alive)
    a = sum(1 for n in alive if int(n.split("-")[1]) % 2)
    assert model.memory[-1].tolist() == [pytest.approx(a / 1000), pytest.approx((len(alive) - a) / 1000)]
    assert model.usage_at(clock.now())[0].tolist() == [a * 100.0, (len(alive) - a) * 100.0]
    assert model._n < 1000  # compacted


def test_summary_counts_hotspots_over_the_scrapes() -> None:
    clock = VirtualClock()
    model = UsageModel(
        clock,
        [
            make_node("hot").uid("uid-hot").capacity(cpu="10", memory="8Gi").without("ephemeral-storage").obj(),
            make_node("cold").uid("uid-cold").capacity(cpu="10", memory="8Gi").without("ephemeral-storage").obj(),
        ],
        background={"hot": (spec("steady:90%"), None), "cold": (spec("steady:10%"), None)},
    )
    model.start()
    scrape_until(clock, model, 150)
    summary = model.summary()
    assert summary.samples == 10  # the scrape at the start covers time before the run
    assert summary.hotspot_node_seconds == 150.0
    assert summary.node_cpu_util_p99 == 90.0
    assert summary.node_cpu_util_stddev == 40.0
