"""Manifests written to files and loaded, for the simulator-input tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubesched.backends.sim.clusterinput import ClusterInput, ManifestError, SimPod
from kubesched.backends.sim.manifests import load_paths

CONTAINER = """
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: 100m, memory: 128Mi}
"""


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str, name: str = "cluster.yaml") -> ClusterInput:
    return load_paths([write(tmp_path, text, name)])


def pods_by_name(cluster: ClusterInput) -> dict[str, SimPod]:
    return {sp.pod.metadata.name: sp for sp in cluster.pods}


def error_of(tmp_path: Path, text: str, name: str = "cluster.yaml") -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text, name)
    message = str(info.value)
    assert "Traceback" not in message and "\n" not in message
    return message


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
    - name: c
      image: nginx
      resources:
        requests: {{cpu: 250m, memory: 64Mi}}
"""


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web, tier: front}
    spec:
""" + CONTAINER


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: etl
  namespace: batch
spec:
  parallelism: 5
  completions: 3
  template:
    metadata:
      labels: {app: etl}
    spec:
      restartPolicy: Never
""" + CONTAINER
