"""Coscheduling (scheduler-plugins): a PodGroup's pods placed together or not at all.

- plugin.py: the plugin (QueueSort, PreEnqueue, PreFilter, Permit) and its events;
- args.py: CoschedulingArgs; capacity.py: whether the cluster holds minResources.

May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.coscheduling.args import CoschedulingArgs
from kpysched.plugins.coscheduling.plugin import NAME, SPEC, Coscheduling, new

__all__ = ["NAME", "SPEC", "Coscheduling", "CoschedulingArgs", "new"]
