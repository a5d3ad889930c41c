"""PodTopologySpread: spread pods evenly over topology domains (zones, nodes, ...).

Filter enforces the pod's DoNotSchedule constraints (matching pods in the
node's domain, plus the pod itself when it matches, minus the global minimum
must not exceed maxSkew); Score prefers nodes whose domains hold fewer matching
pods under ScheduleAnyway constraints. Pods without constraints of their own
get the configured defaults (args.defaultingType), with a selector deduced from
the Services and controller that select them (Handle.default_spread_selector,
computed by `default_selector`).

Upstream's feature gates are taken at their v1.36 values: nodeAffinityPolicy /
nodeTaintsPolicy and matchLabelKeys are always honoured; toleration operators
Lt/Gt (alpha) tolerate nothing. Queueing hints are not carried over: the
registered events alone decide when a rejected pod is retried.

plugin.py holds the plugin; args.py, filtering.py, scoring.py, common.py, hints.py and
default_selector.py its parts. May import objects/, cache/, framework/, plugins/_shared/
and node_affinity (RequiredNodeAffinity, for nodeAffinityPolicy).
"""

from kpysched.plugins.pod_topology_spread.args import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from kpysched.plugins.pod_topology_spread.default_selector import default_selector
from kpysched.plugins.pod_topology_spread.plugin import (
    NAME,
    PRE_FILTER_KEY,
    PRE_SCORE_KEY,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
    SPEC,
    PodTopologySpread,
    new,
)

__all__ = [
    "LIST_DEFAULTING", "NAME", "PRE_FILTER_KEY", "PRE_SCORE_KEY", "REASON_CONSTRAINTS_NOT_MATCH",
    "REASON_NODE_LABEL_NOT_MATCH", "SPEC", "SYSTEM_DEFAULTING", "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint", "PodTopologySpread", "PodTopologySpreadArgs", "default_selector", "new",
]
