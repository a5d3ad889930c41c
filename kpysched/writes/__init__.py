"""Every write kpysched makes to the API server, through one door.

- `binding.py`: the Binding subresource, the one write that places a pod.
- `pod_status.py`: pod status patches (PodScheduled=False, nominatedNodeName), off the
  loop and coalesced per pod; the machinery the two PodGroup writers reuse.
- `pod_group_status.py`: the PodGroupScheduled condition on upstream's PodGroups.
- `coscheduling_status.py`: the status of scheduler-plugins' PodGroups.
- `event_recorder.py`: events.k8s.io/v1 Events, with upstream's series and rate.
- `preemption.py`: the victims' deletes (and their DisruptionTarget condition and
  Preempted events) that a preemption decided.
- `leader_label.py`: the label the leader puts on its own pod.
- `bundle.py`: `Writes`, the scheduler's writers in one object, drained on a graceful
  stop and aborted when the lease is lost.

May import: kpysched.api (the transport), kpysched.objects, kpysched.framework.status
and kpysched.queue.nominator (a preemption clears nominations); never the scheduling
loop. The writers are handed to whoever writes (the scheduler, the handle, the
leader's campaign); nothing else reaches kpysched.api to write.
"""
