"""kube-scheduler's scheduler_perf workloads, read as data and run on the simulator or a real apiserver."""
