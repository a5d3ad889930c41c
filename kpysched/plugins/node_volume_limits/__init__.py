"""NodeVolumeLimits: per-node CSI volume limits from CSINode allocatable counts, with
in-tree volumes counted as the CSI volumes they migrate to (translation.py)."""

from kpysched.framework.registry import PluginSpec
from kpysched.plugins.node_volume_limits.plugin import (
    NAME,
    REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
    new,
)

SPEC = PluginSpec(NAME, NodeVolumeLimits, new, None)

__all__ = ["NAME", "REASON_MAX_VOLUME_COUNT_EXCEEDED", "SPEC", "NodeVolumeLimits", "new"]
