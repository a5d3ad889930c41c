"""DefaultPreemption: evict lower-priority pods when a pod fits nowhere.

- plugin.py: the plugin (PostFilter: the dry run, the candidates, the victims) and
  DefaultPreemptionArgs;
- selection.py: upstream's rules for picking one candidate node;
- batch.py: the dry run over many nodes at once.

May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.default_preemption.plugin import (
    NAME,
    SPEC,
    DefaultPreemption,
    DefaultPreemptionArgs,
    new,
)

__all__ = ["NAME", "SPEC", "DefaultPreemption", "DefaultPreemptionArgs", "new"]
