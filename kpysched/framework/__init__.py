"""The contract between the scheduler and its plugins (upstream's framework package).

- interfaces.py: the extension-point protocols a plugin subclasses, the Handle it
  receives, the listers it reads through, QueuedPodInfo and the score bounds.
- status.py (Status, Code), cycle_state.py (CycleState), cluster_events.py (cluster
  events and queueing hints), diagnosis.py (why a pod fits nowhere: upstream's
  FitError text), pod_totals.py (the pod totals a PodTotals filter judges).
- registry.py: PluginSpec, how a plugin (in-tree or from an entry point) is built.
- placement.py: a pod group's placement points (TopologyAwareWorkloadScheduling):
  Placement, PodGroupInfo, the PlacementGenerate and PlacementScore protocols.

runtime/ is the engine that runs the plugins at each point; nothing here imports it.

May import: objects/; cache/, decisions/ and api/response.py for types only (under
TYPE_CHECKING: the protocols name NodeInfo and Snapshot, CycleState carries a
Decision, the Handle hands plugins an ApiRequester for their own writes). Never
runtime/, a plugin, queue/, scheduling/ or the API transport.
"""
