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
