"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

- plugin.py: the plugin (PreFilter, Filter, PreScore, Score and their vector forms),
  InterPodAffinityArgs and the upstream reasons;
- filtering.py and scoring.py: the counts behind Filter and Score; common.py: terms and
  topology counts both use; existing_terms.py: existing pods' terms kept across cycles;
  pod_columns.py: pods matching a term per snapshot row; hints.py: queueing hints.

May import objects/, cache/, framework/ and plugins/_shared/.
"""

from kpysched.plugins.inter_pod_affinity.plugin import (
    NAME,
    SPEC,
    InterPodAffinity,
    InterPodAffinityArgs,
    new,
)

__all__ = ["NAME", "SPEC", "InterPodAffinity", "InterPodAffinityArgs", "new"]
