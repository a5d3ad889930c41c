"""Labels the queue gives its moves in upstream's queue metrics.

The `event` of a move no cluster event caused (scheduler_queue_incoming_pods_total and,
on v1.37, scheduler_queue_incoming_entities_total), and the entity `type` of v1.37's
entity metrics: a pod outside any group, or a pod group moving as one entity. Kept
apart so that scheduling_queue.py and pod_group_moves.py read them from one place.
"""

# A pod (or a v1.37 group) back from a failed scheduling attempt.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
# Its backoff over, moved by the periodic flush.
BACKOFF_COMPLETE = "BackoffComplete"
# Taken from backoff before its end by a pop that found the active queue empty.
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"

POD_ENTITY = "pod"
POD_GROUP_ENTITY = "podgroup"
