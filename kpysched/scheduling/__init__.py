"""The scheduling core: the loop and every step of a pod's (or a pod group's) cycle.

- `scheduler.py`: the loop (run, stop, one decision per pod, drain and abort).
- `context.py`: `CycleContext`, what every step is built with (frameworks, queue,
  cache, snapshot, algorithm, writes, metrics, decisions, preemption sink); no step
  holds the Scheduler, so nothing calls back up into the loop.
- `attempt.py`: an `Attempt`, its PostFilter, its failure (unschedulable or error) and
  its decision record; a group's `GroupOutcome`.
- `binding_cycle.py`: assume the chosen node, then the binding task (Permit, PreBind,
  Bind, PostBind) and its failure.
- `algorithm.py`: filter and score one pod over the snapshot (upstream's
  schedulePod / findNodesThatFitPod / prioritizeNodes).
- `pod_group_cycle.py` (with `pod_group_members.py`, `pod_group_trial.py`,
  `pod_group_placement.py`, `pod_group_cycle_37.py`, `pod_group_cycle_placements.py`,
  `pod_group_results.py`), `pod_group_preemption.py`, `group_preemption.py`,
  `coscheduling_groups.py`: a pod group decided in one snapshot (which members, trying
  each, v1.37's rules and PodGroupPostFilter, placement by placement with
  TopologyAwareWorkloadScheduling, acting on the decision); v1.37's whole-group preemption; a
  Coscheduling group's all-or-nothing preemption; what scheduler-plugins' PodGroups
  are told.
- `preemption_sink.py`: where a preemption PostFilter decided goes (at once, or held
  for a group).
- `event_handlers.py`: informer callbacks into the cache and the queue.
- `shared_handle.py`: the Handle every profile's plugins share.
(A long cycle's turns on the loop, and a thread with a loop of its own, are the
framework's: framework/runtime/cooperative.py and loop_thread.py.)

May import: objects, cache, framework, queue, decisions, writes, metrics,
informers' listers (the handle reads them), api's data modules (api.response,
api.times; never the transport: writes are handed in through `writes`), and two
plugins' pure helpers: pod_topology_spread's, for the handle's default spread
selector, and default_preemption's victims and ordering, for v1.37's whole-group
preemption. Never app, cli or serving.
"""
