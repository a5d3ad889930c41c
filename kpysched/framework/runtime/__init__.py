"""The engine that runs one profile's plugins at each extension point (upstream's
framework/runtime).

- framework.py: Framework, built from a ProfileSpec and the registry; checks the
  profile and holds the plugins by point. Importers use `Framework`, `ProfileSpec`
  and `FrameworkError` from this package.
- scheduling_points.py, binding_points.py: the runners of the scheduling and the
  binding cycle's points; instrumented.py: what they share (the plugin lists and
  the timing of points and plugins for the metrics).
- placement_points.py: the runners of a pod group's placement points
  (TopologyAwareWorkloadScheduling), mixed into Framework.
- node_simulation.py: preemption's simulated nodes (clones, or pod totals).
- handle.py: ProfileHandle, the Handle a plugin receives; waiting.py: pods waiting
  at Permit or in PreBind; guard.py: a plugin that raises becomes an Error status.
- cooperative.py: the turns a long cycle gives the loop between nodes (never inside
  a plugin call), and the cooperative run the scheduling loop starts each cycle in.
- loop_thread.py: an event loop of its own on a thread, for work that must not wait
  behind the scheduling loop (the Lease's renewals, DRA's claim writes after PostFilter).

May import: the contract (kpysched.framework's own modules), objects/, cache/ and
api/response.py (types), decisions/record (score records). Never a plugin, queue/,
scheduling/ or the API transport; the contract never imports this package.
"""

from kpysched.framework.runtime.framework import Framework, FrameworkError, ProfileSpec

__all__ = ["Framework", "FrameworkError", "ProfileSpec"]
