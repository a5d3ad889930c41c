"""NodeVolumeLimits: per-node CSI volume limits from CSINode allocatable counts, with
in-tree volumes counted as the CSI volumes they migrate to (translation.py).

plugin.py holds the plugin; translation.py, ebs_volume_id.py and hints.py its parts.
May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.node_volume_limits.plugin import (
    NAME,
    REASON_DRIVER_NOT_INSTALLED,
    REASON_MAX_VOLUME_COUNT_EXCEEDED,
    SPEC,
    VOLUME_LIMIT_SCALING,
    NodeVolumeLimits,
    new,
)

__all__ = ["NAME", "REASON_DRIVER_NOT_INSTALLED", "REASON_MAX_VOLUME_COUNT_EXCEEDED", "SPEC",
           "VOLUME_LIMIT_SCALING", "NodeVolumeLimits", "new"]
