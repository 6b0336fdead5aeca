import pytest

from builders import make_pod
from kubesched.api.podinfo import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, PodError, make_pod_info


def c(name, cpu=None, memory=None, restart=None, limits=None, ports=None):
    requests = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    out = {"name": name, "image": "img", "resources": {"requests": requests, "limits": limits or {}}}
    if restart:
        out["restartPolicy"] = restart
    if ports:
        out["ports"] = ports
    return out


def test_app_containers_are_summed_and_pods_counted():
    pi = make_pod_info(make_pod("p").containers(c("a", "100m", "1Gi"), c("b", "200m", "1Gi")).obj())
    assert pi.requests == {"cpu": 300, "memory": 2 * 2**30, "pods": 1}


def test_init_container_max_wins_over_sum():
    p = make_pod("p").containers(c("a", "100m")).spec(initContainers=[c("i", "2")]).obj()
    assert make_pod_info(p).requests["cpu"] == 2000


def test_sidecars_add_to_app_containers_and_to_later_init_containers():
    # sidecar 500m runs beside the app (100m) and under the later init container (1 + 0.5)
    init = [c("sidecar", "500m", restart="Always"), c("init", "1")]
    p = make_pod("p").containers(c("a", "100m")).spec(initContainers=init).obj()
    assert make_pod_info(p).requests["cpu"] == 1500
    init = [c("sidecar", "500m", restart="Always"), c("init", "100m")]
    p = make_pod("p").containers(c("a", "2")).spec(initContainers=init).obj()
    assert make_pod_info(p).requests["cpu"] == 2500


def test_overhead_is_added():
    p = make_pod("p").containers(c("a", "100m")).spec(overhead={"cpu": "250m"}).obj()
    assert make_pod_info(p).requests["cpu"] == 350


def test_limits_default_requests():
    p = make_pod("p").containers(c("a", limits={"cpu": "1", "nvidia.com/gpu": 2})).obj()
    assert make_pod_info(p).requests["nvidia.com/gpu"] == 2
    assert make_pod_info(p).requests["cpu"] == 1000


def test_non_zero_defaults_for_best_effort_containers():
    pi = make_pod_info(make_pod("p").containers(c("a"), c("b", "1")).obj())
    assert pi.non_zero_cpu == DEFAULT_MILLI_CPU_REQUEST + 1000
    assert pi.non_zero_memory == 2 * DEFAULT_MEMORY_REQUEST
    assert "cpu" in pi.requests and "memory" not in pi.requests


def test_host_ports_collected():
    p = make_pod("p").containers(c("a", ports=[{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9}])).obj()
    (hp,) = make_pod_info(p).host_ports
    assert (hp.protocol, hp.host_ip, hp.port) == ("TCP", "0.0.0.0", 8080)


def test_bad_quantity_names_pod_and_field():
    with pytest.raises(PodError, match=r"pod default/p: spec.containers\[0\].resources.requests\[cpu\]"):
        make_pod_info(make_pod("p").req(cpu="lots").obj())


def test_negative_request_refused():
    with pytest.raises(PodError, match="non-negative"):
        make_pod_info(make_pod("p").req(cpu="-1").obj())


# --- pod-level resources (spec.resources): component-helpers' PodRequests and the non-zero sets ------

MI = 2**20


def test_pod_level_requests_replace_the_containers_aggregate_for_what_they_name():
    p = make_pod("p").containers(c("a", "100m", "1Gi"), c("b", "200m")).pod_resources(requests={"cpu": "1"}).obj()
    assert make_pod_info(p).requests == {"cpu": 1000, "memory": 2**30, "pods": 1}


def test_pod_level_requests_replace_init_containers_and_sidecars_too():
    init = [c("sidecar", "500m", restart="Always"), c("init", "2")]
    p = make_pod("p").containers(c("a", "100m")).spec(initContainers=init).pod_resources(requests={"cpu": "3"}).obj()
    assert make_pod_info(p).requests["cpu"] == 3000


def test_pod_level_limit_stands_for_its_request_and_overhead_is_added_on_top():
    p = (make_pod("p").containers(c("a", "100m")).pod_resources(limits={"cpu": "2", "hugepages-2Mi": "4Mi"})
         .spec(overhead={"cpu": "250m"}).obj())
    assert make_pod_info(p).requests == {"cpu": 2250, "hugepages-2Mi": 4 * MI, "pods": 1}


def test_pod_level_names_kube_does_not_support_there_are_ignored():
    p = make_pod("p").containers(c("a", "100m")).pod_resources(requests={"ephemeral-storage": "1Gi"}).obj()
    pi = make_pod_info(p)
    assert pi.requests == {"cpu": 100, "pods": 1}
    assert (pi.non_zero_memory, pi.scoring_memory) == (DEFAULT_MEMORY_REQUEST, DEFAULT_MEMORY_REQUEST)


def test_pod_level_cpu_and_memory_leave_no_default_to_count():
    p = make_pod("p").containers(c("a"), c("b")).pod_resources(requests={"cpu": "1200m", "memory": "1200M"}).obj()
    pi = make_pod_info(p)
    assert (pi.non_zero_cpu, pi.non_zero_memory) == (1200, 1_200_000_000)
    # NodeResourcesFit's scorers ignore the pod level (kube-scheduler v1.37.2): two defaulted containers.
    assert (pi.scoring_cpu, pi.scoring_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)


def test_pod_level_cpu_only_counts_the_memory_default_per_container_when_none_names_memory():
    init = [c("init")]
    p = make_pod("p").containers(c("a"), c("b")).spec(initContainers=init).pod_resources(requests={"cpu": "500m"}).obj()
    pi = make_pod_info(p)
    assert "memory" not in pi.requests
    assert (pi.non_zero_cpu, pi.non_zero_memory) == (500, 2 * DEFAULT_MEMORY_REQUEST)
    assert (pi.scoring_cpu, pi.scoring_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)


def test_a_node_counts_no_default_once_some_container_names_the_resource_but_the_scorer_does():
    # kube's getNonMissingContainerRequests looks at the pod's whole requests (one container names
    # memory), while the scorer fills every container's missing request and ignores the pod level.
    p = make_pod("p").containers(c("a", memory="100Mi"), c("b")).pod_resources(requests={"cpu": "1"}).obj()
    pi = make_pod_info(p)
    assert pi.non_zero_memory == 100 * MI
    assert pi.scoring_memory == 100 * MI + DEFAULT_MEMORY_REQUEST
    assert (pi.non_zero_cpu, pi.scoring_cpu) == (1000, 200)


def test_overhead_naming_memory_leaves_a_node_no_memory_default_to_count():
    p = (make_pod("p").containers(c("a")).pod_resources(requests={"cpu": "1"})
         .spec(overhead={"memory": "10Mi"}).obj())
    pi = make_pod_info(p)
    assert pi.non_zero_memory == 10 * MI
    assert pi.scoring_memory == DEFAULT_MEMORY_REQUEST + 10 * MI


def test_without_pod_level_requests_both_non_zero_sets_are_one():
    for p in (make_pod("p").containers(c("a"), c("b", "1")).obj(),
              make_pod("p").containers(c("a", memory="1Gi")).pod_resources(requests={}, limits={}).obj()):
        pi = make_pod_info(p)
        assert (pi.non_zero_cpu, pi.non_zero_memory) == (pi.scoring_cpu, pi.scoring_memory)


def test_bad_pod_level_quantity_names_the_field():
    with pytest.raises(PodError, match=r"pod default/p: spec.resources.requests\[cpu\]"):
        make_pod_info(make_pod("p").pod_resources(requests={"cpu": "lots"}).obj())
