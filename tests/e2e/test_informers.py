"""Reflectors against the real kube-apiserver: list, watch, restart, 410 and relist."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Generic

import pytest
from kubernetes_asyncio import client, config
from structlog.testing import capture_logs

from kpysched.informers import KubeObject, Reflector, node_reflector, pod_reflector
from kpysched.informers.store import T
from kpysched.objects.api import Node, Pod, PodList
from tests.cluster import cluster as harness
from tests.cluster import kube

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 30.0
# Covers kube-apiserver's stop and start plus the reflector's backoff (0.8s doubling).
RECONNECT_SECONDS = 90.0


async def kubeconfig_client(cluster: harness.ClusterState) -> client.ApiClient:
    """A client configured the way kpysched configures itself: from a kubeconfig."""
    configuration = client.Configuration()
    await config.load_kube_config(config_file=cluster.kubeconfig,
                                  client_configuration=configuration)
    return client.ApiClient(configuration)


Event = tuple[str, str]  # ("add" | "update" | "delete", name)


class Recorder(Generic[T]):
    """Records handler calls and lets a test wait for the ones it expects."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.updates: list[tuple[T, T]] = []
        self._changed = asyncio.Event()

    def on_add(self, obj: T) -> None:
        self._record("add", obj)

    def on_update(self, old: T, new: T) -> None:
        self.updates.append((old, new))
        self._record("update", new)

    def on_delete(self, obj: T) -> None:
        self._record("delete", obj)

    def _record(self, kind: str, obj: KubeObject) -> None:
        self.events.append((kind, obj.metadata.name))
        self._changed.set()

    async def wait_until(self, done: Callable[[], bool], what: str,
                         timeout: float = WAIT_SECONDS) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not done():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"no {what} within {timeout:.0f}s; handler saw {self.events}") from None

    async def wait_for(self, *expected: Event, timeout: float = WAIT_SECONDS) -> None:
        await self.wait_until(lambda: all(e in self.events for e in expected),
                              f"{list(expected)}", timeout)


@contextlib.asynccontextmanager
async def running(reflector: Reflector[T]) -> AsyncIterator[asyncio.Task[None]]:
    """Run the reflector as a task; on exit cancel it and surface any crash."""
    task = asyncio.create_task(reflector.run())
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def wait_synced(reflector: Reflector[T], task: asyncio.Task[None]) -> None:
    synced = asyncio.ensure_future(reflector.synced.wait())
    done, _ = await asyncio.wait([task, synced], timeout=WAIT_SECONDS,
                                 return_when=asyncio.FIRST_COMPLETED)
    synced.cancel()
    if task in done:
        task.result()  # raises what ended run()
    assert reflector.has_synced, f"{reflector.resource} not synced within {WAIT_SECONDS:.0f}s"


async def restart_apiserver(cluster: harness.ClusterState) -> None:
    # Blocking (it waits for /readyz): run it off the loop so the reflector keeps going.
    state = await asyncio.to_thread(harness.restart_apiserver, Path(cluster.dir))
    cluster.apiserver_pid = state.apiserver_pid  # so the session teardown stops this one


async def test_paginated_list_delivers_existing_pods_then_has_synced(
    cluster: harness.ClusterState, api: client.ApiClient, namespace: str
) -> None:
    names = ["p1", "p2", "p3", "p4", "p5"]
    for name in names:
        await kube.create_pod(api, namespace, kube.pod_body(name, scheduler_name="nobody"))
    recorder: Recorder[Pod] = Recorder()
    own_client = await kubeconfig_client(cluster)
    reflector = Reflector(own_client, f"/api/v1/namespaces/{namespace}/pods", Pod, PodList,
                          recorder, page_size=2)
    assert not reflector.has_synced

    async with own_client, running(reflector) as task:
        await wait_synced(reflector, task)

        # Everything listed was delivered before has_synced flipped.
        assert sorted(recorder.events) == [("add", name) for name in names]
        assert sorted(pod.metadata.name for pod in reflector.store.values()) == names
        assert all(uid == pod.metadata.uid for uid, pod in reflector.store.items())
        assert {pod.spec.scheduler_name for pod in reflector.store.values()} == {"nobody"}
        assert int(reflector.resource_version) > 0
        assert (reflector.relists, reflector.watch_restarts) == (0, 0)


async def test_watch_delivers_pod_add_update_delete(api: client.ApiClient,
                                                    namespace: str) -> None:
    core = client.CoreV1Api(api)
    recorder: Recorder[Pod] = Recorder()
    reflector = pod_reflector(api, recorder, namespace=namespace)

    async with running(reflector) as task:
        await wait_synced(reflector, task)
        await kube.create_pod(api, namespace, kube.pod_body("web", scheduler_name="nobody"))
        await recorder.wait_for(("add", "web"))
        await core.patch_namespaced_pod("web", namespace, {"metadata": {"labels": {"v": "2"}}})
        await recorder.wait_until(
            lambda: any(new.metadata.labels.get("v") == "2" for _, new in recorder.updates),
            "update carrying label v=2")
        await core.delete_namespaced_pod("web", namespace, grace_period_seconds=0)
        await recorder.wait_for(("delete", "web"))

    old, new = next((o, n) for o, n in recorder.updates if n.metadata.labels.get("v") == "2")
    assert "v" not in old.metadata.labels
    assert int(new.metadata.resource_version) > int(old.metadata.resource_version)
    assert reflector.store == {}


async def test_pod_reaching_a_terminal_phase_is_deleted_like_upstream(
    api: client.ApiClient, namespace: str
) -> None:
    """kube-scheduler watches non-terminal pods only; a finished pod leaves its view."""
    core = client.CoreV1Api(api)
    recorder: Recorder[Pod] = Recorder()
    reflector = pod_reflector(api, recorder, namespace=namespace)
    await kube.create_pod(api, namespace, kube.pod_body("job", scheduler_name="nobody"))

    async with running(reflector) as task:
        await wait_synced(reflector, task)
        await core.patch_namespaced_pod_status("job", namespace,
                                               {"status": {"phase": "Succeeded"}})
        await recorder.wait_for(("delete", "job"))

    assert recorder.events == [("add", "job"), ("delete", "job")]


async def test_watch_delivers_node_add_update_delete(api: client.ApiClient,
                                                     nodes_to_clean: list[str]) -> None:
    core = client.CoreV1Api(api)
    label = kube.unique_name("informer")
    recorder: Recorder[Node] = Recorder()
    reflector = node_reflector(api, recorder, label_selector=f"informer-test={label}")

    async with running(reflector) as task:
        await wait_synced(reflector, task)
        assert recorder.events == []
        nodes_to_clean += await kube.create_nodes(api, 1, prefix="watched", cpu="3",
                                                  labels={"informer-test": label})
        name = nodes_to_clean[0]
        await recorder.wait_for(("add", name))
        await core.patch_node(name, {"spec": {"unschedulable": True}})
        await recorder.wait_until(
            lambda: any(new.spec.unschedulable for _, new in recorder.updates),
            "update with spec.unschedulable")
        await core.delete_node(name)
        await recorder.wait_for(("delete", name))

    assert recorder.events[0] == ("add", name)
    assert reflector.decode_failures == 0
    assert reflector.store == {}


async def test_reconnects_after_apiserver_restart(
    cluster: harness.ClusterState, api: client.ApiClient, namespace: str
) -> None:
    recorder: Recorder[Pod] = Recorder()
    reflector = pod_reflector(api, recorder, namespace=namespace)
    await kube.create_pod(api, namespace, kube.pod_body("before", scheduler_name="nobody"))

    async with running(reflector) as task:
        await wait_synced(reflector, task)
        await restart_apiserver(cluster)
        async with kube.api_client(cluster) as fresh:  # the old one's connections died
            await kube.create_pod(fresh, namespace, kube.pod_body("after",
                                                                  scheduler_name="nobody"))
        await recorder.wait_for(("add", "after"), timeout=RECONNECT_SECONDS)
        assert not task.done()

    assert reflector.watch_restarts >= 1
    # "before" was delivered once: a relist after the restart found it unchanged.
    assert recorder.events.count(("add", "before")) == 1
    assert sorted(pod.metadata.name for pod in reflector.store.values()) == ["after", "before"]


async def test_expired_resource_version_relists_and_reconciles(
    cluster: harness.ClusterState, api: client.ApiClient, namespace: str
) -> None:
    """A reflector resumes from a version the restarted apiserver no longer serves (410).

    While it is stopped one pod is deleted, one created and one changed; the
    restart makes its resourceVersion too old for the new watch cache, so the
    resumed watch gets an ERROR event with code 410 and the reflector relists.
    """
    core = client.CoreV1Api(api)
    for name in ("doomed", "kept"):
        await kube.create_pod(api, namespace, kube.pod_body(name, scheduler_name="nobody"))
    recorder: Recorder[Pod] = Recorder()
    reflector = pod_reflector(api, recorder, namespace=namespace)
    async with running(reflector) as task:
        await wait_synced(reflector, task)
    # Cancellation propagates out of run(): the task ends cancelled, not returned.
    assert task.cancelled()
    stale_version = reflector.resource_version

    await core.delete_namespaced_pod("doomed", namespace, grace_period_seconds=0)
    await kube.create_pod(api, namespace, kube.pod_body("newcomer", scheduler_name="nobody"))
    await core.patch_namespaced_pod("kept", namespace, {"metadata": {"labels": {"v": "2"}}})
    await restart_apiserver(cluster)
    recorder.events.clear()

    with capture_logs() as logs:
        async with running(reflector):
            await recorder.wait_for(("delete", "doomed"), ("add", "newcomer"),
                                    ("update", "kept"), timeout=RECONNECT_SECONDS)

    assert reflector.relists == 1
    assert sorted(recorder.events) == [("add", "newcomer"), ("delete", "doomed"),
                                       ("update", "kept")]
    relist = next(entry for entry in logs if entry["event"] == "informer.relist")
    assert relist["resource"] == "pods"
    assert relist["resource_version"] == stale_version
    assert "too old resource version" in relist["reason"]
    assert sorted(pod.metadata.name for pod in reflector.store.values()) == ["kept", "newcomer"]
