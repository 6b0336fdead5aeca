"""A throw-away Kubernetes control plane on 127.0.0.1 (etcd and kube-apiserver from the pinned
binaries, a fresh PKI, one log file per process), and the processes run against it: what
`kubesched bench --scheduler-perf --kube` runs workloads on, and what the integration tests'
harness (tests/integration/harness) builds on."""
