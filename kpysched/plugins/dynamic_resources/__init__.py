"""DynamicResources: devices for pods through ResourceClaims with structured
parameters (upstream's pkg/scheduler/framework/plugins/dynamicresources with the
allocator of k8s.io/dynamic-resource-allocation/structured).

- plugin.py: the extension points (PreEnqueue, PreFilter, Filter, PostFilter, Score,
  Reserve/Unreserve, PreBind) and the events it registers;
- claims.py: which ResourceClaims a pod uses;
- tracker.py: devices held by allocated, assumed and in-flight claims;
- allocator.py and its helpers: choosing devices for claims on one node;
- cel.py: device selectors in CEL.
"""

from kpysched.plugins.dynamic_resources.plugin import NAME, SPEC

__all__ = ["NAME", "SPEC"]
