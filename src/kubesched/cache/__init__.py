"""Node table, pod index and the assume/forget cache."""

from kubesched.cache.cache import Cache, CacheError
from kubesched.cache.nodetable import NodeTable

__all__ = ["Cache", "CacheError", "NodeTable"]
