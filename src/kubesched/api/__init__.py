"""Typed Kubernetes objects, quantities and the per-pod view used by scheduling."""
