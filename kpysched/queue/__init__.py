"""The scheduling queue (upstream's PriorityQueue): active, backoff and unschedulable
pods, the gated ones held by PreEnqueue, the pods in flight and the events that
happened meanwhile, nominations, and the queueing hints that decide which cluster
events move a rejected pod back.

May import: kpysched.objects, kpysched.cache and kpysched.framework (its events,
statuses and QueuedPodInfo); never the scheduling core, which drives the queue.
"""
