"""NodeDeclaredFeatures: pods that use a feature go only to nodes that declare it.

- plugin.py: the plugin (PreFilter, Filter) and its queueing hints;
- features.py: the feature registry and what a pod needs.

May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.node_declared_features.plugin import NAME, SPEC, NodeDeclaredFeatures, new

__all__ = ["NAME", "SPEC", "NodeDeclaredFeatures", "new"]
