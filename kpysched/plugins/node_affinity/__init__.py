"""NodeAffinity: spec.nodeSelector, required and preferred node affinity, addedAffinity.

- plugin.py: the plugin, NodeAffinityArgs, the upstream reasons, and
  RequiredNodeAffinity and term_errors, which PodTopologySpread, VolumeBinding and
  DynamicResources use as upstream's nodeaffinity helper;
- masks.py: the same matching over every snapshot row at once.

May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.node_affinity.plugin import (
    NAME,
    SPEC,
    NodeAffinity,
    NodeAffinityArgs,
    RequiredNodeAffinity,
    new,
    term_errors,
)

__all__ = [
    "NAME", "SPEC", "NodeAffinity", "NodeAffinityArgs", "RequiredNodeAffinity", "new",
    "term_errors",
]
