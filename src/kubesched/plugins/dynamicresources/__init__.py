"""DynamicResources, kube-scheduler's plugin for dynamic resource allocation (DRA), in a package as
kube's: the plugin and its extension points (plugin.py), its args (args.py), a pod's claims and
what their status says (claims.py), the cycle state (state.py), PreBind's writes and waits
(prebind.py), Score (score.py), events and hints (queueing.py), and what explanations add
(explain.py)."""

from kubesched.plugins.dynamicresources.args import DynamicResourcesArgs
from kubesched.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources", "DynamicResourcesArgs"]
