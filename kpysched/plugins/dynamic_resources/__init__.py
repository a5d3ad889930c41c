"""DynamicResources: devices for pods through ResourceClaims with structured
parameters (upstream's pkg/scheduler/framework/plugins/dynamicresources with the
allocator of k8s.io/dynamic-resource-allocation/structured).

- plugin.py: the extension points (PreEnqueue, PreFilter, Filter, PostFilter, Score,
  Reserve/Unreserve, PreBindPreFlight, PreBind) and the events it registers;
  hints.py: their queueing hints; args.py: DynamicResourcesArgs;
- claims.py: which ResourceClaims a pod uses; claim_writes.py: every write to them
  (finalizer, allocation and reservation, deallocation, extended-resource claims);
  binding_conditions.py: devices that must be ready before the pod binds;
- tracker.py: devices held by allocated, assumed and in-flight claims;
- extended_resources.py: extended resources a DeviceClass backs (DRAExtendedResource);
- allocator.py with search.py, pools.py, request_data.py, constraints.py,
  capacity.py and results.py: choosing devices for claims on one node (upstream's
  structured allocator);
- cel.py: device selectors in CEL, with cel_library.py (quantity, semver, the
  environment); cel_ast.py, cel_cost.py, cel_bound.py, cel_rewrite.py and cel_meter.py
  hold them to cel-go's actual-cost limit and the Filter deadline (docs/dra-cel.md).

May import objects/, cache/, framework/ and plugins/_shared/ (and node_affinity's term
checks); node_resources/ imports its device counting from here.
"""

from kpysched.plugins.dynamic_resources.plugin import NAME, SPEC

__all__ = ["NAME", "SPEC"]
