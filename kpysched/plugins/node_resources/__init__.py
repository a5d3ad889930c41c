"""NodeResourcesFit and NodeResourcesBalancedAllocation, as upstream's noderesources
package holds both.

- fit.py: NodeResourcesFit (PreFilter, Filter, PreScore, Score; its vector forms);
  fit_args.py: NodeResourcesFitArgs; fits_request.py: the request-against-node check
  and its reasons, which preemption and the hints reuse; fit_hints.py: its queueing hints;
- balanced_allocation.py: NodeResourcesBalancedAllocation;
- resource_allocation.py: the scorer both share (LeastAllocated, MostAllocated,
  RequestedToCapacityRatio, balanced), per node and vectorised; row_scores.py keeps its
  scores across cycles; dra_scoring.py: DRA-backed extended resources in their scores.

May import objects/, cache/, framework/, plugins/_shared/ and dynamic_resources (the
devices DRA-backed extended resources count); the registry is plugins/__init__.py.
"""

from kpysched.plugins.node_resources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from kpysched.plugins.node_resources.fit import NodeResourcesFit, NodeResourcesFitArgs

__all__ = [
    "NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFit", "NodeResourcesFitArgs",
]
