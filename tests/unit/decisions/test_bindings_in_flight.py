"""A binding in flight and the decision store: the store owns a stored record, so a
binding waiting on the API server neither keeps an evicted record alive nor loses
the Bound update of one the store still keeps."""

from __future__ import annotations

import asyncio
import gc
import weakref

from kpysched.config.features import Features
from kpysched.decisions.record import Decision
from kpysched.informers.listers import Listers
from tests.unit.builders import make_pod
from tests.unit.scheduler_harness import build_harness, node


async def test_waiting_bindings_keep_only_what_the_store_keeps() -> None:
    harness = build_harness({"schedulerName": "kpysched"}, Features(), Listers(),
                            node("n1", "8"), decision_records=1)
    release = asyncio.Event()
    harness.api.hold[("POST", "/binding")] = release
    scheduler, store = harness.scheduler, harness.scheduler.context.decisions
    assert store is not None
    for name in ("a", "b", "c"):
        pod = make_pod(name).req(cpu="1").obj()
        pod.spec.scheduler_name = "kpysched"
        harness.pods.on_add(pod)
    kept: list[weakref.ref[Decision]] = []
    while scheduler.queue.pending_counts()["active"]:
        queued = await scheduler.queue.pop()
        assert queued is not None
        scheduler.schedule_one(queued)
        (record,) = store._by_pod[queued.pod_info.key]
        kept.append(weakref.ref(record))
    await asyncio.sleep(0)  # every binding is now parked on the API server
    gc.collect()
    # Only the newest record is in the store (capacity 1); the parked bindings of the
    # other two hold theirs no longer.
    assert [ref() is not None for ref in kept] == [False, False, True]
    release.set()
    await scheduler.drain_writes(timeout=5)
    await asyncio.gather(*scheduler.context.writes.binder._in_flight)
    assert sorted(harness.bound()) == ["a", "b", "c"]
    (last,) = store.for_pod("default", "c")
    assert (last["outcome"], last["node"]) == ("Bound", "n1")
