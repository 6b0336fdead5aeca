"""The kube backend: schedules a real cluster through kube-apiserver."""
