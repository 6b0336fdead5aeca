"""The real control plane for kubesched's integration tests: etcd, kube-apiserver and kube-scheduler
built by tools/k8s/build.sh (`make k8s-bin`), started on 127.0.0.1 with a throw-away PKI.

    from integration.harness.controlplane import ControlPlane
    from integration.harness.rest import Kube
    from integration.harness.kube_scheduler import run_kube_scheduler
"""
