"""NodeDeclaredFeatures (kube's plugins/nodedeclaredfeatures) and the declared features it knows
(component-helpers' nodedeclaredfeatures): `plugin.py` the plugin, `features.py` each feature with
its rule for scheduling, `featureset.py` the registry of them and the sets a pod needs."""

from kubesched.plugins.nodedeclaredfeatures.plugin import ERR_REASON, NAME, NodeDeclaredFeatures

__all__ = ["ERR_REASON", "NAME", "NodeDeclaredFeatures"]
